"""Settings for the partner service, driven by environment variables.

One program: PostgreSQL through psycopg 3's pool (``DATABASE_URL``), Redis as cache, rate-limit store and Celery
broker (``REDIS_URL``), the Celery workers, beat and the inbound receiver as processes of their own. ``make run``
starts a PostgreSQL and a Redis of its own and every role of the Procfile (config/deploy/local.py);
``DJANGO_ENV=production`` adds the production safeguards (its own keys, HTTPS, two-factor sign-in).

Every setting is assigned by its name, here or in a module of ``config/settings_parts/`` that this one imports
by name: the environment and the shape (``environment.py``), the tables no environment variable shapes much
(the apps, middleware and templates in ``project.py``, DRF and the OpenAPI schema in ``api.py``, the beat
schedule, logging), the database connection, the storages, transfer detection (``inbound.py``) and the payment
platform (``payments.py``). Tests set what they need themselves (docs/development.md "Settings in tests"); the
benchmark's hooks are in its own settings, ``bench/settings.py``.
"""

import os
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.deploy.exporter import prepare as prepare_exporter
from config.settings_parts.api import REST_FRAMEWORK, SPECTACULAR_SETTINGS  # noqa: F401 (read by Django)
from config.settings_parts.beat import (
    beat_schedule,
    inbound_beat_schedule,
    quotes_beat_schedule,
    token_sessions_beat_schedule,
)
from config.settings_parts.database import database_config
from config.settings_parts.environment import (  # noqa: F401 (read by Django)
    BASE_DIR,
    DATA_DIR,
    DJANGO_ENV,
    DJANGO_ENVIRONMENTS,
    PRODUCTION,
    env,
    required,
    required_in_production,
)
from config.settings_parts.inbound import (  # noqa: F401 (read by Django)
    ANYMAIL,
    INBOUND_CHANNELS,
    INBOUND_DNS_NAMESERVERS,
    INBOUND_DNS_TIMEOUT_SECONDS,
    INBOUND_MAX_BYTES,
    INBOUND_RAW_RETENTION_DAYS,
    INBOUND_SES_BUCKET,
    INBOUND_SES_PREFIX,
    INBOUND_SES_TOPIC_ARNS,
    INBOUND_SES_VERIFY_SIGNATURE,
    INBOUND_SMTP_LISTEN,
    INBOUND_TRUSTED_ARC_SEALERS,
    TRANSFER_FILE_PAYOUT_HOLD_HOURS,
    TRANSFER_PLATFORM_DIRS,
)
from config.settings_parts.logs import logging_config
from config.settings_parts.payments import (  # noqa: F401 (read by Django)
    PAYMENT_PLATFORM,
    PAYMENT_PLATFORM_TIMEOUT_SECONDS,
    SANDBOX_PAYOUT_PAID_AFTER_SECONDS,
    SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS,
    STRIPE_API_BASE,
    STRIPE_API_VERSION,
    STRIPE_CONNECT_BASE,
    STRIPE_CONNECT_CLIENT_ID,
    STRIPE_MAX_NETWORK_RETRIES,
    STRIPE_SECRET_KEY,
    STRIPE_WEBHOOK_MAX_BYTES,
    STRIPE_WEBHOOK_SECRET,
    STRIPE_WEBHOOK_TOLERANCE_SECONDS,
)
from config.settings_parts.project import (  # noqa: F401 (read by Django)
    AUTH_PASSWORD_VALIDATORS,
    AUTHENTICATION_BACKENDS,
    INSTALLED_APPS,
    TEMPLATES,
)
from config.settings_parts.project import MIDDLEWARE as project_middleware
from config.settings_parts.storage import storages_config

SECRET_KEY = required_in_production("SECRET_KEY", "dev-only-secret-key-not-for-production-use-0123456789")
# Earlier values of SECRET_KEY (comma-separated), still accepted for what they signed or encrypted: Django's
# sessions and password-reset links, the stored webhook signing secrets and idempotent answers, the list
# cursors. Rotation: move the old key here, set the new SECRET_KEY, drop the old one once nothing needs it.
SECRET_KEY_FALLBACKS = [key.strip() for key in env.list("SECRET_KEY_FALLBACKS", default=[]) if key.strip()]
TOKEN_SIGNING_KEY = required_in_production("TOKEN_SIGNING_KEY", "dev-only-token-signing-key")
QUOTE_ENCRYPTION_KEY = required_in_production("QUOTE_ENCRYPTION_KEY", "dev-only-quote-encryption-key")
# Older quote keys still accepted for decryption while a rotation is under way (comma-separated).
QUOTE_ENCRYPTION_OLD_KEYS = env.list("QUOTE_ENCRYPTION_OLD_KEYS", default=[])

DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = [
    host.strip()
    for host in required_in_production("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")
    if host.strip()
]
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DJANGO_ENV=production")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")

# Prometheus metrics (config/core/metrics.py): right after the route middleware (config/api/routes.py, whose
# short path for catalog reads counts them itself), so the latency covers every other middleware.
# METRICS_HTTP=False leaves it out (`make bench` measures their cost that way); /metrics still answers.
METRICS_HTTP = env.bool("METRICS_HTTP", default=True)
MIDDLEWARE = [
    *project_middleware[:1],
    *(["config.core.metrics.HttpMetricsMiddleware"] if METRICS_HTTP else []),
    *project_middleware[1:],
]
# With it, /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; without it, only loopback, unproxied.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# The Celery workers, beat and the inbound receiver serve their own /metrics on this port (set on each Procfile
# line; 0: none), bound to METRICS_BIND (loopback unless set; with METRICS_TOKEN, 0.0.0.0 for a scraper on
# another machine). Each counts into a fresh multiprocess directory of its own (config/deploy/exporter.py).
METRICS_PORT = env.int("METRICS_PORT", default=0)
METRICS_BIND = env.str("METRICS_BIND", default="127.0.0.1")
prepare_exporter(METRICS_PORT)
# Multiprocess mode: every process writes its samples there (gunicorn empties it at start). Created if missing,
# so a Celery worker given the same directory starts even before gunicorn made it.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)

# --- Sign-in security for people (admin and portal) ---------------------------------------------------------
# Throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one username from one address, that
# pair is locked out for LOGIN_LOCKOUT_MINUTES. The counts live in the shared cache (Redis in production), so
# every web process sees them.
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "config.core.two_factor.locked_out"
AXES_CLIENT_IP_CALLABLE = "config.api.ratelimit.client_ip"
AXES_DISABLE_ACCESS_LOG = True
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False
# Two-factor sign-in (config/core/two_factor.py): required for staff in production unless turned off explicitly.
ADMIN_REQUIRE_2FA = env.bool("ADMIN_REQUIRE_2FA", default=PRODUCTION)
OTP_TOTP_ISSUER = "Ticket Buy-Back"
# Nobody reads another person's authenticator key or recovery codes in the admin, whatever their permissions.
OTP_ADMIN_HIDE_SENSITIVE_DATA = True

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

# --- Database -------------------------------------------------------------------------------------
# `make run` keeps its files (its PostgreSQL and Redis, uploaded media) in DATA_DIR, the project folder unless
# set: `DATA_DIR=/tmp/demo PORT=9000 make run` serves a separate instance beside the first.
DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASE_URL = required("DATABASE_URL")
DATABASES = {"default": database_config(DATABASE_URL)}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, rate limits, Celery --------------------------------------------------------------------
REDIS_URL = required("REDIS_URL")
CACHES = {
    "default": {
        # Django's backend, reusing its redis client instead of building one per call (config/deploy/cache.py).
        "BACKEND": "config.deploy.cache.ReusingRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="ps"),
        # Short timeouts: a dead Redis must degrade a request, never hang it. The API's pipelined round trip
        # (config/api/ratelimit.py) waits on its kept connection under the kernel's timeouts of the same length.
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5, "retry_on_timeout": False},
    }
}
# Sessions, CSRF, the signed-in user, messages and django-axes run inside config.core.pages.PagesMiddleware (the
# partner API skips them), where the admin's and django-axes' checks do not look: config.core.pages checks it.
SILENCED_SYSTEM_CHECKS = [
    "admin.E408",
    "admin.E409",
    "admin.E410",
    "axes.W002",
    "security.W003",
]

