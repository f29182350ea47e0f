"""A templated e-mail's MIME tree, built as Django's ``EmailMultiAlternatives.message()`` builds it and written as
Python's generator writes it (the same objects, the same bytes), without their general-purpose steps.

A seller's confirmation (a text body and its HTML alternative) cost a Celery worker about 640 µs to build and
write, more than rendering its two templates:

- each text part was made by ``MIMEText``: a ``Content-Type`` header written, then parsed again to set its
  charset, a ``Content-Transfer-Encoding`` chosen by decoding the payload, and a search for lines longer than
  RFC 5322's 998 bytes that encoded every line;
- the ``Subject`` went through ``email.header.Header`` even when it was short, printable ASCII, which it gives
  back unchanged;
- the generator wrote the body a line at a time, two writes a line; and even written in one piece, it went
  through a buffer and a handler per part, each part's lines split by a regular expression and joined again
  (160–220 µs a message in-process, where joining the same bytes costs 30 µs).

:func:`alternatives` builds the same tree directly when the message has that shape (no attachment, one
``text/*`` alternative, UTF-8) and otherwise leaves the message to Django. :meth:`Alternatives.as_bytes` joins the
bytes of a tree it built directly, as the generator writes them; any other tree (changed after it was built) is
written by :class:`_BytesWriter`, Python's generator writing a text in one piece with its line endings replaced.
Tests (``tests/config/test_mail_mime.py``) compare the tree and the bytes with Django's for bodies and headers of
every kind: ASCII, not ASCII, long lines (quoted-printable, left to Django), empty, ``\\r\\n`` and ``\\r``.
"""

from __future__ import annotations

import functools
import secrets
from email.generator import NLCRE, BytesGenerator, Generator
from email.message import Message
from email.policy import Policy
from email.utils import formatdate, make_msgid
from io import BytesIO, StringIO

from django.conf import settings
from django.core.mail.message import (
    RFC5322_EMAIL_LINE_LENGTH_LIMIT,
    SafeMIMEMultipart,
    SafeMIMEText,
    forbid_multi_line_headers,
    utf8_charset,
)
from django.core.mail.utils import DNS_NAME

# Header.encode() gives back printable ASCII of up to this many characters unchanged; longer, it folds.
_HEADER_LINE = 76
# A line of this many characters is at most RFC 5322's limit in bytes, whatever they are (UTF-8: 4 at most).
_SHORT_LINE = RFC5322_EMAIL_LINE_LENGTH_LIMIT // 4


class _WholeLines:
    """Python's generator, writing a text with its line endings replaced by the policy's in one write: the same
    pieces, joined (``NLCRE.split`` ends with "" exactly when the text ends with a line ending)."""

    def _write_lines(self, lines: str) -> None:
        if lines:
            self.write(_line_endings(lines, self._NL))


def _line_endings(text: str, linesep: str) -> str:
    """``text`` with every line ending (``\\r\\n``, ``\\r`` or ``\\n``) replaced by ``linesep``, as the generator's
    ``NLCRE`` split and join it; without a ``\\r``, by a plain replace."""
    if "\r" in text:
        return linesep.join(NLCRE.split(text))
    return text if linesep == "\n" else text.replace("\n", linesep)


class _BytesWriter(_WholeLines, BytesGenerator):
    pass


class _TextWriter(_WholeLines, Generator):
    pass


class Alternatives(SafeMIMEMultipart):
    """Django's ``multipart/alternative`` part, written by :class:`_BytesWriter` (its subparts too: the generator
    writes each with a clone of itself). Like Django's, it does not mangle lines that begin with ``From ``."""

    def as_string(self, unixfrom: bool = False, linesep: str = "\n") -> str:
        out = StringIO()
        _TextWriter(out, mangle_from_=False).flatten(self, unixfrom=unixfrom, linesep=linesep)
        return out.getvalue()

    def as_bytes(self, unixfrom: bool = False, linesep: str = "\n") -> bytes:
        written = None if unixfrom else self._written(linesep)
        if written is not None:
            return written
        out = BytesIO()
        _BytesWriter(out, mangle_from_=False).flatten(self, unixfrom=unixfrom, linesep=linesep)
        return out.getvalue()

    def _written(self, linesep: str) -> bytes | None:
        """The bytes :class:`_BytesWriter` writes, joined directly when the tree is the one :func:`alternatives`
        built (its boundary in its ``Content-Type``, text parts, no preamble or epilogue, an 8-bit policy), else
        None. The generator writes such a tree as its headers folded by the policy, a blank line, then each part
        (its headers, a blank line, its text with the policy's line endings) after a boundary line, and the
        closing boundary line."""
        boundary, content_type = getattr(self, "_boundary", None), getattr(self, "_content_type", None)
        parts = self._payload
        if (
            boundary is None
            or content_type is None
            or not self._headers
            or self._headers[0] != ("Content-Type", content_type)
            or self.preamble is not None
            or self.epilogue is not None
            or not isinstance(parts, list)
            or not parts
            or any(type(part) is not SafeMIMEText or not isinstance(part._payload, str) for part in parts)
        ):
            return None
        policy = _policy_with(self.policy, linesep)
        if policy.cte_type == "7bit":
            return None
        fold = policy.fold_binary
        nl = linesep.encode("ascii")
        dash = b"--" + boundary.encode("ascii")
        out = [_folded_with(policy, content_type, boundary)]
        out += [fold(name, value) for name, value in self._headers[1:]]
        out += [nl, dash, nl]
        for position, part in enumerate(parts):
            if position:
                out += [nl, dash, nl]
            out += [fold(name, value) for name, value in part._headers]
            out.append(nl)
            if part._payload:
                out.append(_line_endings(part._payload, linesep).encode("ascii", "surrogateescape"))
        out += [nl, dash, b"--", nl]
        return b"".join(out)


