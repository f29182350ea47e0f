"""The SMTP receiver (the Procfile's ``inbound``, which `make run` starts on a port of its instance): a port already in
use stops the start with a clear message."""

from __future__ import annotations

import os
import socket
import subprocess

from tests.faults.live import BIN, ROOT


def test_a_port_in_use_stops_the_start_with_a_clear_message():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(BIN / "python"), "manage.py", "inbound_smtp"],
            cwd=ROOT,
            env={**os.environ, "INBOUND_SMTP_LISTEN": f"127.0.0.1:{port}"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"127.0.0.1:{port} is in use: another SMTP receiver" in output
    assert "INBOUND_SMTP_LISTEN" in output
