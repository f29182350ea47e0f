"""`make test`'s one pass over the whole suite, as four parts side by side (``python -m tests.suite [PYTEST ARGS]``).

The live-process drills (``DRILLS``: ``tests/ops``, ``tests/faults``, ``tests/transfers/e2e`` and the other tests
that start real gunicorn, Celery workers, beat and redis-servers) spend most of their time waiting for those
processes; the rest of the suite is mostly CPU. Run one after the other they add up; side by side the waits of
the drills overlap the work of the rest. Each kind is split in two parts of about equal time (``PARTS``), so
the longest part, not the sum, sets how long the pass takes. Each part has a test database and a Redis database
of its own (the first part the configured ones, the others ``<name><suffix>`` and the next Redis db numbers), so
they share nothing; each prints its report when it ends, and the exit status is the first failing part's.
Every test runs once, on the same PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from urllib.parse import urlsplit, urlunsplit

# The drills, in two parts of seven to eight minutes each on a 2-core machine (their longest tests: two minutes of
# Schemathesis against a live instance, `make run` served and restarted, the beat leader's take-over).
DRILLS_FIRST = (
    "tests/schema/test_live_fuzz.py",
    "tests/config/test_walkthrough.py",
    "tests/webhooks/test_isolation_live.py",
    "tests/webhooks/test_queue_isolation.py",
    "tests/transfers/smtp",
    "tests/transfers/e2e",
)
DRILLS_SECOND = ("tests/ops", "tests/faults")
DRILLS = DRILLS_FIRST + DRILLS_SECOND

# The rest, in two parts of about equal time; a folder of tests not named here runs in the first.
REST_SECOND = (
    "tests/payouts",
    "tests/config",
    "tests/webhooks",
    "tests/partners",
    "tests/hostile",
    "tests/schema",
    "tests/portal",
)

# (name, its pytest selection, the suffix of its test database's name; its Redis db is the configured one plus its
# index)
PARTS = (
    ("the rest, first part", [f"--ignore={path}" for path in (*DRILLS, *REST_SECOND)], ""),
    (
        "the rest, second part",
        [*(f"--ignore={path}" for path in DRILLS if path.startswith(REST_SECOND)), *REST_SECOND],
        "_rest2",
    ),
    ("live-process drills, first part", list(DRILLS_FIRST), "_drills"),
    ("live-process drills, second part", list(DRILLS_SECOND), "_drills2"),
)


def database_beside(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}{suffix}"))


def redis_beside(url: str, step: int = 1) -> str:
    """The same Redis, the database ``step`` numbers on."""
    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{number + step}"))


def main(args: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest", *args]
    running = []
    for index, (name, selection, suffix) in enumerate(PARTS):
        env = dict(os.environ)
        if index:
            env["DATABASE_URL"] = database_beside(os.environ["DATABASE_URL"], suffix)
            env["REDIS_URL"] = redis_beside(os.environ["REDIS_URL"], index)
        command = [*pytest, *selection]
        log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - read back once the part has ended
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
