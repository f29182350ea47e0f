"""A template proposed from one authentic mail whose order is known (docs/staff-guide.md "Make a template").

The order (known from the transfer address the mail was sent to) says what the mail must contain: its event
and venue names, its start in venue time, its section, row and ticket count. Each value is looked for in the
mail's text; where it is found, the proposal is a label-anchored pattern — the text before the value on its
line (or the line above, when the value stands alone) followed by a ``value`` group — so the same template
reads the platform's next mail for another order. Seats are proposed from a line labelled "Seat(s)", the
accept link from the mail's https links. Staff correct a proposal by picking another line (the pattern is made
again from that line) or by editing the pattern; the proposals are only regular expressions and the template
format's own rules, checked by the start-up's validator, and every pattern runs with a time limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

import regex

from orders.transfers.models import Order
from orders.transfers.reading import platforms
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
_DELIMITERS = re.compile(r"\s*(?:[,;|·•]|\s-\s|\s–\s)\s*")
_LINK = re.compile(r"https://[^\s<>\"'()\[\]]+")
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


def _esc(text: str) -> str:
    return regex.escape(text, special_only=True, literal_spaces=True).replace(" ", "[ \\t]*") if text else ""


def _anchor_above(lines: list[str], index: int, avoid: tuple[str, ...]) -> int | None:
    """The nearest line above ``index`` (within 4 lines) fit to anchor on: no digits, none of the order's own
    values (those change from mail to mail)."""
    avoid_lower = [a.lower() for a in avoid if a]
    for i in range(index - 1, max(-1, index - 5), -1):
        line = lines[i].strip()
        if line and not re.search(r"\d", line) and not any(a in line.lower() for a in avoid_lower):
            return i
    return None


def _label_pattern(
    lines: list[str], index: int, start: int, end: int, *, value: str = ".+?", avoid: tuple[str, ...] = ()
) -> str:
    """A pattern reading line ``index``'s characters ``start:end`` by the text before them on the line (back to
    the previous delimiter), or by a line above when nothing precedes them."""
    line = lines[index]
    before, after = line[:start], line[end:]
    pieces = _DELIMITERS.split(before)
    label = pieces[-1] if pieces else ""
    anchored_at_start = label.strip() == before.strip()
    tail = ""
    delimiter = _DELIMITERS.match(after)
    if after.strip() and delimiter:
        tail = f"(?={regex.escape(delimiter.group(0).strip())}|$)"
    elif after.strip():
        tail = f"(?=[ \\t]*{_esc(after.strip()[:20])})"
    else:
        tail = "[ \\t]*$"
    if label.strip():
        head = ("^" if anchored_at_start else "") + _esc(label.rstrip()) + "[ \\t]*"
        return f"{head}(?P<value>{value}){tail}"
    above = _anchor_above(lines, index, avoid)
    if above is not None:
        between = index - above - 1
        skip = f"(?:[^\\n]*\\n){{{between}}}" if between else ""
        return f"^{_esc(lines[above].strip())}[ \\t]*\\n{skip}(?P<value>{value}){tail}"
    return f"^(?P<value>{value}){tail}"


def pattern_for_line(lines: list[str], number: int, field_name: str, *, avoid: tuple[str, ...] = ()) -> str:
    """The pattern for a line staff picked: the value after its label (``Label: value``), or the whole line
    read by the line above it."""
    index = number - 1
    line = lines[index]
    if field_name == "accept_link":
        link = _LINK.search(line)
        host = urlsplit(link.group(0)).hostname if link else ""
        return f"(?P<value>https://{regex.escape(host or '')}/[^\\s<>\"'()\\[\\]]+)" if host else ""
    label = re.match(r"^(?P<label>[^:]{1,60}:)\s*(?P<value>\S.*)$", line)
    value = "\\d+" if field_name == "quantity" else ".+?"
    if label:
        return _label_pattern(lines, index, label.start("value"), len(line), value=value, avoid=avoid)
    return _label_pattern(lines, index, 0, len(line), value=value, avoid=avoid)


def _find(lines: list[str], wanted: list[str], *, words: bool = True) -> tuple[int, int, int] | None:
    """(line index, start, end) of the first occurrence of one of ``wanted`` (case-insensitive)."""
    for candidate in (w for w in wanted if w):
        pattern = re.compile(
            (r"(?<![\w])" if words else "") + re.escape(candidate) + (r"(?![\w])" if words else ""),
            re.IGNORECASE,
        )
        for index, line in enumerate(lines):
            found = pattern.search(line)
            if found:
                return index, found.start(), found.end()
    return None


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


def subject_proposal(subject: str, order: Order) -> str:
    """The subject with the order's own words (event, venue, ticket count) made wildcards, anchored."""
    pattern = _esc(subject)
    for value in (order.event.name, order.event.venue.name):
        escaped = _esc(value)
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
    return "".join(_SHAPES.get(part) or _esc(part) for part in parts)


