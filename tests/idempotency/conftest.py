"""Helpers for the Idempotency-Key tests: posting with a key, and checking a replay."""

# The orders tests' helpers and their ``row`` (10 available) and ``quote`` (2 tickets of it) fixtures.
from tests.orders.conftest import order_form, pdf_upload, post_order, quote, row  # noqa: F401

REPLAYED = "Idempotent-Replayed"


def keyed(key: str) -> dict:
    """Test-client keyword arguments that send ``Idempotency-Key: key``."""
    return {"HTTP_IDEMPOTENCY_KEY": key}


def post_order_keyed(client, form: dict, key: str):
    return client.post("/v1/orders", form, format="multipart", **keyed(key))


def assert_replay_of(first, replay) -> None:
    """``replay`` is ``first`` again: same status, same data or error, a new meta, the replay header."""
    assert replay.status_code == first.status_code, replay.content[:300]
    assert replay.headers.get(REPLAYED) == "true"
    assert first.headers.get(REPLAYED) is None
    a, b = first.json(), replay.json()
    assert {k: v for k, v in a.items() if k != "meta"} == {k: v for k, v in b.items() if k != "meta"}
    assert b["meta"]["request_id"] != a["meta"]["request_id"]
    assert b["meta"]["request_id"] == replay.headers["X-Request-ID"]
