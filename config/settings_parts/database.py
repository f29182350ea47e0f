"""The database connection (``DATABASES["default"]``) from ``DATABASE_URL``: PostgreSQL through psycopg 3's pool
(docs/operations/settings.md "Settings")."""

from django.core.exceptions import ImproperlyConfigured

from config.settings_parts.environment import env


def database_config(url: str) -> dict:
    config = env.db_url_config(url)
    if config["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(f"DATABASE_URL must name a PostgreSQL database, not {config['ENGINE']}")
    # Django's backend with the pool check of config/deploy/postgresql.
    config["ENGINE"] = "config.deploy.postgresql"
    if env.bool("DATABASE_POOL", default=True):
        # psycopg 3's pool keeps connections open across requests; Django requires CONN_MAX_AGE=0 with it.
        config["CONN_MAX_AGE"] = 0
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": env.int("DATABASE_POOL_MIN", default=2),
            "max_size": env.int("DATABASE_POOL_MAX", default=20),
            "timeout": env.int("DATABASE_POOL_TIMEOUT", default=10),
            # Idle connections are closed after this: a process idle for a long time reconnects fresh.
            "max_idle": env.float("DATABASE_POOL_MAX_IDLE", default=300.0),
        }
    else:
        config["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    # Every connection is checked before a request uses it, so one the server closed (a failover, a restart,
    # an idle cut) is replaced before a request meets it; config/core/dbretry.py retries the rare request
    # whose connection dies after the check. A pooled one as it leaves the pool: the check polls its socket
    # and pings only one with something to read (config/deploy/postgresql), so a sound connection costs no
    # round trip.
    config["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_POOL_CHECK", default=True)
    if env.bool("DATABASE_PREPARED_STATEMENTS", default=True):
        # Server-side binding sends each statement's text apart from its values, so psycopg prepares a
        # statement the connection has run ``prepare_threshold`` times and PostgreSQL stops planning it
        # from scratch on every request. The prepared statements live with the pooled connection. Behind
        # a transaction-pooling PgBouncer, turn this off (DATABASE_PREPARED_STATEMENTS=False).
        config.setdefault("OPTIONS", {}).update(
            {
                "server_side_binding": True,
                "prepare_threshold": env.int("DATABASE_PREPARE_THRESHOLD", default=5),
            }
        )
    return config
