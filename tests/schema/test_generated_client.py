"""A partner's generated client: docs/partners/getting-started.md "A generated client" as printed there, the
shell block generating a client with openapi-python-client from the published docs/partners/openapi.json and the
Python block running the test-mode flow through it (token, events, sections, rows, quote, multipart order, advance,
the order read back as `ticket_received`) against the service over HTTP."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.config.test_walkthrough import shell_blocks
from tests.portal.test_browser import live_server  # noqa: F401  (pytest-django's live server, with its MEDIA_URL)

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs/partners/getting-started.md"
VENV_BIN = Path(sys.executable).parent


def python_blocks(document: Path, section: str) -> list[str]:
    """The ```python blocks of a section (its heading up to the next heading of its level), as printed there."""
    text = document.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.fixture
def catalog(transactional_db):
    event = EventFactory(name="The Skyline Sessions: Live", starts_at=timezone.now() + timedelta(days=30))
    section = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    for name in ("A", "B", "C"):
        RowFactory(section=section, name=name, available_quantity=8, offer_price=Decimal("95.00"))
    return event


def test_a_client_generated_from_the_published_file_runs_the_test_mode_flow(tmp_path, live_server, catalog):  # noqa: F811
    from orders.models import Order
    from partners import services
    from payouts.services.methods import payment_methods_create_sandbox

    issued = services.partner_create(name="Generated Client Co", contact_email="dev@generated.example")
    payment_methods_create_sandbox(partner=issued.partner)

    shutil.copy(ROOT / "docs" / "partners" / "openapi.json", tmp_path / "openapi.json")
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
    (generate,) = shell_blocks(GUIDE, "A generated client")
    made = subprocess.run(
        ["bash", "-c", f"set -eo pipefail\n{generate}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert "Warning" not in made.stdout + made.stderr, made.stdout + made.stderr
    assert (tmp_path / "partner_api_client" / "api" / "authentication" / "auth_token.py").is_file()

    (flow,) = python_blocks(GUIDE, "A generated client")
    env.update(
        API=f"{live_server.url}/v1",
        CLIENT_ID=issued.test_client_id,
        CLIENT_SECRET=issued.test_client_secret,
        PYTHONPATH=str(tmp_path),
    )
    ran = subprocess.run(
        [sys.executable, "-c", flow],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    created, received = (line.split() for line in ran.stdout.splitlines())
    assert created[1:] == ["accepted"]
    assert received == [created[0], "ticket_received", "detected"]
    order = Order.objects.get(order_id=created[0])
    assert (order.status, order.livemode, order.quantity) == ("ticket_received", False, 2)
