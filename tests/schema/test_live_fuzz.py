"""The contract under a property-based fuzzer, as a partner's test suite would run it: the ``schemathesis``
command (the version pyproject.toml pins) against a live instance (gunicorn on a free port, on the test
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
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from tests.faults.live import database_url_of_tests, free_port
from tests.schema.fuzzing import build_world

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SECONDS = os.environ.get("FUZZ_SECONDS", "120")
SEED = os.environ.get("FUZZ_SEED", "20261128")


def _wait_until_up(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert server.poll() is None, "gunicorn exited before answering"
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture
def live_instance(transactional_db, tmp_path):
    """gunicorn serving the application on the test database (what tests write is committed, so it sees it)."""
    port = free_port()
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
        "DATABASE_POOL": "false",
    }
    log = (tmp_path / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [str(BIN / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--threads", "4", "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/healthz", server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


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
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=int(SECONDS) + 300
    )
    print(run.stdout[-6000:])
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]

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
