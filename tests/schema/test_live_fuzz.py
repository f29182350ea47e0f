"""The contract under a property-based fuzzer, as a partner's test suite would run it: the ``schemathesis``
command (the version pyproject.toml pins) against a live instance (the Procfile's web process, nginx in front of
gunicorn, on the test
database) over every operation of its ``/v1/schema``, with every check schemathesis has (status codes,
content types, response schemas and headers, positive-data acceptance, negative-data rejection, ignored
auth, use-after-free, resource availability) plus the envelope, seeded and bounded in time.

The instance's real ids, the unique Idempotency-Keys and the allow-list are tests/schema/live_hooks.py's
and tests/schema/fuzzing.py's. ``FUZZ_SECONDS`` (default 120) is the time budget; ``FUZZ_SEED`` the seed.
A new operation is fuzzed the day it is added: the run takes every operation the live schema lists, and the
test fails when one of them was never called.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from tests.faults.live import Processes, database_url_of_tests
from tests.schema.fuzzing import build_world

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SECONDS = os.environ.get("FUZZ_SECONDS", "120")
SEED = os.environ.get("FUZZ_SEED", "20261128")


@pytest.fixture
def live_instance(transactional_db, tmp_path):
    """The Procfile's web process (nginx in front of gunicorn, as in production) on the test database: what
    the test writes is committed, so the instance sees it."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url_of_tests(),
        "REDIS_URL": settings.REDIS_URL,
        # Tasks (webhook deliveries of a ping or a resend) stay in this process's memory: no worker, no network.
        "CELERY_BROKER_URL": "memory://localhost/",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "RATE_LIMIT_PER_MINUTE": "1000000",
        "TOKEN_RATE_LIMIT_PER_MINUTE": "1000000",
        "MEDIA_ROOT": str(tmp_path / "media"),
    }
    processes = Processes(tmp_path)
    try:
        yield processes.proxied_web(env)
    finally:
        for process in reversed(processes.started):
            process.kill(signal.SIGTERM)


def test_the_live_instance_holds_its_schema_under_every_check(live_instance, tmp_path):
    world = build_world()
    record = tmp_path / "operations.txt"
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.schema.live_hooks",
        "FUZZ_WORLD": json.dumps(world.as_dict()),
        "FUZZ_RECORD": str(record),
        "PYTHONPATH": str(ROOT),
        "NO_COLOR": "1",
    }
    command = [
        str(BIN / "schemathesis"), "run", f"{live_instance}/v1/schema",
        "--checks", "all",
        # Replaced by the hooks' versions, which call them and add the allow-list.
        "--exclude-checks", "positive_data_acceptance,negative_data_rejection",
        "--header", f"Authorization: Bearer {world.token}",
        "--seed", SEED, "--max-time", SECONDS, "--workers", "1",
        "--suppress-health-check", "all", "--request-timeout", "30",
    ]  # fmt: skip
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=int(SECONDS) + 300
    )
    (tmp_path / "schemathesis.txt").write_text(run.stdout + run.stderr)
    print(run.stdout[-3000:])
    failures = run.stdout.split("FAILURES", 1)[-1].split("SUMMARY", 1)[0]
    assert run.returncode == 0, failures[-30000:] + run.stderr[-5000:]

    with urllib.request.urlopen(f"{live_instance}/v1/schema") as response:
        schema = json.loads(response.read())
    listed = {
        f"{method.upper()} {path}"
        for path, methods in schema["paths"].items()
        for method in methods
        if method in ("get", "post", "put", "patch", "delete")
    }
    called = {" ".join(line.split()[:2]) for line in record.read_text().splitlines()}
    assert listed - called == set(), f"never fuzzed in {SECONDS} s: {sorted(listed - called)}"
