"""The ceiling of ``make bench``'s direct mode: a minimal Django project with no database, Django's security and
common middleware, and one view answering a list of 20 events as JSON. Served by the same gunicorn command as the
service (``gunicorn bench.bare_project.wsgi``), it is what the framework and the server cost with nothing of ours."""
