"""`make test`'s one pass over the whole suite, as two halves side by side (``python -m tests.suite [PYTEST ARGS]``).

The live-process drills (``tests/ops``, ``tests/faults``, ``tests/transfers/e2e``, and a few others that start
processes: ``DRILLS``) start real gunicorn, Celery workers, beat and redis-servers and spend most of their time
waiting for them; the rest of the suite is mostly
CPU. Run one after the other they add up; side by side the waits of the first overlap the work of the second. Each
half has a test database and a Redis database of its own (the drills': ``<name>_drills`` and the next Redis db
number), so they share nothing; each prints its report when it ends, and the exit status is the first failing
half's. Every test runs once, on the same PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from urllib.parse import urlsplit, urlunsplit

# The drills, and the other tests that mostly wait on processes they start (`make run`, the SMTP receiver, a
# webhooks worker), which balance the two halves.
DRILLS = (
    "tests/ops",
    "tests/faults",
    "tests/transfers/e2e",
    "tests/transfers/smtp",
    "tests/config/test_walkthrough.py",
    "tests/webhooks/test_isolation_live.py",
    "tests/webhooks/test_queue_isolation.py",
    # Two minutes of Schemathesis against a live instance: the longest test of all, and a wait on its processes.
    "tests/schema/test_live_fuzz.py",
)


def database_beside(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}{suffix}"))


def redis_beside(url: str) -> str:
    """The same Redis, the next database number."""
    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{number + 1}"))


def main(args: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest", *args]
    drills_env = {
        **os.environ,
        "DATABASE_URL": database_beside(os.environ["DATABASE_URL"], "_drills"),
        "REDIS_URL": redis_beside(os.environ["REDIS_URL"]),
    }
    halves = [
        ("live-process drills", [*pytest, *DRILLS], drills_env),
        ("the rest", [*pytest, *(f"--ignore={path}" for path in DRILLS)], dict(os.environ)),
    ]
    running = []
    for name, command, env in halves:
        log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - read back once the half has ended
        running.append((name, subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT), log))  # noqa: S603
    status = 0
    for name, process, log in running:
        code = process.wait()
        log.seek(0)
        print(f"=== {name}: {' '.join(process.args[3:])}", flush=True)
        sys.stdout.write(log.read())
        print(f"=== {name}: exit status {code}", flush=True)
        status = status or code
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