RATE_LIMIT_PER_MINUTE = env.int("RATE_LIMIT_PER_MINUTE", default=600)
TOKEN_RATE_LIMIT_PER_MINUTE = env.int("TOKEN_RATE_LIMIT_PER_MINUTE", default=60)
# Failed token requests (INVALID_CREDENTIALS) one client IP may make per minute over all client_ids.
TOKEN_FAILURES_PER_IP_PER_MINUTE = env.int("TOKEN_FAILURES_PER_IP_PER_MINUTE", default=60)
# Number of reverse proxies in front of the service whose X-Forwarded-For entries are trusted.
# 0 (default): the client IP is REMOTE_ADDR and X-Forwarded-For is ignored.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
# kombu's Redis transport, reusing its client for every publish (config/deploy/broker.py); otherwise the URL's.
CELERY_BROKER_TRANSPORT = (
    "config.deploy.broker:Transport" if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else None
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = "UTC"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A dead broker must never hang a web request: connect and publish give up within about a second.
CELERY_BROKER_CONNECTION_TIMEOUT = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 1,
    "socket_timeout": 2,
    "max_retries": 0,
    "visibility_timeout": 3600,
}
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
# Transfer detection's providers add the SES bucket sweep (config/settings_parts/inbound.py).
CELERY_BEAT_SCHEDULE = {
    **beat_schedule(payouts_progress_seconds=env.float("PAYOUTS_PROGRESS_INTERVAL_SECONDS", default=60.0)),
    **inbound_beat_schedule(channels=INBOUND_CHANNELS, ses_bucket=INBOUND_SES_BUCKET),
}
# Beat runs on every host; only the one holding a lock in Redis sends (config/deploy/beat_leader.py). A beat
# whose leader died takes over within this lifetime of the lock plus a few seconds.
BEAT_LEADER_LOCK_SECONDS = env.float("BEAT_LEADER_LOCK_SECONDS", default=30.0)
CELERY_BEAT_SCHEDULER = "config.deploy.beat_leader:LeaderScheduler"
# Where beat keeps the schedule's last runs (celery's default: the working directory); `make run` keeps it in
# DATA_DIR, so two instances beside each other keep theirs apart.
CELERY_BEAT_SCHEDULE_FILENAME = env.str("CELERY_BEAT_SCHEDULE_FILENAME", default="celerybeat-schedule")

