"""A template proposed from one authentic mail whose order is known (docs/staff-guide.md "Make a template").

The order (known from the transfer address the mail was sent to) says what the mail must contain: its event
and venue names, its start in venue time, its section, row and ticket count. Each value is looked for in the
mail's text, and each place it is found is tried in turn, those whose label names the field first: the
proposal is a pattern anchored on the platform's own words — a table's header above the value's cell, the
label before the value on its line (matched as words: "Row" never matches inside "Arrowhead"), or the line
above when the value stands alone — and never on this order's own values (the seller's name or its sentence,
the event, the venue, the section, the row, the ticket count, the order's address), which change with every
mail. Where the value sits only among them, no pattern is proposed and the note asks staff for a line. Seats
are proposed from a line labelled "Seat(s)" or a "Seats" column, the accept link from the mail's https links.
Staff correct a proposal by picking another line — its label and value apart by a colon, a tab, spaces or a
bar, a table row under its header, or a value on the line after its label — or by editing the pattern; the
proposals are only regular expressions and the template format's own rules, checked by the start-up's
validator, and every pattern runs with a time limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

import regex

from orders.transfers.models import Order
from orders.transfers.reading import platforms
from orders.transfers.reading.layout import (
    DELIMITERS,
    KEYWORDS,
    LINK,
    NO_LABEL,
    column_of,
    esc,
    label_pattern,
    seller_name,
)
from orders.transfers.reading.matching import normalise

FIELDS = ("event", "venue", "start", "section", "row", "seats", "quantity", "accept_link")
LABELS = {
    "event": "Event name",
    "venue": "Venue",
    "start": "Start (venue time)",
    "section": "Section",
    "row": "Row",
    "seats": "Seats",
    "quantity": "Number of tickets",
    "accept_link": "Accept link",
}
# How platforms write a start; each is tried zero-padded and not (strptime reads both).
START_FORMATS = (
    "%Y-%m-%d %H:%M",
    "%a, %b %d, %Y %I:%M %p",
    "%A, %B %d, %Y %I:%M %p",
    "%a, %b %d, %Y at %I:%M %p",
    "%A, %B %d, %Y at %I:%M %p",
    "%b %d, %Y %I:%M %p",
    "%B %d, %Y %I:%M %p",
    "%B %d, %Y at %I:%M %p",
    "%a %b %d, %Y %I:%M %p",
    "%a %d %b %Y %H:%M",
    "%A %d %B %Y %H:%M",
    "%d %B %Y %H:%M",
    "%d %b %Y %H:%M",
    "%m/%d/%Y %I:%M %p",
    "%d/%m/%Y %H:%M",
    "%d.%m.%Y %H:%M",
)
# The places of one value tried for a proposal, those the platform labels first (a mail is hostile: it may
# repeat a value thousands of times, and each try reads the whole mail).
MAX_TRIES = 20
_SEATS_LABEL = re.compile(r"^(?P<label>.*?\bseats?\b[^\w]*)(?P<value>\S.*)$", re.IGNORECASE)
_QUANTITY_WORDS = re.compile(r"\b(tickets?|quantity|qty)\b", re.IGNORECASE)


@dataclass
class Proposal:
    field: str
    line: int | None  # 1-based line of the mail's text the pattern reads, None when not found
    pattern: str
    found: str = ""  # what the pattern reads from this mail
    expected: str = ""  # the order's value
    note: str = ""

    @property
    def label(self) -> str:
        return LABELS[self.field]


@dataclass
class Learned:
    subject: str
    subject_pattern: str
    lines: list[str]
    proposals: dict[str, Proposal]
    start_format: str = ""
    problems: list[str] = field(default_factory=list)


def own_values(order: Order, text: str = "") -> tuple[str, ...]:
    """The order's own values as a mail writes them (and the seller's name): a label holding one of them would
    read only this order's mail."""
    event = order.event
    values = [event.name, event.venue.name, order.transfer_address, seller_name(text)]
    if not order.general_admission:
        values += [order.section_name, order.row_name]
    return tuple(v for v in values if v)


def _find(lines: list[str], wanted: list[str], *, words: bool = True) -> list[tuple[int, int, int]]:
    """(line index, start, end) of every occurrence of the first of ``wanted`` found (case-insensitive)."""
    for candidate in (w for w in wanted if w):
        pattern = re.compile(
            (r"(?<![\w])" if words else "") + re.escape(candidate) + (r"(?![\w])" if words else ""),
            re.IGNORECASE,
        )
        found = [(i, m.start(), m.end()) for i, line in enumerate(lines) for m in pattern.finditer(line)]
        if found:
            return found
    return []


