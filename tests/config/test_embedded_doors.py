"""Small doors of the embedded default: no kombu warning on the first task publish, and a favicon."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PUBLISH = """
import django
django.setup()
from config.celery import app

@app.task(name="probe.noop")
def noop():
    return "ran"

print("result:", noop.delay().get())
"""


@pytest.mark.parametrize("broker", [None, "memory://", "memory:///"])
def test_the_first_task_publish_of_the_embedded_default_logs_no_kombu_warning(tmp_path, broker):
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/embedded.sqlite3",
        "PYTHONPATH": str(ROOT),
    }
    if broker is not None:
        env["CELERY_BROKER_URL"] = broker
    done = subprocess.run(  # noqa: S603 - this interpreter, our own script
        [sys.executable, "-c", PUBLISH], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "result: ran" in done.stdout  # the task was published and ran in-process
    assert "No hostname was supplied" not in output
    assert "kombu" not in output, output


@pytest.mark.django_db
def test_favicon_is_an_icon_every_page_links(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert "max-age" in response["Cache-Control"]
    for page in ("/", "/portal/login", "/no-such-page"):
        html = client.get(page).content.decode()
        assert '<link rel="icon" href="/favicon.ico"' in html, page
