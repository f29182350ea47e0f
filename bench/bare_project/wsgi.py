"""``gunicorn bench.bare_project.wsgi``: the bare project's WSGI application."""

import os

from django.core.wsgi import get_wsgi_application

# Set, not defaulted: the bench starts it with the service's environment, which names the service's settings.
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.bare_project.settings"

application = get_wsgi_application()
