"""The WSGI application (``gunicorn config.wsgi``).

Wrapped so that the request line, path, query string and referer the server writes to its access log
(``--access-logfile``) carry no credential, whatever gunicorn configuration runs it (config/core/redaction.py).
"""

import os

from django.core.wsgi import get_wsgi_application

from config.core.redaction import RedactLogEnviron

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = RedactLogEnviron(get_wsgi_application())