# --- Partner API ------------------------------------------------------------------------------------
ACCESS_TOKEN_TTL_SECONDS = env.int("ACCESS_TOKEN_TTL_SECONDS", default=3600)
# Each web process reads the token sessions revoked in the database at most this often, so a revocation
# holds everywhere within this bound even if Redis missed it (partners/revocation.py).
TOKEN_REVOCATION_POLL_SECONDS = env.float("TOKEN_REVOCATION_POLL_SECONDS", default=2)
# Token sessions are created in Redis and written to the database by a batched writer at most this many
# seconds later (partners/token_cache.py); each is written when issued while Redis does not answer.
TOKEN_SESSION_FLUSH_SECONDS = env.float("TOKEN_SESSION_FLUSH_SECONDS", default=2.0)
CELERY_BEAT_SCHEDULE.update(token_sessions_beat_schedule(flush_seconds=TOKEN_SESSION_FLUSH_SECONDS))
QUOTE_TTL_SECONDS = env.int("QUOTE_TTL_SECONDS", default=900)
QUOTE_RETENTION_DAYS = env.int("QUOTE_RETENTION_DAYS", default=30)
# Quotes are kept in Redis first and written to the database by a batched writer at most this many seconds
# later, or by the order that uses them if it comes first (quotes/quote_cache.py); each is written when made
# while Redis does not answer.
QUOTE_FLUSH_SECONDS = env.float("QUOTE_FLUSH_SECONDS", default=2.0)
CELERY_BEAT_SCHEDULE.update(quotes_beat_schedule(flush_seconds=QUOTE_FLUSH_SECONDS))
CATALOG_CACHE_SECONDS = env.int("CATALOG_CACHE_SECONDS", default=5)
# In-process copy of catalog answers and of the rows quotes choose from, checked against the catalog's versions on
# every read and every quote.
CATALOG_LOCAL_CACHE_SECONDS = env.float("CATALOG_LOCAL_CACHE_SECONDS", default=5)
ORDER_PDF_MAX_BYTES = 10 * 1024 * 1024
# Each order gets its own transfer mailbox at this domain (where the seller sends the tickets).
ORDER_TRANSFER_ADDRESS_DOMAIN = env.str("ORDER_TRANSFER_ADDRESS_DOMAIN", default="transfers.buyback.example")
# Transfer detection (INBOUND_*, TRANSFER_*, ANYMAIL) is read in config/settings_parts/inbound.py.
# The sweeper (every 30 s) re-enqueues an accepted order whose confirmation has not started after this many
# seconds, and retries a confirmation that started but has not finished after the stale period: a stalled
# confirmation resumes within STALE + 30 s. STALE stays above the e-mail leases (a claim: 90 s; a hand-over:
# 4 minutes, see payouts.lifecycle.seller_email) so that the first re-run can take over a dead sender's
# claim or settle its hand-over.
ORDER_CONFIRMATION_GRACE_SECONDS = env.int("ORDER_CONFIRMATION_GRACE_SECONDS", default=120)
ORDER_CONFIRMATION_STALE_SECONDS = env.int("ORDER_CONFIRMATION_STALE_SECONDS", default=300)
# How many waiting orders one confirmation task takes (payouts.lifecycle.confirmation), and how long a nudge
# trusts that the batch task it published is on its way before another order publishes one more.
ORDER_CONFIRMATION_BATCH = env.int("ORDER_CONFIRMATION_BATCH", default=50)
ORDER_CONFIRMATION_NUDGE_SECONDS = env.int("ORDER_CONFIRMATION_NUDGE_SECONDS", default=5)
# A new order's nudge publishes the batch task to start this long after (a countdown), so that the orders of a busy
# flow are confirmed in full batches rather than a few at a time; a lone order's confirmation waits this long. 0:
# at once. A full batch that left older orders waiting publishes the next one at once. 0.25 s: the worker's CPU
# per order in a busy flow about a quarter lower than at 0.1 s, the confirmation's p95 under 1 s (bench/README.md,
# 2026-11-29 and 2026-11-30).
ORDER_CONFIRMATION_GATHER_SECONDS = env.float("ORDER_CONFIRMATION_GATHER_SECONDS", default=0.25)
# The outbox: a notification whose delivery never reached the broker is published again after this grace;
# notifications are kept this many days (docs/partners/notifications-and-webhooks.md "Notifications").
NOTIFICATION_DISPATCH_GRACE_SECONDS = env.int("NOTIFICATION_DISPATCH_GRACE_SECONDS", default=60)
NOTIFICATION_RETENTION_DAYS = env.int("NOTIFICATION_RETENTION_DAYS", default=30)
# A notification's delivery message is trusted to be on its way for this long (a note in the cache, which goes
# with Redis); past it, or once Redis lost the message and the note together, the outbox publishes it again.
NOTIFICATION_REDISPATCH_SECONDS = env.int("NOTIFICATION_REDISPATCH_SECONDS", default=600)
# Notifications written one at a time (an order's creation) are delivered in batches: while a delivery task is on
# its way (for at most this long), the next ones wait in Redis for it rather than publishing one each.
NOTIFICATION_DELIVERY_NUDGE_SECONDS = env.int("NOTIFICATION_DELIVERY_NUDGE_SECONDS", default=5)
# The delivery task a notification written alone publishes takes the list this long after (a countdown): the
# notifications written meanwhile wait for it rather than publishing a task each. A busy web then publishes at
# most one delivery task per this long instead of one per order; a lone order's delivery waits this long. 0: none.
NOTIFICATION_DELIVERY_GATHER_SECONDS = env.float("NOTIFICATION_DELIVERY_GATHER_SECONDS", default=0.1)
# A POST holding an Idempotency-Key keeps it in flight (409 to retries) under a lease of this length, renewed
# every third of it while the request runs (one partners.idempotency.services.LeaseKeeper per process renews
# all its requests' leases in one statement): however long the
# request takes, a retry never runs it a second time. Once the process running it dies, the renewals stop and
# the key is free again after at most this long.
IDEMPOTENCY_LEASE_SECONDS = env.float("IDEMPOTENCY_LEASE_SECONDS", default=60.0)

# --- Webhooks (docs/partners/notifications-and-webhooks.md "Webhooks") ---------------------------------------------------------
# Plain http:// targets and targets in private, loopback or otherwise non-public networks: refused in
# production, allowed in development and tests (whose receivers listen on 127.0.0.1).
WEBHOOK_ALLOW_HTTP = env.bool("WEBHOOK_ALLOW_HTTP", default=not PRODUCTION)
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=not PRODUCTION)
# Each step of an attempt (connect, TLS, sending, each wait for the answer) times out after this...
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# ...and the whole attempt ends this long after its connect, however slowly the answer trickles in.
WEBHOOK_ATTEMPT_DEADLINE_SECONDS = env.float("WEBHOOK_ATTEMPT_DEADLINE_SECONDS", default=15.0)
# Attempts one partner may have in flight at once (over all its endpoints; 2 per endpoint): keep the
# webhooks worker's concurrency (WEBHOOK_CONCURRENCY, 8) above it, so other partners always find a worker.
WEBHOOK_PARTNER_MAX_IN_FLIGHT = env.int("WEBHOOK_PARTNER_MAX_IN_FLIGHT", default=4)
# Deliveries and their attempts are kept this long (the notifications themselves 30 days too).
WEBHOOK_RETENTION_DAYS = env.int("WEBHOOK_RETENTION_DAYS", default=30)
WEBHOOK_MAX_ENDPOINTS = 10

