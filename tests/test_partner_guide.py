"""The partner guide (docs/partners/) covers what the code can send, and only what a partner sees: every notification
type, error code, order status, transfer state, status reason and VALIDATION_ERROR issue the code has is written
in it; the index links every page; no page names a server setting or a piece of the service's machinery."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from config.api import errors
from config.api.exceptions import _ISSUE_WORDS
from orders.models import Notification, Order
from orders.outbox import STATUS_REASON_CODES, TRANSFER_REASON_CODES

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "partners"
SOURCES = ("config", "partners", "catalog", "quotes", "orders", "payouts")


def page(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def whole_guide() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(GUIDE.glob("*.md")))


def missing(values, text: str) -> list[str]:
    """The values not written as code (`value`) in ``text``."""
    return sorted(value for value in set(values) if f"`{value}`" not in text)


def issue_words_of_the_code() -> set[str]:
    """The ``issue`` words the code can put in a VALIDATION_ERROR: the folded DRF codes and every literal."""
    words = set(_ISSUE_WORDS.values())
    literal = re.compile(r"""\bissue["']?\s*(?::\s*str\s*)?[:=]\s*["']([a-z_]+)["']""")
    for top in SOURCES:
        for path in (ROOT / top).rglob("*.py"):
            if "migrations" not in path.parts:
                words.update(literal.findall(path.read_text(encoding="utf-8")))
    return words


def test_every_error_code_is_in_the_error_codes_page_with_its_status():
    text = page("docs/partners/errors.md")
    codes = {cls.code: cls.status for cls in errors.all_error_classes()}
    assert len(codes) >= 35
    assert missing(codes, text) == []
    # The table rows give the status beside the code; the documented additions give it in parentheses.
    for code, status in codes.items():
        assert re.search(rf"`{code}`(?: \| {status} \|| \({status}[,)])", text), (code, status)


def test_every_notification_type_is_in_the_guide():
    assert missing(Notification.Type.values, page("docs/partners/notifications-and-webhooks.md")) == []


def test_every_order_status_and_transfer_state_is_in_the_orders_page():
    text = page("docs/partners/orders.md")
    assert missing(Order.Status.values, text) == []
    assert missing(Order.TransferState.values, text) == []
    assert missing(Order.TransferSource.values, text) == []


def test_every_reason_is_in_the_notifications_page():
    text = page("docs/partners/notifications-and-webhooks.md")
    assert missing(STATUS_REASON_CODES, text) == []
    assert missing(TRANSFER_REASON_CODES, text) == []


def test_every_validation_issue_is_in_the_conventions_page():
    words = issue_words_of_the_code()
    assert {"required", "too_many_fields", "too_many_endpoints", "not_allowed", "unresolvable"} <= words
    assert missing(words, page("docs/partners/conventions.md")) == []


def test_a_value_the_guide_lacks_is_found():
    assert missing(["order.created", "order.refunded"], whole_guide()) == ["order.refunded"]


def test_the_index_links_every_page_of_the_guide():
    index = page("docs/partners/index.md")
    linked = set(re.findall(r"\]\(([\w-]+\.(?:md|json))[)#]", index))
    assert {path.name for path in GUIDE.glob("*.md") if path.stem != "index"} <= linked
    assert "openapi.json" in linked


# Words of the service's machinery: how it runs is the operators' guide's business, never a partner's.
MACHINERY = re.compile(
    r"\b(gunicorn|nginx|redis|celery|postgres(?:ql)?|sqlite|django|whitenoise|worker process|web process|"
    r"make run|manage\.py|DJANGO_ENV)\b",
    re.IGNORECASE,
)
SETTING = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")


def named_internals(text: str) -> list[str]:
    found = [match.group(0) for match in MACHINERY.finditer(text)]
    found += [name for name in SETTING.findall(text) if hasattr(settings, name)]
    return found


@pytest.mark.parametrize("name", sorted(path.name for path in GUIDE.glob("*.md")))
def test_no_partner_page_names_a_server_setting_or_the_machinery(name):
    assert named_internals((GUIDE / name).read_text(encoding="utf-8")) == []


def test_the_published_openapi_file_names_no_server_setting_or_the_machinery():
    assert named_internals(page("docs/partners/openapi.json")) == []


def test_the_internals_check_finds_settings_and_machinery():
    assert named_internals("kept `CATALOG_CACHE_SECONDS` in Redis; `QUOTE_NOT_FOUND`; behind nginx") == [
        "Redis",
        "nginx",
        "CATALOG_CACHE_SECONDS",
    ]
