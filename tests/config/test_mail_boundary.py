"""A templated e-mail's multipart boundary is drawn by the service (config/core/mime.py ``boundary_for``, for a
message of another shape through config/core/mail.py ``boundaries_set``): random, never a text that one of the
message's parts holds, and the message reads back part for part."""

import email
from email import policy

from config.core import mime
from config.core.mail import TemplatedMessage

BODY = "Hello Ana,\n\nYour tickets are sold.\n"
HTML = "<p>Hello Ana,</p><p>Your tickets are sold.</p>\n"


def _message(body: str = BODY, html: str = HTML) -> TemplatedMessage:
    message = TemplatedMessage(subject="Order ord_1 confirmed", body=body, to=["ana@example.com"])
    message.attach_alternative(html, "text/html")
    return message


def test_the_message_reads_back_part_for_part_under_a_random_boundary():
    written = _message().message().as_bytes()
    parsed = email.message_from_bytes(written, policy=policy.default)
    boundary = parsed.get_boundary()
    assert boundary.startswith("=" * 15) and boundary.endswith("==") and len(boundary) == 15 + 32 + 2
    assert [part.get_content_type() for part in parsed.iter_parts()] == ["text/plain", "text/html"]
    assert [part.get_content() for part in parsed.iter_parts()] == [BODY, HTML]
    assert _message().message().get_boundary() != _message().message().get_boundary()


def test_a_boundary_that_a_part_holds_is_drawn_again(monkeypatch):
    taken = "a" * 32
    draws = iter([taken, "b" * 32])
    monkeypatch.setattr(mime.secrets, "token_hex", lambda n: next(draws))
    body = f"A seller's text that happens to hold ==============={taken}== on a line.\n"
    written = _message(body=body).message()
    assert written.get_boundary() == f"==============={'b' * 32}=="
    parsed = email.message_from_bytes(written.as_bytes(), policy=policy.default)
    assert [part.get_content() for part in parsed.iter_parts()] == [body, HTML]


def test_the_boundary_is_written_as_set_and_the_same_on_every_write():
    written = _message().message()
    boundary = written.get_boundary()
    first, second = written.as_bytes(), written.as_bytes()
    assert first == second
    assert first.count(f"--{boundary}\n".encode()) == 2 and f"--{boundary}--".encode() in first
