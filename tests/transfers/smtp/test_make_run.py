"""`make run`'s SMTP receiver (config/deploy/gunicorn_embedded.py): gunicorn's master starts
``manage.py inbound_smtp`` beside the web server, the receiver dies with it even when the master is killed, and a
port already in use stops the start with a clear message."""

from __future__ import annotations

import os
import signal
import smtplib
import socket
import subprocess

from tests.faults.live import BIN, ROOT, free_port, wait_for

_NOT_INHERITED = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "EMBEDDED_PASS", "DJANGO_ENV")


def gunicorn(tmp_path, smtp_port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env.update(DATA_DIR=str(tmp_path), INBOUND_SMTP_LISTEN=f"127.0.0.1:{smtp_port}", PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "-c",
            "config/deploy/gunicorn_embedded.py",
            "--bind",
            f"127.0.0.1:{free_port()}",
            "--workers",
            "1",
            "--threads",
            "2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def answers(port: int) -> bool:
    try:
        smtplib.SMTP("127.0.0.1", port, timeout=2).quit()
    except OSError:
        return False
    return True


def test_the_receiver_runs_beside_gunicorn_and_dies_with_its_master(tmp_path):
    port = free_port()
    master = gunicorn(tmp_path, port)
    try:
        assert wait_for(lambda: answers(port), timeout=60), master.poll()
    finally:
        master.send_signal(signal.SIGKILL)  # not even a chance to stop it: the kernel does
        master.wait(timeout=20)
    assert wait_for(lambda: not answers(port), timeout=20)


def test_a_port_in_use_stops_the_start_with_a_clear_message(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        master = gunicorn(tmp_path, port)
        try:
            output, _ = master.communicate(timeout=60)
        finally:
            if master.poll() is None:
                os.killpg(master.pid, signal.SIGKILL)
    assert master.returncode == 1, output
    assert f"127.0.0.1:{port} is in use: another SMTP receiver" in output
    assert "INBOUND_SMTP_LISTEN" in output