@functools.lru_cache(maxsize=16)
def _policy_with(policy: Policy, linesep: str) -> Policy:
    """``policy`` writing ``linesep`` (policies are immutable: one clone per pair)."""
    return policy if policy.linesep == linesep else policy.clone(linesep=linesep)


@functools.lru_cache(maxsize=16)
def _folded_template(policy: Policy, template: str) -> bytes:
    return policy.fold_binary("Content-Type", template)


def _folded_with(policy: Policy, value: str, boundary: str) -> bytes:
    """``Content-Type: value`` as ``policy`` folds it, ``value`` holding a boundary of :func:`boundary_for`: folded
    once per policy with a placeholder of the boundary's length and alphabet (folding breaks a line only at
    white space and ``;``, which neither holds), the boundary then put in its place."""
    placeholder = "=" * 15 + "0" * (len(boundary) - 17) + "=="
    template = value.replace(boundary, placeholder)
    folded = _folded_template(policy, template)
    if template.count(placeholder) != 1 or folded.count(placeholder.encode()) != 1:
        return policy.fold_binary("Content-Type", value)
    return folded.replace(placeholder.encode(), boundary.encode("ascii"))


def boundary_for(texts: list[str]) -> str:
    """A random boundary (128 bits, in the generator's ``=``-framed shape) that none of ``texts`` holds.

    Left to choose, Python's generator draws one and searches the parts for it with a regular expression made
    of it: a new expression for every message, never one from ``re``'s cache (about 70 µs a message)."""
    while True:
        boundary = f"==============={secrets.token_hex(16)}=="
        if not any(boundary in text for text in texts):
            return boundary


def _long_lines(text: str) -> bool:
    """Django's test for quoted-printable (``SafeMIMEText.set_payload``): a line longer than 998 bytes."""
    lines = text.splitlines()
    if max(map(len, lines), default=0) <= _SHORT_LINE:
        return False
    long = [line for line in lines if len(line) > _SHORT_LINE]
    return any(len(line.encode(errors="surrogateescape")) > RFC5322_EMAIL_LINE_LENGTH_LIMIT for line in long)


def text_part(text: str, subtype: str) -> SafeMIMEText:
    """``SafeMIMEText(text, subtype, "utf-8")``: built directly unless a line is longer than 998 bytes (Django
    then encodes the part as quoted-printable, and builds it)."""
    if _long_lines(text):
        return SafeMIMEText(text, subtype, "utf-8")
    data = text.encode("utf-8")
    part = SafeMIMEText.__new__(SafeMIMEText)
    Message.__init__(part)
    part.encoding = "utf-8"
    part._headers = [
        ("Content-Type", f'text/{subtype}; charset="utf-8"'),
        ("MIME-Version", "1.0"),
        ("Content-Transfer-Encoding", "7bit" if data.isascii() else "8bit"),
    ]
    # As Message.set_payload keeps encoded text: its bytes, as ASCII with the others escaped.
    part._payload = data.decode("ascii", "surrogateescape")
    part._charset = utf8_charset
    return part


def _header_set(message: Message, name: str, value) -> None:
    """``message[name] = value`` as Django's parts set it (``forbid_multi_line_headers``), taking printable
    ASCII as it is where Django would leave it unchanged."""
    value = str(value)
    if value.isascii() and value.isprintable() and (name.lower() != "subject" or len(value) <= _HEADER_LINE):
        Message.__setitem__(message, name, value)
    else:
        Message.__setitem__(message, *forbid_multi_line_headers(name, value, "utf-8"))


def alternatives(email) -> Alternatives | None:
    """The MIME tree of ``email`` (a Django ``EmailMultiAlternatives``) as its ``message()`` builds it, or None
    when it is not a UTF-8 text with one ``text/*`` alternative and no attachment."""
    if (
        email.attachments
        or len(email.alternatives) != 1
        or (email.encoding or settings.DEFAULT_CHARSET) != "utf-8"
    ):
        return None
    content, mimetype = email.alternatives[0]
    maintype, _, subtype = mimetype.partition("/")
    if maintype != "text" or not isinstance(content, str):
        return None
    parts = [text_part(email.body, email.content_subtype)] if email.body else []
    parts.append(text_part(content, subtype))
    message = Alternatives.__new__(Alternatives)
    Message.__init__(message)
    message.encoding = "utf-8"
    boundary = boundary_for([str(part.get_payload()) for part in parts])
    content_type = f'multipart/{email.alternative_subtype}; boundary="{boundary}"'
    message._headers = [("Content-Type", content_type), ("MIME-Version", "1.0")]
    # What Alternatives._written checks that the tree is still the one built here.
    message._boundary, message._content_type = boundary, content_type
    message._payload = parts
    # The headers, in the order and with the choices of EmailMessage.message().
    extra = email.extra_headers
    _header_set(message, "Subject", email.subject)
    _header_set(message, "From", extra.get("From", email.from_email))
    for name, values in (("To", email.to), ("Cc", email.cc), ("Reply-To", email.reply_to)):
        if name in extra:
            _header_set(message, name, extra[name])
        elif values:
            _header_set(message, name, ", ".join(str(value) for value in values))
    names = {name.lower() for name in extra}
    if "date" not in names:
        _header_set(message, "Date", formatdate(localtime=settings.EMAIL_USE_LOCALTIME))
    if "message-id" not in names:
        _header_set(message, "Message-ID", make_msgid(domain=DNS_NAME))
    for name, value in extra.items():
        if name.lower() not in {"from", "to", "cc", "reply-to"}:
            _header_set(message, name, value)
    return message
