"""``python -m config.deploy.local exec``: a command run on a PostgreSQL and a Redis of its own. Plain, they are a
test run's (no fsync, no append-only file); with ``--durable`` (what ``make bench`` measures on) they run as
``make run`` starts them, with their servers' defaults: fsync, autovacuum, Redis's append-only file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.faults.live import ROOT

pytestmark = pytest.mark.slow

PROBE = """
import json, os, psycopg, redis
with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    settings = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in ("fsync", "autovacuum")}
settings["appendonly"] = redis.Redis.from_url(os.environ["REDIS_URL"]).config_get("appendonly")["appendonly"]
print(json.dumps(settings))
"""


def servers_settings(tmp_path, *options: str) -> dict:
    done = subprocess.run(  # noqa: S603 - this interpreter, the project's module
        [
            sys.executable,
            "-m",
            "config.deploy.local",
            "exec",
            *options,
            str(tmp_path),
            "--",
            sys.executable,
            "-c",
            PROBE,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_test_runs_servers_skip_what_only_a_crash_needs(tmp_path):
    assert servers_settings(tmp_path) == {"fsync": "off", "autovacuum": "on", "appendonly": "no"}


def test_durable_servers_run_with_their_defaults_as_make_run_starts_them(tmp_path):
    assert servers_settings(tmp_path, "--durable") == {"fsync": "on", "autovacuum": "on", "appendonly": "yes"}


def test_a_command_line_without_its_directory_or_separator_is_refused(tmp_path):
    for argv in (["exec", "--durable", str(tmp_path)], ["exec", str(tmp_path), "true"]):
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "config.deploy.local", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2 and "usage:" in done.stderr, done
