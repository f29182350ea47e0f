"""`make run` end to end, as a new user meets it: the service started by the Makefile itself (a free port, a
temporary DATA_DIR), the credentials it prints, and the shell blocks of README "The partner flow" and of
docs/partners/integrating.md "Integrating" (every block of that page) run with bash exactly as printed there, after the `export` line `make run` printed. Then a second
`make run` on the same data: nothing rotated, and the commands it prints make a new pair. Meanwhile a `make run`
on another DATA_DIR and PORT serves beside it, and each stops on Ctrl-C (SIGINT to its process group) with
nothing of it left running.

Slow (`make run` starts its own PostgreSQL and Redis and every role of the Procfile); it starts its own server
and needs no test database.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from tests.faults.live import ROOT, free_port, http, wait_for

pytestmark = pytest.mark.slow

README = ROOT / "README.md"
INTEGRATING = ROOT / "docs/partners/integrating.md"
# Settings the tests run with that a user's `make run` never sees.
_NOT_INHERITED = (
    "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_ENV", "INBOUND_SMTP_LISTEN",
    "DJANGO_SETTINGS_MODULE", "MEDIA_ROOT", "STATIC_ROOT", "PUBLIC_BASE_URL", "MAKEFLAGS", "MAKELEVEL", "MFLAGS",
)  # fmt: skip


@dataclass
class MakeRun:
    """One `make run` in its own process group, its output collected as it comes."""

    popen: subprocess.Popen
    port: int
    data_dir: Path
    lines: list[str] = field(default_factory=list)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def collect(self) -> None:
        for line in self.popen.stdout:
            self.lines.append(line)

    @property
    def services(self) -> dict[str, str]:
        """The addresses this instance chose (DATA_DIR/run/services.env, while it runs)."""
        lines = (self.data_dir / "run" / "services.env").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def stop(self) -> None:
        """Ctrl-C, as a terminal sends it (SIGINT to the foreground process group); SIGKILL only if that fails."""
        for sig in (signal.SIGINT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=60)
                return


def left_running(data_dir: Path) -> list[str]:
    """The processes that still belong to the instance of ``data_dir``: its roles (DATA_DIR in their
    environment), its PostgreSQL and its Redis (the folder on their command line)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"DATA_DIR={data_dir}".encode() in environ or str(data_dir) in cmdline:
            found.append(f"{proc.name} {cmdline}")
    return found


def make_run(data_dir: Path, *, attempts: int = 3) -> MakeRun:
    """``make run`` on ``data_dir`` and a free port, once it serves. The port is free when chosen, but it is one of
    the kernel's ephemeral ports: a connection of another test running meanwhile can take it before nginx binds
    it, and then ``make run`` stops, saying so. Only that start is tried again, on another port."""
    for attempt in range(1, attempts + 1):
        run = _make_run_once(data_dir)
        if run.popen.poll() is None:
            return run
        if attempt == attempts or "Address already in use" not in run.output:
            pytest.fail(f"make run did not serve on port {run.port}:\n{run.output}")
    raise AssertionError("unreachable")


