"""A templated e-mail's MIME tree (config/core/mime.py) is Django's: the same parts with the same headers,
payloads and charsets, and the same bytes, as ``EmailMultiAlternatives.message()`` builds and writes them, for
bodies and headers of every kind. Only the boundary (random) and the Date and Message-ID (of the moment) are
made separately: the comparison gives Django's message ours."""

import itertools
from email import policy
from email.header import Header
from email.utils import formatdate

import pytest
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import BadHeaderError, SafeMIMEMultipart, SafeMIMEText

from config.core import mime
from config.core.mail import ONE_LINE_HEADERS, TemplatedMessage

BODIES = [
    "Hello Ana,\n\nYour tickets are sold.\n",
    "Hello Zoë, 東京ドーム: 2 tickets 🎫\n",
    "no line ending at the end",
    "windows\r\nline\r\nendings\r\n",
    "old mac\rline endings\r",
    "From the start of a line\n>From quoted\n",
    "\n\n\n",
    "x" * 998 + "\nshort\n",  # at the limit: 8bit
    "x" * 999 + "\n",  # over: quoted-printable, by Django
    "東" * 332 + "\n",  # 996 bytes
    "東" * 333 + "\n",  # 999 bytes
    "ü" * 499 + "\n" + "ü" * 500,  # 998 bytes, then 1,000
    "a line\u2028separated by U+2028\x0cand a form feed\n",
    "trailing spaces   \n\ttab-led line\n",
]
HTMLS = ["<p>Hello</p>\n", "<p>Olá, São Paulo</p>", "<p>" + "y" * 1200 + "</p>\n"]
SUBJECTS = [
    "Your tickets for Harbor Lights Tour: order ord_3kT9 confirmed",
    "S" * 76,
    "S" * 77,
    ("word " * 16)[:79],  # folded by Header
    "A subject of many words that is long enough to be folded over two lines by the policy",
    " leading and trailing spaces ",
    "two  spaces and a\ttab",
    "[TEST] Your tickets for 東京ドーム: order ord_1 confirmed",
    "Ünïcode: Café Tacvba live",
]
TOS = [
    ["seller@example.com"],
    ['"Ana Silva" <ana@example.com>', "Zoë Müller <zoe@example.com>"],
    ["b" * 70 + "@example.com"],
]
HEADERS = [
    {},
    {"Message-ID": "<confirmation.ord_3kT9@transfers.buyback.example>"},
    {"Message-ID": "<m@x>", "Date": formatdate(usegmt=True), "X-Reference": "ord_3kT9"},
    {"To": "override@example.com", "From": "Ops <ops@example.com>", "Reply-To": "r@example.com"},
    {"X-Note": "Ünïcode value", "subject": "a second subject"},
]


def _pair(**fields) -> tuple:
    """Our message and Django's, built from the same fields, Django's given our boundary, Date and Message-ID."""
    html = fields.pop("html", "<p>Hello</p>")
    ours, theirs = TemplatedMessage(**fields), EmailMultiAlternatives(**fields)
    for message in (ours, theirs):
        message.attach_alternative(html, "text/html")
    built, django = ours.message(), theirs.message()
    django.set_boundary(built.get_boundary())
    for name in ("Date", "Message-ID"):
        django.replace_header(name, built[name])
    return built, django


def _same_tree(built, django) -> None:
    assert type(built) is mime.Alternatives and isinstance(built, SafeMIMEMultipart)
    assert built.items() == django.items()
    assert built.encoding == django.encoding and built.preamble == django.preamble
    assert len(built.get_payload()) == len(django.get_payload())
    for ours, theirs in zip(built.get_payload(), django.get_payload(), strict=True):
        assert type(ours) is type(theirs) is SafeMIMEText
        assert ours.items() == theirs.items()
        assert ours._payload == theirs._payload
        assert ours.get_charset() == theirs.get_charset()
        assert ours.get_charset().body_encoding == theirs.get_charset().body_encoding
        assert ours.encoding == theirs.encoding and ours.get_default_type() == theirs.get_default_type()


