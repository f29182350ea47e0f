"""The bounds of hostile inbound mail (docs/operations/receiving-mail.md "Receiving mail"): what a message's header section
and MIME structure may be before anything reads them further.

A seller knows their order's transfer address and keeps every genuine platform e-mail they received, so every
message is read as an attack first:

- **Header section**: at most ``MAX_HEADER_BYTES`` (64 KB), no bare CR and no bare LF (a lone CR is a line
  break to Python's ``email`` but not to dkimpy: it would smuggle an unsigned second To past the signature),
  at most ``MAX_DKIM_SIGNATURES`` (5) ``DKIM-Signature`` headers (each one re-reads the whole message and looks
  up a key). The SMTP receiver refuses such a message at DATA; one handed over by a provider opens an
  ``unverifiable`` case.
- **MIME**: at most ``MAX_MIME_DEPTH`` (50) levels of nested multiparts and ``MAX_MIME_PARTS`` (200) parts,
  counted by a flat scan of the lines before any parser (whose recursion a deep nest would exhaust) runs.
- **NUL**: dropped from every text the service stores (PostgreSQL's text and JSON refuse it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_HEADER_BYTES = 64 * 1024
MAX_DKIM_SIGNATURES = 5
MAX_MIME_DEPTH = 50
MAX_MIME_PARTS = 200

_BLANK_LINE = re.compile(rb"(\r?\n)\r?\n")
_BARE_CR = re.compile(rb"\r(?!\n)")
_BARE_LF = re.compile(rb"(?<!\r)\n")
_DKIM_SIGNATURE = re.compile(rb"(?im)^dkim-signature[ \t]*:")
_BOUNDARY = re.compile(rb'(?is)\bboundary\s*=\s*(?:"([^"\r\n]{1,200})"|([^\s;"]{1,200}))')


def header_section(raw: bytes) -> bytes:
    """The header section of ``raw`` up to its blank line (the whole message when it has none), at most one
    byte past ``MAX_HEADER_BYTES`` (a longer one is refused as such)."""
    head = raw[: MAX_HEADER_BYTES + 4]
    found = _BLANK_LINE.search(head)
    if found is None:
        return head[: MAX_HEADER_BYTES + 1]
    return head[: found.end(1)]


def header_problem(raw: bytes) -> str:
    """Why the header section of ``raw`` is refused, or "" when it is within the bounds."""
    head = header_section(raw)
    if len(head) > MAX_HEADER_BYTES:
        return f"the header section is larger than {MAX_HEADER_BYTES // 1024} KB"
    if _BARE_CR.search(head):
        return "the header section has a bare CR (a line break only some readers see)"
    if _BARE_LF.search(head):
        return "the header section has a bare LF (a line break without its CR)"
    signatures = len(_DKIM_SIGNATURE.findall(head))
    if signatures > MAX_DKIM_SIGNATURES:
        return f"the message has {signatures} DKIM-Signature headers (at most {MAX_DKIM_SIGNATURES})"
    return ""


@dataclass(frozen=True)
class MimeShape:
    depth: int  # nesting of multiparts (a single-part message is 0)
    parts: int

    @property
    def problem(self) -> str:
        if self.depth > MAX_MIME_DEPTH:
            return f"its MIME structure is nested deeper than {MAX_MIME_DEPTH} levels"
        if self.parts > MAX_MIME_PARTS:
            return f"it has more than {MAX_MIME_PARTS} MIME parts"
        return ""


def mime_shape(raw: bytes) -> MimeShape:
    """The depth and part count of ``raw``'s MIME structure, from a flat scan: every declared boundary is a
    level (a multipart's parts are only found by its boundary), every delimiter line of a declared boundary a
    part. Stops counting once past the bounds; never recurses."""
    boundaries: set[bytes] = set()
    for match in _BOUNDARY.finditer(raw):
        boundaries.add((match.group(1) or match.group(2)).strip())
        if len(boundaries) > MAX_MIME_DEPTH:
            return MimeShape(depth=len(boundaries), parts=0)
    if not boundaries:
        return MimeShape(depth=0, parts=1)
    parts = 0
    for line in raw.split(b"\n"):
        if line.startswith(b"--") and line[2:].rstrip(b"\r \t") in boundaries:
            parts += 1  # an opening delimiter (a close delimiter ends in "--" and is not in the set)
            if parts > MAX_MIME_PARTS:
                break
    return MimeShape(depth=len(boundaries), parts=parts)


def no_nul(value):
    """``value`` (text, or JSON-shaped lists and dicts of it) without NUL characters."""
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, dict):
        return {no_nul(k): no_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [no_nul(v) for v in value]
    return value
