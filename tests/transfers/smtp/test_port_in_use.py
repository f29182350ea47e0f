"""The SMTP receiver (the Procfile's ``inbound``, which `make run` starts on a port of its instance): a port already in
use stops the start with a clear message."""

from __future__ import annotations

import os
import signal
import socket
import subprocess

from tests.faults.live import BIN, ROOT


def receiver(smtp_port: int) -> subprocess.Popen:
    env = {**os.environ, "INBOUND_SMTP_LISTEN": f"127.0.0.1:{smtp_port}", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [str(BIN / "python"), "manage.py", "inbound_smtp"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_a_port_in_use_stops_the_start_with_a_clear_message(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        master = receiver(port)
        try:
            output, _ = master.communicate(timeout=60)
        finally:
            if master.poll() is None:
                os.killpg(master.pid, signal.SIGKILL)
    assert master.returncode == 1, output
    assert f"127.0.0.1:{port} is in use: another SMTP receiver" in output
    assert "INBOUND_SMTP_LISTEN" in output
