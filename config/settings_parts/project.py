"""The tables of the Django project itself: the installed apps, the middleware in its order, the
authentication backends, the templates and the password rules. No environment variable changes them (the
HTTP metrics middleware, right after the route middleware unless ``METRICS_HTTP=False``, is added in
``config.settings``)."""

from pathlib import Path

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.humanize",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "axes",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "storages",
    "config.core",
    "partners",
    "partners.idempotency",
    "catalog",
    "quotes",
    "orders",
    "orders.webhooks",
    "orders.transfers",
    "anymail",
    "payouts",
    "payouts.sandbox",
    "payouts.backoffice",
]

MIDDLEWARE = [
    # First: a catalog read, answered from stored bytes, runs what it needs of the rest in one place and skips
    # the others, chosen by its route (config/api/routes.py); every other request goes on down this list.
    "config.api.routes.RouteMiddleware",
    "config.api.middleware.RequestIdMiddleware",
    # Reads Transfer-Encoding: chunked bodies (gunicorn without nginx in front), which Django sees as empty.
    "config.api.middleware.ChunkedBodyMiddleware",
    # Replays, once, a request whose database connection died before it wrote anything.
    "config.core.dbretry.RetryOnLostConnectionMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.api.middleware.ApiBodyLimitMiddleware",
    # Stores the answer of a POST that claimed an Idempotency-Key (the claim: IdempotencyGate below).
    "partners.idempotency.gate.IdempotencyMiddleware",
    # Django's, but a 304 without a Content-Length of 0.
    "config.api.middleware.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # The pages' own, which the partner API skips (config/core/pages.py): sessions, CSRF, the signed-in user,
    # two-factor sign-in, messages and, last, django-axes answering a locked-out sign-in with its page.
    "config.core.pages.PagesMiddleware",
]

# django-axes counts failed sign-ins first (see the sign-in security settings in ``config.settings``).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).resolve().parent.parent.parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
