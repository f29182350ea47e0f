"""How the service is served: the production launcher (nginx in front of gunicorn), the gunicorn configs,
the embedded default's scheduler, service checks, access-log redaction and the Redis clients of the cache
and the Celery broker."""
