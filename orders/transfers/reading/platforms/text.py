"""An e-mail as text: its subject, its From address and its body, read with the standard library's ``email``
package (``policy.default``: encoded words, quoted-printable and base64 bodies, any charset).

The body is the first ``text/plain`` part; an HTML-only message is turned into text with inscriptis (links
kept as text, nothing fetched, nothing rendered). Staff see this text, never the HTML.
"""

from __future__ import annotations

import email
import unicodedata
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.utils import getaddresses

from inscriptis import get_text
from inscriptis.css_profiles import CSS_PROFILES
from inscriptis.model.config import ParserConfig

MAX_TEXT_CHARS = 100_000
_HTML_CONFIG = ParserConfig(css=CSS_PROFILES["strict"], display_links=True, display_anchors=False)


@dataclass(frozen=True)
class MailText:
    subject: str
    from_addresses: list[str]
    text: str


def _part_text(part: EmailMessage) -> str:
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, AssertionError):
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", errors="replace")
    if isinstance(content, bytes):
        content = content.decode("utf-8", errors="replace")
    return content


def html_to_text(html: str) -> str:
    return get_text(html, _HTML_CONFIG)


def _clean(text: str) -> str:
    text = text.replace("\x00", "")  # PostgreSQL stores no NUL (an "=00" in a quoted-printable body)
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    # Non-breaking and other odd spaces from HTML become plain spaces, so that the templates' patterns match.
    text = "".join(" " if (ch != "\n" and ch != "\t" and ch.isspace()) else ch for ch in text)
    lines = [line.strip() for line in text.split("\n")]
    return "\n".join(lines).strip()[:MAX_TEXT_CHARS]


def mail_text(raw: bytes) -> MailText:
    """The subject, the From addresses and the body text of ``raw``."""
    message = email.message_from_bytes(raw, policy=policy.default)
    subject = " ".join(str(message.get("subject", "") or "").replace("\x00", "").split())
    from_addresses = [addr for _, addr in getaddresses([str(v) for v in message.get_all("from", [])]) if addr]
    plain = html = None
    for part in message.walk():
        if part.is_multipart() or part.get_content_disposition() == "attachment":
            continue
        content_type = part.get_content_type()
        if content_type == "text/plain" and plain is None:
            plain = _part_text(part)
        elif content_type == "text/html" and html is None:
            html = _part_text(part)
    if plain is not None and plain.strip():
        body = plain
    elif html is not None:
        body = html_to_text(html)
    else:
        body = ""
    return MailText(subject=subject, from_addresses=from_addresses, text=_clean(body))
