"""``python -m config.deploy.check_services``: fail loudly when PostgreSQL or Redis is not answering."""

import os
import sys

HELP = {
    "postgres": "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
    "redis": (
        'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no '
        "--dir /var/lib/redis --logfile /var/log/redis/ci.log"
    ),
}


def main() -> int:
    failures = []
    database_url = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://")):
        failures.append(("postgres", f"DATABASE_URL must point at PostgreSQL, got {database_url!r}"))
    else:
        import psycopg

        conninfo = database_url.rsplit("/", 1)[0] + "/postgres"
        try:
            with psycopg.connect(conninfo, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
        except Exception as exc:
            failures.append(("postgres", f"PostgreSQL at {conninfo} is not answering: {exc}"))
    if not redis_url:
        failures.append(("redis", "REDIS_URL is not set"))
    else:
        import redis

        try:
            redis.Redis.from_url(redis_url, socket_connect_timeout=2).ping()
        except Exception as exc:
            failures.append(("redis", f"Redis at {redis_url} is not answering: {exc}"))
    for name, message in failures:
        print(f"ERROR: {message}\n  start it with: {HELP[name]}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
