"""A templated e-mail is written with one-line headers as they are (config/core/mail.py): the same bytes as
Python's ``compat32`` policy, which Django's messages use, for every header, folded or not."""

import random
import string
from email import policy

import pytest
from django.core import mail

from config.core.mail import ONE_LINE_HEADERS, TemplatedMessage, send_templated_mail


def _both(message: TemplatedMessage, linesep: str) -> tuple[bytes, bytes]:
    written = message.message()
    ours = written.as_bytes(linesep=linesep)  # sets the multipart boundary, which the second pass reuses
    written.policy = policy.compat32
    return ours, written.as_bytes(linesep=linesep)


SUBJECTS = [
    "Your tickets for Harbor Lights Tour: order ord_3kT9 confirmed",
    "",
    " leading and trailing spaces ",
    "two  spaces and a\ttab",
    "S" * 70,
    "A subject of many words that is long enough to be folded over two lines by the policy",
    "Ünïcode: Café Tacvba live",
    "Line\nbreak",
    "[TEST] Your tickets for 東京ドーム: order ord_1 confirmed",
    "x" * 300,
]
ADDRESSES = [
    "seller@example.com",
    '"Ana Silva" <ana@example.com>',
    "Zoë Müller <zoe@example.com>",
    "a" * 60 + "@example.com",
]


@pytest.mark.parametrize("linesep", ["\n", "\r\n"])
def test_the_bytes_are_compat32s_for_every_header(linesep):
    for subject in SUBJECTS:
        for to in ADDRESSES:
            message = TemplatedMessage(
                subject=subject.replace("\n", " "),
                body="Hello",
                to=[to],
                headers={
                    "Message-ID": "<confirmation.ord_3kT9@transfers.buyback.example>",
                    "X-Note": subject[:40],
                }
                if "\n" not in subject
                else {},
            )
            message.attach_alternative("<p>Hello</p>", "text/html")
            ours, compat32 = _both(message, linesep)
            assert ours == compat32, (subject, to)


def test_random_printable_headers_are_written_as_compat32_writes_them():
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "  <>@.,;:\"'()=-_/[]?!#%&*+"
    for _ in range(3000):
        name = rng.choice(["Subject", "X-Reference", "Message-ID"])
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 100)))
        assert ONE_LINE_HEADERS._fold(name, value, True) == policy.compat32._fold(name, value, True), value


def test_a_templated_mail_is_sent_with_its_alternatives(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    send_templated_mail(
        template="portal_invite",
        subject="Your partner portal access for Acme",
        to="ops@acme.example",
        context={
            "partner": {"name": "Acme"},
            "email": "ops@acme.example",
            "set_password_url": "https://portal.example/welcome/x",
            "login_url": "https://portal.example/login",
            "valid_days": 3,
        },
    )
    [sent] = mail.outbox
    assert isinstance(sent, TemplatedMessage)
    written = sent.message()
    assert written.policy is ONE_LINE_HEADERS
    raw = written.as_bytes()
    assert b"Subject: Your partner portal access for Acme\n" in raw
    assert [part.get_content_type() for part in written.get_payload()] == ["text/plain", "text/html"]