def _start_renderings(start: datetime) -> list[tuple[str, str]]:
    out = []
    for fmt in START_FORMATS:
        out.append((start.strftime(fmt), fmt))
        loose = fmt.replace("%d", str(start.day)).replace("%I", str(int(start.strftime("%I"))))
        out.append((start.strftime(loose), fmt))
    return sorted(out, key=lambda pair: -len(pair[0]))  # the longest (most precise) first


def read_with(pattern: str, text: str) -> tuple[str, str]:
    """(what ``pattern`` reads from ``text``, a problem) — within the patterns' time limit."""
    if not pattern:
        return "", ""
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE | regex.MULTILINE)
    except (regex.error, ValueError, OverflowError) as exc:
        return "", f"does not compile: {exc}"
    if "value" not in compiled.groupindex:
        return "", "has no (?P<value>…) group"
    try:
        found = compiled.search(text, timeout=platforms.PATTERN_SECONDS)
    except TimeoutError:
        return "", f"stopped after {platforms.PATTERN_SECONDS} s (the pattern backtracks too much)"
    if not found or not found.group("value"):
        return "", "reads nothing from this mail"
    return " ".join(found.group("value").split()), ""


def line_of(pattern: str, text: str) -> int | None:
    try:
        found = regex.compile(pattern, regex.IGNORECASE | regex.MULTILINE).search(
            text, timeout=platforms.PATTERN_SECONDS
        )
    except (regex.error, ValueError, OverflowError, TimeoutError):
        return None
    return text.count("\n", 0, found.start("value")) + 1 if found and "value" in found.re.groupindex else None


def subject_proposal(subject: str, order: Order, *, seller: str = "") -> str:
    """The subject with the order's own words (event, venue, the seller's name, ticket count) made wildcards,
    anchored."""
    pattern = esc(subject)
    for value in (order.event.name, order.event.venue.name, seller):
        escaped = esc(value)
        if escaped and escaped in pattern:
            pattern = pattern.replace(escaped, ".+")
    pattern = re.sub(rf"(?<![\w\\]){order.quantity}(?!\w)", r"\\d+", pattern)
    return f"^{pattern}$"


_SHAPES = {
    "%a": "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)",
    "%A": "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)",
    "%b": "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)",
    "%B": "(?:January|February|March|April|May|June|July|August|September|October|November|December)",
    "%d": "\\d{1,2}",
    "%m": "\\d{1,2}",
    "%Y": "\\d{4}",
    "%H": "\\d{1,2}",
    "%I": "\\d{1,2}",
    "%M": "\\d{2}",
    "%p": "[AaPp][Mm]",
}


def start_shape(fmt: str) -> str:
    """A pattern reading any start written in ``fmt`` (not only this order's)."""
    parts = re.split(r"(%[aAbBdmYHIMp])", fmt)
    return "".join(_SHAPES.get(part) or esc(part) for part in parts)


def _labelled_first(lines: list[str], field_name: str, where: tuple[int, int, int]) -> tuple[int, int]:
    """Occurrences whose label names the field first (a "Row" before "Dec 12, 2026"'s "Dec"), then in order."""
    index, start, _ = where
    before = DELIMITERS.split(lines[index][:start])[-1]
    words = KEYWORDS.get(field_name, ())
    named = bool(words) and re.search(rf"\b(?:{'|'.join(words)})\b", before, re.IGNORECASE)
    return (0 if named else 1, index)