def _same_bytes(built, django) -> None:
    for linesep in ("\n", "\r\n"):
        django.policy = policy.compat32
        expected_bytes = django.as_bytes(linesep=linesep)
        expected_text = django.as_string(linesep=linesep)
        built.policy = ONE_LINE_HEADERS
        assert built._written(linesep) is not None  # joined directly, not by the generator
        assert built.as_bytes(linesep=linesep) == expected_bytes
        assert built.as_string(linesep=linesep) == expected_text


def test_every_body_and_alternative_is_built_and_written_as_django_does():
    for body, html in itertools.product([*BODIES, ""], HTMLS):
        built, django = _pair(subject="Order ord_1 confirmed", body=body, html=html, to=["ana@example.com"])
        _same_tree(built, django)
        _same_bytes(built, django)


@pytest.mark.parametrize("subject", SUBJECTS)
def test_every_subject_recipient_and_header_is_set_as_django_sets_it(subject):
    for to, headers in itertools.product(TOS, HEADERS):
        built, django = _pair(
            subject=subject, body=BODIES[1], to=to, headers=dict(headers), cc=["c@example.com"]
        )
        _same_tree(built, django)
        _same_bytes(built, django)


def test_a_tree_changed_after_it_was_built_is_written_by_the_generator():
    built, django = _pair(subject="Order ord_1 confirmed", body=BODIES[0], to=["ana@example.com"])
    built.set_boundary("another-boundary")
    django.set_boundary("another-boundary")
    assert built._written("\n") is None
    _same_bytes_by_the_generator(built, django)
    built, django = _pair(subject="Order ord_1 confirmed", body=BODIES[0], to=["ana@example.com"])
    for message in (built, django):
        message.preamble = "This is a multi-part message."
    assert built._written("\n") is None
    _same_bytes_by_the_generator(built, django)


def _same_bytes_by_the_generator(built, django) -> None:
    for linesep in ("\n", "\r\n"):
        django.policy = policy.compat32
        built.policy = ONE_LINE_HEADERS
        assert built.as_bytes(linesep=linesep) == django.as_bytes(linesep=linesep)


def test_a_short_printable_subject_is_what_header_gives_back():
    """The reason a subject of up to 76 printable ASCII characters is taken as it is."""
    alphabet = "ab Z9 =?:;<>@\"'()[],."
    for length in range(0, 80):
        for offset in range(len(alphabet)):
            value = "".join(alphabet[(offset + i * 7) % len(alphabet)] for i in range(length))
            assert (Header(value).encode() == value) or len(value) > 76


def test_a_header_with_a_line_break_is_refused_as_django_refuses_it():
    for fields in ({"subject": "a\nb"}, {"headers": {"X-Note": "a\r\nBcc: x@example.com"}}):
        message = TemplatedMessage(**{"subject": "s", "body": "b", "to": ["a@example.com"], **fields})
        message.attach_alternative("<p>b</p>", "text/html")
        with pytest.raises(BadHeaderError):
            message.message()


def test_another_shape_is_left_to_django():
    message = TemplatedMessage(subject="s", body="b", to=["a@example.com"])
    assert mime.alternatives(message) is None  # no alternative
    message.attach_alternative(b"<p>bytes</p>", "text/html")
    assert mime.alternatives(message) is None
    message.alternatives = []
    message.attach_alternative("<p>b</p>", "text/html")
    message.attach("ticket.pdf", b"%PDF-1.4", "application/pdf")
    assert mime.alternatives(message) is None
    written = message.message()  # Django's, with its boundaries drawn by the service
    assert written.policy is ONE_LINE_HEADERS
    assert written.get_boundary().startswith("=" * 15)
    assert [part.get_content_type() for part in written.walk()] == [
        "multipart/mixed",
        "multipart/alternative",
        "text/plain",
        "text/html",
        "application/pdf",
    ]


def test_a_latin1_message_is_left_to_django(settings):
    message = TemplatedMessage(subject="s", body="é", to=["a@example.com"])
    message.encoding = "iso-8859-1"
    message.attach_alternative("<p>é</p>", "text/html")
    assert mime.alternatives(message) is None
    assert b'charset="iso-8859-1"' in message.message().as_bytes()
