"""How the service is served: the production launcher (nginx in front of gunicorn), the gunicorn configs,
the one-machine launcher of `make run` (its own PostgreSQL and Redis), service checks, the metrics exporter of the
processes that are not web processes and the Redis clients of the cache and the Celery broker."""