# --- Payment platform: PAYMENT_PLATFORM, SANDBOX_*, STRIPE_* (config/settings_parts/payments.py) ---------------

# --- Auth, sessions, security --------------------------------------------------------------------------
LOGIN_URL = "portal:login"
LOGIN_REDIRECT_URL = "portal:dashboard"
LOGOUT_REDIRECT_URL = "portal:login"
PASSWORD_RESET_TIMEOUT = 3 * 24 * 3600

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Production only: HTTPS (behind the proxy's X-Forwarded-Proto), HSTS and secure cookies; Django's defaults else.
SECURE_SSL_REDIRECT = PRODUCTION and env.bool("SECURE_SSL_REDIRECT", default=True)
# A scraper holding METRICS_TOKEN reads /metrics over plain HTTP on the network the service is bound to.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"] if PRODUCTION else []
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PRODUCTION else None
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000) if PRODUCTION else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_PRELOAD = PRODUCTION
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION

# --- I18N, static, media, storage -----------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
# The release step (python -m config.deploy.release) collects them, unless they were collected before (the image).
RELEASE_COLLECTSTATIC = env.bool("RELEASE_COLLECTSTATIC", default=True)
MEDIA_ROOT = env.path("MEDIA_ROOT", default=DATA_DIR / "media")
# Ticket PDFs are private: no MEDIA_URL is served; staff download them through the admin.
MEDIA_URL = None
# Outside production static files are served straight from the apps, no collectstatic step (`make run`).
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = DEBUG
# Static files come from the apps until collectstatic has run; silence the missing-root warning.
import warnings  # noqa: E402

warnings.filterwarnings("ignore", message="No directory at")

AWS_STORAGE_BUCKET_NAME = env.str("AWS_STORAGE_BUCKET_NAME", default="")
# Without a bucket, production needs MEDIA_SHARED=true: MEDIA_ROOT is one disk every host of the deployment reads.
MEDIA_SHARED = env.bool("MEDIA_SHARED", default=False)
STORAGES = storages_config(bucket=AWS_STORAGE_BUCKET_NAME, media_root=MEDIA_ROOT, media_shared=MEDIA_SHARED)

# Non-file request bodies above this get 413; the order PDF has its own 10 MB limit.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

# --- E-mail -------------------------------------------------------------------------------------------
# EMAIL_URL names the backend and the server: smtp+tls://user:password@host:587, consolemail://, filemail:////path.
_email = env.email_url("EMAIL_URL", default="consolemail://")
EMAIL_BACKEND = _email["EMAIL_BACKEND"]
EMAIL_HOST = _email["EMAIL_HOST"]
EMAIL_PORT = _email["EMAIL_PORT"]
EMAIL_HOST_USER = _email["EMAIL_HOST_USER"]
EMAIL_HOST_PASSWORD = _email["EMAIL_HOST_PASSWORD"]
EMAIL_USE_TLS = _email.get("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = _email.get("EMAIL_USE_SSL", False)
EMAIL_FILE_PATH = _email["EMAIL_FILE_PATH"]
# A mail server that stops answering fails a send within this many seconds per step, well inside the
# confirmation e-mail's claim lease.
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=30)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Ticket Buy-Back <no-reply@buyback.example>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Logging --------------------------------------------------------------------------------------------
LOG_FORMAT = env.str("LOG_FORMAT", default="json" if PRODUCTION else "text")
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = logging_config(log_format=LOG_FORMAT, level=LOG_LEVEL)

# --- Error reports --------------------------------------------------------------------------------------
# Sentry when SENTRY_DSN is set (config/core/sentry.py: secrets scrubbed, the request id as a tag).
SENTRY_DSN = env.str("SENTRY_DSN", default="")
if SENTRY_DSN:
    from config.core.sentry import sentry_init

    sentry_init(
        dsn=SENTRY_DSN,
        environment=env.str("SENTRY_ENVIRONMENT", default=DJANGO_ENV),
        traces_sample_rate=env.float("SENTRY_TRACES_SAMPLE_RATE", default=0.0),
    )