def learn(*, text: str, subject: str, order: Order, accept_hosts: tuple[str, ...] = ()) -> Learned:
    """The proposals for ``text`` (an authentic mail's text) of ``order``."""
    lines = text.split("\n")
    proposals: dict[str, Proposal] = {}
    event = order.event
    avoid = own_values(order, text)

    def propose(name: str, found_at: list, expected: str, *, value: str = ".+?", note: str = "") -> None:
        """The first occurrence the platform labels: a pattern that reads it, anchored on no value of this
        order; none when every occurrence sits among this order's values."""
        if not found_at:
            proposals[name] = Proposal(
                name, None, "", expected=expected, note=note or "not found in the mail"
            )
            return
        ranked = sorted(found_at, key=lambda where: _labelled_first(lines, name, where))
        for index, start, end in ranked[:MAX_TRIES]:
            pattern = label_pattern(lines, index, start, end, value=value, avoid=avoid)
            if not pattern:
                continue
            found, problem = read_with(pattern, text)
            if not problem and normalise(found) == normalise(lines[index][start:end]):
                proposals[name] = Proposal(name, index + 1, pattern, found, expected, note)
                return
        proposals[name] = Proposal(name, found_at[0][0] + 1, "", expected=expected, note=NO_LABEL)

    propose("event", _find(lines, [event.name]), event.name)
    propose("venue", _find(lines, [event.venue.name]), event.venue.name)
    starts = event.venue_starts_at.replace(tzinfo=None)
    start_format = ""
    for rendered, fmt in _start_renderings(starts):
        found_at = _find(lines, [rendered], words=False)
        if found_at:
            start_format = fmt
            propose(
                "start",
                found_at,
                starts.strftime("%Y-%m-%d %H:%M"),
                value=start_shape(fmt),
                note=f"read as {fmt}",
            )
            break
    else:
        propose("start", [], starts.strftime("%Y-%m-%d %H:%M"))
    if not order.general_admission:
        for name, values in (
            ("section", [order.section_name_display, order.section_name]),
            ("row", [order.row_name_display, order.row_name]),
        ):
            found_at = []
            for where in _find(lines, values):
                # The bare value after a "Section"/"Row" label rather than the value with its prefix.
                shown = lines[where[0]][where[1] : where[2]]
                bare = normalise(shown, prefixes=True)
                offset = lines[where[0]].lower().find(bare, where[1]) if bare else -1
                if offset >= 0 and bare != shown.lower():
                    where = (where[0], offset, offset + len(bare))
                found_at.append(where)
            propose(name, found_at, values[-1])
        seats = [
            (i, m.start("value"), len(line))
            for i, line in enumerate(lines)
            if (m := _SEATS_LABEL.match(line)) and re.search(r"\d", m.group("value"))
        ]
        seats += [
            (i, *cell)
            for i in range(1, len(lines))
            if (cell := column_of(lines, i, "seats")) and re.search(r"\d", lines[i][cell[0] : cell[1]])
        ]
        propose("seats", seats, f"{order.quantity} seats")
    counts = [
        (i, m.start(), m.end())
        for i, line in enumerate(lines)
        if _QUANTITY_WORDS.search(line) or column_of(lines, i, "quantity")
        for m in re.finditer(rf"(?<![\w.]){order.quantity}(?![\w.])", line)
    ]
    propose("quantity", counts, str(order.quantity), value="\\d+")
    links = [(i, m) for i, line in enumerate(lines) for m in LINK.finditer(line)]
    listed = [(i, m) for i, m in links if (urlsplit(m.group(0)).hostname or "").lower() in accept_hosts]
    chosen = (listed or links or [None])[0]
    if chosen is None:
        proposals["accept_link"] = Proposal("accept_link", None, "", note="no https link in the mail")
    else:
        index, link = chosen
        host = (urlsplit(link.group(0)).hostname or "").lower()
        pattern = f"(?P<value>https://{regex.escape(host)}/[^\\s<>\"'()\\[\\]]+)"
        note = (
            ""
            if host in accept_hosts
            else f"{host} is not an accept-link host of the platform (a registry change)"
        )
        proposals["accept_link"] = Proposal("accept_link", index + 1, pattern, link.group(0), "", note)
    return Learned(
        subject=subject,
        subject_pattern=subject_proposal(subject, order, seller=seller_name(text)),
        lines=lines,
        proposals=proposals,
        start_format=start_format,
    )


def kind_data(*, subject_pattern: str, patterns: dict[str, str], general_admission: bool) -> dict:
    """One kind of the template file from the chosen patterns: the fields with a pattern, those the matcher
    needs required (a mail without them stays unparsed rather than being matched on less)."""
    fields = {name: patterns[name] for name in FIELDS if patterns.get(name)}
    needed = [
        "event" if "event" in fields else "venue",
        "start",
        "quantity" if "quantity" in fields else "seats",
    ]
    if not general_admission:
        needed += ["section", "row"]
    if "accept_link" in fields:
        needed.append("accept_link")
    required = [name for name in needed if name in fields or (name == "quantity" and "seats" in fields)]
    return {"subject": subject_pattern, "required": required, "fields": fields}