def _make_run_once(data_dir: Path) -> MakeRun:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env["DATA_DIR"] = str(data_dir)
    popen = subprocess.Popen(
        # The suite runs in the installed virtualenv (`make test` installs first): a pyproject.toml newer than
        # its stamp must not start a reinstall in the middle of a test.
        [
            "make",
            "--no-print-directory",
            "--old-file=.venv/.installed",
            "run",
            f"PORT={port}",
            "HOST=127.0.0.1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    run = MakeRun(popen, port, data_dir)
    collector = threading.Thread(target=run.collect, daemon=True)
    collector.start()
    up = wait_for(
        lambda: popen.poll() is not None or _answers(f"http://127.0.0.1:{port}/readyz"),
        timeout=240,
        interval=0.5,
    )
    if not up and popen.poll() is None:
        run.stop()
        pytest.fail(f"make run did not serve on port {port}:\n{run.output}")
    if popen.poll() is not None:
        run.stop()  # it stopped by itself: the caller reads why, once every line is collected
        collector.join(timeout=30)
    return run


def _answers(url: str) -> bool:
    try:
        return http("GET", url, timeout=2).status == 200
    except OSError:
        return False


def shell_blocks(document: Path, section: str | None = None) -> list[str]:
    """The ```sh blocks of a document, or of one of its sections (its heading up to the next heading of the
    same or a higher level), as printed there."""
    lines = document.read_text().splitlines(keepends=True)
    if section is not None:
        # Headings outside the fences only: a shell comment `# …` in a block is none.
        fenced, headings = False, []
        for number, line in enumerate(lines):
            fenced ^= line.startswith("```")
            heading = None if fenced else re.match(r"(#+) (.*)\n", line)
            if heading:
                headings.append((number, len(heading.group(1)), heading.group(2)))
        starts = [(number, level) for number, level, name in headings if name == section]
        assert starts, f"no section {section!r} in {document.name}"
        ((start, level),) = starts
        ends = [number for number, other, _ in headings if number > start and other <= level]
        lines = lines[start + 1 : ends[0] if ends else len(lines)]
    blocks = re.findall(r"^```sh\n(.*?)^```$", "".join(lines), flags=re.S | re.M)
    assert blocks, f"no shell block in {document.name} {section or ''}"
    return blocks


def bash(export_line: str, block: str) -> subprocess.CompletedProcess:
    """A documented block in a fresh bash, after the `export` line `make run` printed; the first failing command
    (or pipe) stops it."""
    script = f"set -eo pipefail\n{export_line}\n{block}"
    env = {k: v for k, v in os.environ.items() if k not in ("API", "CLIENT_ID", "CLIENT_SECRET", "TOKEN")}
    return subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def token(api: str, client_id: str, client_secret: str):
    return http(
        "POST",
        f"{api}/auth/token",
        json_body={
            "client_id": client_id,
            "client_secret": client_secret,
            "grant_type": "client_credentials",
        },
    )


def printed_pairs(output: str) -> dict[str, tuple[str, str]]:
    pairs = dict(
        (kind, (client_id, secret))
        for kind, client_id, secret in re.findall(
            r"^\s*(live|test-mode) pair:\s+client_id (\S+)\s+client_secret (\S+)$", output, flags=re.M
        )
    )
    assert set(pairs) == {"live", "test-mode"}, output
    return pairs


@pytest.fixture
def data_root():
    """A folder for the instances' DATA_DIRs outside pytest's own: a pytest starting meanwhile (this machine's
    other runs) closes ``/tmp/pytest-of-<user>`` to other users, and the servers run as ``embedded_postgres``."""
    folder = Path(tempfile.mkdtemp(prefix="partner-walkthrough-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_make_run_serves_the_documented_walkthroughs_as_printed_and_a_restart_rotates_nothing(data_root):
    tmp_path = data_root
    data_dir = tmp_path / "data"
    repo_data = [ROOT / name for name in ("postgres", "redis", "run")]
    repo_data_before = [path.exists() for path in repo_data]

    first = make_run(data_dir)
    try:
        beside = make_run(tmp_path / "beside")
    except BaseException:
        first.stop()
        raise
    try:
        # Two instances side by side, each on its own port, PostgreSQL, Redis and SMTP receiver.
        assert _answers(f"http://127.0.0.1:{beside.port}/readyz")
        assert len({*first.services.values()} & {*beside.services.values()}) == 0
        # A second `make run` on a DATA_DIR already served stops at once, touching nothing of the first.
        again = subprocess.run(
            ["make", "--no-print-directory", "--old-file=.venv/.installed", "run", f"PORT={free_port()}"],
            cwd=ROOT,
            env={
                **{k: v for k, v in os.environ.items() if k not in _NOT_INHERITED},
                "DATA_DIR": str(data_dir),
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode != 0 and f"Another `make run` serves {data_dir}" in again.stdout, again.stdout
        assert _answers(f"http://127.0.0.1:{first.port}/readyz")
    finally:
        beside.stop()
    assert beside.popen.returncode is not None and not left_running(beside.data_dir)
    try:
        pairs = printed_pairs(first.output)
        assert pairs["live"][0].startswith("cli_") and pairs["live"][1].startswith("sec_")
        assert pairs["test-mode"][0].startswith("cli_test_") and pairs["test-mode"][1].startswith("sec_test_")
        assert re.search(r"^Admin login: admin / \S+ {2}\(shown only now\)$", first.output, flags=re.M)
        assert re.search(
            r"^Portal login for the demo partner: \S+ / \S+ {2}\(shown only now\)$", first.output, re.M
        )
        # The first export line is the test-mode pair's, for the walk-through.
        export_line = re.search(r"^\s*(export API=.*)$", first.output, flags=re.M).group(1)
        api = f"http://127.0.0.1:{first.port}/v1"
        assert export_line == (
            f"export API={api} CLIENT_ID={pairs['test-mode'][0]} CLIENT_SECRET={shlex.quote(pairs['test-mode'][1])}"
        )

        (flow,) = shell_blocks(README, "The partner flow")
        result = bash(export_line, flow)
        assert result.returncode == 0, result.stdout + result.stderr
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        assert answers[0]["data"]["results"][0]["event_name"] == "The Skyline Sessions: Live"
        order = answers[-3]["data"]
        assert (order["status"], order["livemode"], order["row_name"], order["quantity"]) == (
            "accepted",
            False,
            "B",
            2,
        ), answers[-3]
        # The simulated transfer went through the SMTP receiver `make run` started, and moved the order.
        sent = answers[-2]["data"]
        assert (sent["order_id"], sent["variant"], sent["kind"]) == (
            order["order_id"],
            "match",
            "transfer_offer",
        )
        received = answers[-1]["data"]
        assert received["status"] == "ticket_received", received
        assert received["transfer"]["source"] == "email" and received["transfer"]["state"] == "detected"
        assert received["transfer"]["quantity_detected"] == 2

        # The README's forged transfer, on a second order made the same way: the order stays, a case waits.
        ordering = flow[: flow.index('echo "$ORDER"\n') + len('echo "$ORDER"\n')]
        # In another shell on the same DATA_DIR, manage.py reaches the instance's database and SMTP receiver.
        send = (
            f"env -u DATABASE_URL -u REDIS_URL -u CELERY_BROKER_URL -u INBOUND_SMTP_LISTEN DATA_DIR={data_dir} "
            ".venv/bin/python manage.py send_test_transfer "
            '$(echo "$ORDER" | field data.order_id) --variant forged'
        )
        result = bash(export_line, ordering + send)
        assert result.returncode == 0, result.stdout + result.stderr
        (forged_id,) = [
            json.loads(line)["data"]["order_id"]
            for line in result.stdout.splitlines()
            if line.startswith('{"success":true,"data":{"order_id"')
        ]

        def cases() -> list[tuple]:
            with psycopg.connect(first.services["DATABASE_URL"]) as db:
                return db.execute(
                    "SELECT c.kind, c.state, o.status, coalesce(p.state, 'none') FROM transfers_transfercase c "
                    "JOIN orders_order o ON o.id = c.order_id "
                    "LEFT JOIN transfers_transferprogress p ON p.order_id = o.id WHERE o.order_id = %s",
                    (forged_id,),
                ).fetchall()

        # The worker reads the mail within moments of its arrival.
        expected = [("unverified", "open", "awaiting_transfer", "none")]
        assert wait_for(lambda: cases() == expected, timeout=60), (cases(), result.stdout)

        (walk,) = shell_blocks(INTEGRATING)
        result = bash(export_line, walk)
        assert result.returncode == 0, result.stdout + result.stderr
        lines = result.stdout.splitlines()
        assert "paid" in lines, result.stdout  # step 5: the advance's answer
        feed = [line.split()[1:] for line in lines if line.startswith("ntf_")]
        assert feed[:8] == [
            ["order.created", "accepted"],
            ["order.status_changed", "awaiting_transfer"],
            ["order.transfer_updated", "awaiting_transfer"],  # detected, then the status follows
            ["order.status_changed", "ticket_received"],
            ["order.transfer_updated", "ticket_received"],  # accepted on the platform, before the payout
            ["order.status_changed", "payout_in_process"],
            ["order.status_changed", "scheduled"],
            ["order.status_changed", "paid"],
        ], result.stdout

        # What the walk-through made, seen through the API: a paid test-mode order with its reference.
        reply = token(api, *pairs["test-mode"])
        assert reply.status == 200, reply.body
        bearer = {"Authorization": f"Bearer {reply.body['data']['access_token']}"}
        orders = http("GET", f"{api}/orders?limit=100", headers=bearer).body["data"]["results"]
        walked = [o for o in orders if o["partner_reference"] == "A-10042"]
        assert [(o["status"], o["livemode"]) for o in walked] == [("paid", False)], orders
    finally:
        first.stop()

    assert first.popen.returncode is not None and not left_running(data_dir)
    assert (data_dir / "postgres" / "data" / "PG_VERSION").exists(), "make run kept its database in DATA_DIR"
    assert not (data_dir / "run" / "services.env").exists()
    assert [path.exists() for path in repo_data] == repo_data_before

    second = make_run(data_dir)
    try:
        api = f"http://127.0.0.1:{second.port}/v1"
        assert "client_secret sec_" not in second.output and "shown only now" not in second.output
        # Both pairs of the first run still get a token: nothing was rotated.
        for client_id, secret in pairs.values():
            reply = token(api, client_id, secret)
            assert reply.status == 200, reply.body
        # It names the command that makes a new pair, and how to set new passwords.
        live_id, test_id = pairs["live"][0], pairs["test-mode"][0]
        rotate = re.search(
            rf"^\s*DATA_DIR={data_dir} (\S+) manage\.py rotate_credentials {test_id} --json$",
            second.output,
            re.M,
        )
        assert rotate, second.output
        assert re.search(rf"manage\.py rotate_credentials {live_id} --json$", second.output, flags=re.M)
        assert "manage.py changepassword admin" in second.output
        assert "manage.py changepassword demo@partner.example" in second.output
        assert "/portal/password-reset" in second.output
        # The printed command works, on the same data: a new test secret gets a token, the old one no more.
        python = rotate.group(1)
        env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        env["DATA_DIR"] = str(data_dir)
        done = subprocess.run(
            [python, "manage.py", "rotate_credentials", test_id, "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        new_secret = re.search(r'"client_secret": "(sec_test_[^"]+)"', done.stdout).group(1)
        assert token(api, test_id, new_secret).status == 200
        assert token(api, test_id, pairs["test-mode"][1]).status == 401
        assert token(api, live_id, pairs["live"][1]).status == 200
    finally:
        second.stop()
    assert not left_running(data_dir)
