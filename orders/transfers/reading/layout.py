"""Where a value stands on a platform's mail, and the pattern that reads it by the platform's own words
(docs/staff-guide.md "Make a template"): a table's header above the value's cell, the label before the value
on its line (matched as words, whatever separates them: a colon, a tab, spaces, a bar), or the line above
when the value stands alone. Text holding the order's values (the seller's sentence, the event, the seats…)
is never a label: a pattern anchored on it would read only this order's mail.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import regex

DELIMITERS = re.compile(r"\s*(?:[,;|·•]|\s-\s|\s–\s)\s*")
LINK = re.compile(r"https://[^\s<>\"'()\[\]]+")
# The words a platform labels each field with (a picked line's label, a table's header).
KEYWORDS = {
    "event": ("event", "show", "performance", "game"),
    "venue": ("venue", "location", "where"),
    "start": ("date", "time", "when", "starts?"),
    "section": ("section", "sect", "sec"),
    "row": ("row",),
    "seats": ("seats?",),
    "quantity": ("quantity", "qty", "tickets?", "number of tickets"),
}
NO_LABEL = (
    "found only next to this order's own values (a sentence, the seller's name): pick the line where the "
    "platform labels it"
)
_PART = re.compile(r"[^|·•]+")  # the parts of a line between bars
# The label of a ticket field further on a line ("Row A Seats 1, 2"): where a picked value ends.
_NUMBER = re.compile(r"\d+")
_TICKET_LABEL = re.compile(r"(?<!\w)(?:section|sect|sec|row|seats?|quantity|qty)\.?:?[ \t]*$", re.IGNORECASE)
_OTHER_LABEL = re.compile(r"[ \t]+(?=(?:section|sect|sec|row|seats?|quantity|qty)\b)", re.IGNORECASE)
_LABEL_VALUE = re.compile(
    r"^(?P<label>\s*[^\d:\t|]*?[^\W\d][^\d:\t|]*?)(?:\s*:\s*|\t\s*|[ ]{2,})(?P<value>\S.*)$"
)
# A wider "table" is none a pattern should spell out (a pattern is at most 1000 characters).
MAX_COLUMNS = 8
# A table's cell: words apart by single spaces (cells are apart by more, or by a tab).
_CELL_TEXT = r"\S+(?: \S+)*"
_CELL = re.compile(_CELL_TEXT)
_NAME = r"[A-Z][\w'’.-]*"
_SELLER = re.compile(
    # "Maria Gonzalez sent you …", "Maria has transferred you …", "… tickets from Maria Gonzalez".
    rf"(?:^|(?<=[.!?][ \t]))(?P<name>{_NAME}(?:[ \t]+{_NAME}){{0,3}})[ \t]+"
    r"(?:has[ \t]+|just[ \t]+)?(?:sent|transferred|is[ \t]+sending|forwarded|gave)[ \t]+you\b"
    rf"|\bfrom[ \t]+(?P<sender>{_NAME}(?:[ \t]+{_NAME}){{1,3}})",
    re.MULTILINE,
)
# Text that is no label: a sentence's end, an address, a link.
_NOT_A_LABEL = re.compile(r"[.!?]$|@|://|\d")


def esc(text: str) -> str:
    return regex.escape(text, special_only=True, literal_spaces=True).replace(" ", "[ \\t]*") if text else ""


def seller_name(text: str) -> str:
    """The name of whoever sent the tickets, where the mail says so ("Maria Gonzalez sent you …"): it changes
    with every mail, so nothing anchors on it."""
    found = _SELLER.search(text)
    return (found.group("name") or found.group("sender")).strip().rstrip(".") if found else ""


def _holds(text: str, avoid: tuple[str, ...]) -> bool:
    return any(
        re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE)
        for value in avoid
        if value.strip()
    )


def _platform_words(text: str, avoid: tuple[str, ...], most: int = 20) -> str:
    """The start of ``text`` (at most ``most`` characters) before any digit or value of the order: the platform's
    words that follow a value ("Seat" in "Row 12 Seat 5")."""
    cut = min(most, len(text))
    digit = re.search(r"\d", text)
    cut = min(cut, digit.start()) if digit else cut
    for value in avoid:
        found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) if value.strip() else None
        cut = min(cut, found.start()) if found else cut
    return text[:cut].strip()


def _label_fit(label: str, avoid: tuple[str, ...]) -> bool:
    """Whether ``label`` is the platform's own words: short, no digits, no address, none of the order's values
    (a sentence such as "Maria Gonzalez sent you 2 tickets to" is not a label)."""
    text = label.strip()
    colon = text.endswith(":")
    text = text.rstrip(":").strip()
    if not text or len(text) > 40 or _NOT_A_LABEL.search(text) or len(text.split()) > (5 if colon else 3):
        return False
    return not _holds(text, avoid)


def _word(text: str, *, line_start: bool = False) -> str:
    """``text`` escaped, at a word boundary on each side where it starts or ends with a letter or digit (at the
    start of a line, ``^`` is the boundary)."""
    escaped = esc(text)
    head = "^" if line_start else "(?<!\\w)" if text[:1].isalnum() else ""
    tail = "(?!\\w)" if text[-1:].isalnum() else ""
    return f"{head}{escaped}{tail}"


def _anchor_above(lines: list[str], index: int, avoid: tuple[str, ...]) -> int | None:
    """The nearest line above ``index`` (within 4 lines) fit to anchor on: a heading of the platform's own words
    (no digits, no sentence, no address, none of the order's values — those change from mail to mail). Only
    blank lines and lines that are another of the order's values (the event's name above its venue) are
    skipped: a sentence between (the seller's, whose length changes with the seller) stops the search."""
    for i in range(index - 1, max(-1, index - 5), -1):
        line = lines[i].strip()
        if not line:
            continue
        if len(line.split()) <= 6 and not _NOT_A_LABEL.search(line) and not _holds(line, avoid):
            return i
        if not _value_line(line, avoid):
            return None
    return None


def _value_line(line: str, avoid: tuple[str, ...]) -> bool:
    """A line that is one of the order's values, with at most a few words after it ("GEHA Field, Kansas City, MO";
    "Sun, Dec 27, 2026 3:40 PM" — a start holds digits and no sentence)."""
    if re.fullmatch(r"[\w ,:/.-]{1,40}", line) and re.search(r"\d", line) and not re.search(r"[.!?]$", line):
        return True
    lower = line.lower()
    return any(
        lower.startswith(value.lower())
        and len(line[len(value) :].split()) <= 4
        and not line.endswith((".", "!"))
        for value in avoid
        if len(value) >= 3
    )


def _cells(line: str) -> list[tuple[int, int]]:
    """The (start, end) of a table line's cells: text separated by a tab or two spaces or more."""
    return [(m.start(), m.end()) for m in _CELL.finditer(line)]


def _table_pattern(lines: list[str], index: int, start: int, end: int, value: str, avoid) -> str:
    """A pattern reading the cell ``start:end`` of a table row by the header line above it, if there is one."""
    cells = _cells(lines[index])
    if index == 0 or not 2 <= len(cells) <= MAX_COLUMNS or (start, end) not in cells:
        return ""
    header = lines[index - 1]
    heads = _cells(header)
    if len(heads) != len(cells) or not all(_label_fit(header[a:b], avoid) for a, b in heads):
        return ""
    column = cells.index((start, end))
    skip = f"(?:{_CELL_TEXT}(?:\\t|[ ]{{2,}})[ \\t]*){{{column}}}" if column else ""
    head = "[ \\t]+".join(esc(header[a:b]) for a, b in heads)
    return f"^{head}[ \\t]*\\n{skip}(?P<value>{value if value != '.+?' else _CELL_TEXT})"


def label_pattern(
    lines: list[str], index: int, start: int, end: int, *, value: str = ".+?", avoid: tuple[str, ...] = ()
) -> str:
    """A pattern reading line ``index``'s characters ``start:end``: as a table's cell by its header, by the
    label before them on the line (back to the previous delimiter, matched as words), or by a line above when
    nothing precedes them. "" when the only text before them is not a label (a sentence, the order's values)."""
    table = _table_pattern(lines, index, start, end, value, avoid)
    if table:
        return table
    line = lines[index]
    before, after = line[:start], line[end:]
    pieces = DELIMITERS.split(before)
    label = pieces[-1] if pieces else ""
    anchored_at_start = label.strip() == before.strip()
    tail = ""
    delimiter = DELIMITERS.match(after)
    if after.strip() and delimiter:
        tail = f"(?={regex.escape(delimiter.group(0).strip())}|$)"
    elif after.strip():
        following = _platform_words(after.strip(), avoid)
        if re.search(r"\w", following):
            tail = f"(?=[ \\t]*{esc(following)})"
        elif value == ".+?":  # free text ended only by this order's values (", sent by Maria …"): not here
            return ""
        # else: a value of its own shape (a number, a date) needs no end
    else:
        tail = "[ \\t]*$"
    if label.strip() and not _label_fit(label, avoid):
        # "Section 114 Row 12": the label of a ticket field after the previous value, without a delimiter.
        last = _TICKET_LABEL.search(label)
        if last is None:
            return ""
        label, anchored_at_start = last.group(0), False
    if label.strip():
        head = _word(label.strip(), line_start=anchored_at_start) + "[ \\t]*"
        return f"{head}(?P<value>{value}){tail}"
    above = _anchor_above(lines, index, avoid)
    if above is not None:
        between = index - above - 1
        skip = f"(?:[^\\n]*\\n){{{between}}}" if between else ""
        return f"^{esc(lines[above].strip())}[ \\t]*\\n{skip}(?P<value>{value}){tail}"
    return ""


def _value_span(line: str, field_name: str) -> tuple[int, int]:
    """Where the value of ``field_name`` stands on a line staff picked: after the label naming the field (in its
    part of the line between bars, "Sec 114 | Row 12 | Seats 5, 6"; up to the next label of a ticket field,
    "Row A Seats 1, 2"), else after a label ended by a colon, a tab or spaces; the whole line when there is no
    label."""
    words = KEYWORDS.get(field_name, ())
    for found in _PART.finditer(line) if words else ():
        part_end = found.start() + len(found.group(0).rstrip())
        named = re.compile(rf"(?<!\w)(?:{'|'.join(words)})\b\.?[ \t]*:?[ \t]*", re.IGNORECASE)
        label = named.search(line, found.start(), part_end)
        if label and label.end() < part_end:
            other = _OTHER_LABEL.search(line, label.end(), part_end)
            return label.end(), other.start() if other else part_end
    split = _LABEL_VALUE.match(line)
    if split is not None:
        return split.start("value"), len(line.rstrip())
    return len(line) - len(line.lstrip()), len(line.rstrip())


def pattern_for_line(
    lines: list[str], number: int, field_name: str, *, avoid: tuple[str, ...] = ()
) -> tuple[str, str]:
    """(the pattern, a note) for a line staff picked: the value after its label (``Label: value``,
    ``Label    value``, ``Label<tab>value``, ``… | Label value | …``), a table row's cell under its header,
    or the whole line read by the line above it."""
    index = number - 1
    line = lines[index]
    if field_name == "accept_link":
        link = LINK.search(line)
        host = urlsplit(link.group(0)).hostname if link else ""
        pattern = f"(?P<value>https://{regex.escape(host or '')}/[^\\s<>\"'()\\[\\]]+)" if host else ""
        return pattern, "" if pattern else "no https link on this line"
    value = "\\d+" if field_name == "quantity" else ".+?"
    column = column_of(lines, index, field_name)
    start, end = column or _value_span(line, field_name)
    if field_name == "quantity":
        # The number after the label, else the line's first (a sentence's, which no pattern anchors on).
        digits = _NUMBER.search(line, start, end) or _NUMBER.search(line)
        if digits is None:
            return "", "no number on this line"
        start, end = digits.span()
    pattern = label_pattern(lines, index, start, end, value=value, avoid=avoid)
    return pattern, "" if pattern else NO_LABEL


def column_of(lines: list[str], index: int, field_name: str) -> tuple[int, int] | None:
    """The cell of a table row under the header naming ``field_name`` (the header is the line above)."""
    words = KEYWORDS.get(field_name, ())
    cells = _cells(lines[index])
    if index == 0 or not 2 <= len(cells) <= MAX_COLUMNS or not words:
        return None
    heads = _cells(lines[index - 1])
    if len(heads) != len(cells) or re.search(r"\d", lines[index - 1]):
        return None
    for (a, b), (ha, hb) in zip(cells, heads, strict=True):
        if re.fullmatch(rf"(?:{'|'.join(words)})\.?", lines[index - 1][ha:hb].strip(), re.IGNORECASE):
            return a, b
    return None
