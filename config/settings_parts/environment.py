"""Where every setting comes from: the environment (and a ``.env`` file beside ``manage.py``, which never
overrides a variable that is set), read through one ``env``; and which of the two shapes this process is.
Every other part, and ``config.settings``, imports these names before it reads anything."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# The service's two shapes. Anything else (a typo, "prod", "staging") would quietly run with the development
# keys and none of the production safeguards, so it stops the service here.
DJANGO_ENVIRONMENTS = ("development", "production")
DJANGO_ENV = env.str("DJANGO_ENV", default="development")
if DJANGO_ENV not in DJANGO_ENVIRONMENTS:
    raise ImproperlyConfigured(f"DJANGO_ENV must be 'development' or 'production', not {DJANGO_ENV!r}")
PRODUCTION = DJANGO_ENV == "production"

# Where `make run` keeps its PostgreSQL, Redis and uploaded files: the project folder unless set.
DATA_DIR = Path(env.str("DATA_DIR", default="") or BASE_DIR).resolve()
# While `make run` serves DATA_DIR, the addresses it chose (its PostgreSQL, Redis, SMTP receiver) are in this file
# (config/deploy/local.py): a `manage.py` command in another shell on the same DATA_DIR, with no DATABASE_URL of
# its own, reaches them.
RUN_ENVIRONMENT = DATA_DIR / "run" / "services.env"
if not PRODUCTION and not env.str("DATABASE_URL", default="") and RUN_ENVIRONMENT.exists():
    environ.Env.read_env(RUN_ENVIRONMENT, overwrite=False)


def required(name: str) -> str:
    """The variable ``name``, which every shape needs (the database, Redis): nothing starts without it."""
    value = env.str(name, default="")
    if not value.strip():
        if PRODUCTION:
            raise ImproperlyConfigured(f"{name} must be set when DJANGO_ENV=production")
        raise ImproperlyConfigured(
            f"{name} must be set: `make run` starts a PostgreSQL and a Redis of its own and sets it (a manage.py "
            "command beside a running `make run` finds them through DATA_DIR; docs/development.md)"
        )
    return value


def required_in_production(name: str, dev_default: str) -> str:
    """The variable ``name``: production refuses to start without it, development falls back to
    ``dev_default``."""
    value = env.str(name, default="")
    if value.strip():  # blank counts as missing; the value itself is kept exactly as given
        return value
    if PRODUCTION:
        raise ImproperlyConfigured(f"{name} must be set when DJANGO_ENV=production")
    return dev_default