def learn(*, text: str, subject: str, order: Order, accept_hosts: tuple[str, ...] = ()) -> Learned:
    """The proposals for ``text`` (an authentic mail's text) of ``order``."""
    lines = text.split("\n")
    proposals: dict[str, Proposal] = {}
    event = order.event
    avoid = (event.name, event.venue.name)

    def propose(name: str, where, expected: str, *, value: str = ".+?", note: str = "") -> None:
        if where is None:
            proposals[name] = Proposal(
                name, None, "", expected=expected, note=note or "not found in the mail"
            )
            return
        index, start, end = where
        pattern = _label_pattern(lines, index, start, end, value=value, avoid=avoid)
        found, problem = read_with(pattern, text)
        proposals[name] = Proposal(name, index + 1, pattern, found, expected, problem or note)

    propose("event", _find(lines, [event.name]), event.name)
    propose("venue", _find(lines, [event.venue.name]), event.venue.name)
    starts = event.venue_starts_at.replace(tzinfo=None)
    start_format = ""
    for rendered, fmt in _start_renderings(starts):
        where = _find(lines, [rendered], words=False)
        if where is not None:
            start_format = fmt
            propose(
                "start",
                where,
                starts.strftime("%Y-%m-%d %H:%M"),
                value=start_shape(fmt),
                note=f"read as {fmt}",
            )
            break
    else:
        propose("start", None, starts.strftime("%Y-%m-%d %H:%M"))
    if not order.general_admission:
        for name, values in (
            ("section", [order.section_name_display, order.section_name]),
            ("row", [order.row_name_display, order.row_name]),
        ):
            where = _find(lines, values)
            if where is not None:
                # The bare value after a "Section"/"Row" label rather than the value with its prefix.
                shown = lines[where[0]][where[1] : where[2]]
                bare = normalise(shown, prefixes=True)
                offset = lines[where[0]].lower().find(bare, where[1]) if bare else -1
                if offset >= 0 and bare != shown.lower():
                    where = (where[0], offset, offset + len(bare))
            propose(name, where, values[-1])
        seats = next(((i, m) for i, line in enumerate(lines) if (m := _SEATS_LABEL.match(line))), None)
        if seats is None:
            propose("seats", None, f"{order.quantity} seats")
        else:
            index, found = seats
            propose("seats", (index, found.start("value"), len(lines[index])), f"{order.quantity} seats")
    counts = [
        (i, m.start(), m.end())
        for i, line in enumerate(lines)
        if _QUANTITY_WORDS.search(line)
        for m in re.finditer(rf"(?<![\w.]){order.quantity}(?![\w.])", line)
    ]
    # A count after a "Label:" first (a sentence around it names the seller, who changes with every mail).
    counts.sort(key=lambda where: not lines[where[0]][: where[1]].rstrip().endswith(":"))
    propose("quantity", counts[0] if counts else None, str(order.quantity), value="\\d+")
    links = [(i, m) for i, line in enumerate(lines) for m in _LINK.finditer(line)]
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
        subject_pattern=subject_proposal(subject, order),
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
