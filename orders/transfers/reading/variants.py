"""Variants of a stored mail for the test of a template version (docs/staff-guide.md "Test before use").

A template made from one mail may read only that mail: a pattern anchored on the seller's sentence or on this
order's seats reads nothing (or the wrong thing) in the next order's mail. So for each stored offer the version
would receive automatically, the test also reads *variants* of the mail's text in which the order's values are
replaced by other plausible ones — another seller, event name, section, row and seats, and a second variant with
one ticket more — and a variant read wrong or not at all refuses the activation.

A value is replaced wherever it stands as a token of the text (a number, a name of three characters or more),
except inside what the version reads as the start, the venue and the accept link, which the variants keep;
a short value ("A") only where the version reads it. The expected reading of a variant is the original reading
with the new values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orders.transfers.reading import platforms
from orders.transfers.reading.layout import seller_name
from orders.transfers.reading.matching import normalise, seats_normalise
from orders.transfers.reading.platforms.text import MailText
from orders.transfers.verdicts import ParsedMail

OTHER_SELLERS = ("Devon Brooks", "Priya Raman")
OTHER_EVENTS = ("Harbour Lights Gala", "Northern Stars Tour")
KEPT = ("start", "venue", "accept_link")
_PREFIX = re.compile(r"^(?:section|sect|sec|row)\b\.?\s*", re.IGNORECASE)
_SEAT_SEPARATOR = r"\s*(?:,|;|/|&|\band\b)\s*"


@dataclass
class VariantRead:
    """One variant of a stored mail and how the version read it."""

    changes: list[str]
    reads: dict = field(default_factory=dict)
    # The fields read wrong or not at all ("no kind (the subject)" when the subject is not recognised).
    wrong: list[str] = field(default_factory=list)

    @property
    def wrong_text(self) -> str:
        """Each field read wrong and what it read: "event (read: nothing)"."""
        return ", ".join(f"{name} (read: {self.reads.get(name) or 'nothing'})" for name in self.wrong)


def _other(value: str, step: int = 13) -> str:
    """Another value of the same shape: each number moved on, each letter moved on by two."""

    def letter(ch: str) -> str:
        base = ord("A") if ch.isupper() else ord("a")
        return chr(base + (ord(ch) - base + 2) % 26)

    moved = re.sub(r"\d+", lambda m: str(int(m.group(0)) + step), value)
    return "".join(letter(ch) if ch.isascii() and ch.isalpha() else ch for ch in moved)


def _bare(value: str) -> str:
    """A section or row without its "Section"/"Row" word."""
    return _PREFIX.sub("", value).strip()


def _pick(choices: tuple[str, ...], current: str) -> str:
    return next(c for c in choices if normalise(c) != normalise(current))


def _spans(template: platforms.Platform, mail: MailText, kind: str) -> dict[str, tuple[int, int]]:
    """Where the version reads each field in the text."""
    spans = {}
    for name, pattern in template.kinds[kind].fields.items():
        found = platforms.pattern_search(pattern, mail.text)
        if found and found.group("value"):
            spans[name] = found.span("value")
    return spans


_HEAD, _TAIL = r"(?<![\w/@.:-])", r"(?![\w/@:-])"  # a token: not part of a word, a link or an address


def _token(value: str) -> str:
    """``value`` as a token of the text, its spaces any run of spaces (the version reads values with their
    whitespace folded)."""
    return _HEAD + r"[ \t]+".join(re.escape(word) for word in value.split()) + _TAIL


@dataclass(frozen=True)
class Swap:
    """One of the order's values and the value a variant writes instead."""

    field: str
    old: str  # as the mail writes it ("5, 6" for the seats)
    new: object  # a string, or a function of the match (the seats, written with the mail's separator)
    pattern: str = ""  # how to find it, when not as a token

    def finditer(self, text: str):
        return re.finditer(self.pattern or _token(self.old), text, re.IGNORECASE)


def _edits(text: str, swaps: list[Swap], spans: dict, kept: list, taken: list[str]) -> str:
    """``text`` with each swap made: everywhere as a token when its old value is distinctive (a number or three
    characters or more, no other of the order's values ``taken`` equal to it), else only where the version reads
    the field; never inside ``kept`` spans."""
    edits = []
    for swap in swaps:
        distinctive = (len(swap.old) >= 3 or swap.old.isdigit()) and taken.count(normalise(swap.old)) <= 1
        where = [(0, len(text))] if distinctive else [spans[swap.field]] if swap.field in spans else []
        for low, high in where:
            for found in swap.finditer(text[low:high]):
                a, b = low + found.start(), low + found.end()
                if not any(a < k_high and k_low < b for k_low, k_high in kept):
                    edits.append((a, b, swap.new(found) if callable(swap.new) else swap.new))
    edits.sort(key=lambda e: (e[0], -(e[1] - e[0])))
    out, at = [], 0
    for a, b, new in edits:
        if a >= at:
            out += [text[at:a], new]
            at = b
    return "".join(out) + text[at:]


def variants(
    template: platforms.Platform, mail: MailText, parsed: ParsedMail
) -> list[tuple[list[str], MailText, dict]]:
    """(what changed, the variant's text, the reading expected) for each variant of ``mail``."""
    spans = _spans(template, mail, parsed.kind)
    kept = [spans[name] for name in KEPT if name in spans]
    seller = seller_name(mail.text)
    # The order's values that may stand for one another (a single seat "1" and one ticket).
    taken = [
        normalise(v) for v in (str(parsed.quantity), _bare(parsed.section), _bare(parsed.row), *parsed.seats)
    ]
    out = []
    for more in (0, 1):
        expected = {
            "event": parsed.event_name,
            "venue": parsed.venue_name,
            "start": parsed.starts_at_local,
            "section": parsed.section,
            "row": parsed.row,
            "seats": list(parsed.seats),
            "quantity": parsed.quantity + more,
            "accept_link": parsed.accept_link,
        }
        swaps: list[Swap] = []
        changes = []
        if seller:
            swaps.append(Swap("seller", seller, _pick(OTHER_SELLERS, seller)))
            changes.append(f"seller {seller} → {swaps[-1].new}")
        if parsed.event_name:
            expected["event"] = _pick(OTHER_EVENTS, parsed.event_name)
            swaps.append(Swap("event", parsed.event_name, expected["event"]))
            changes.append(f"event {parsed.event_name} → {expected['event']}")
        for name, step in (("section", 13), ("row", 7)):
            bare = _bare(getattr(parsed, name))
            if bare:
                swaps.append(Swap(name, bare, _other(bare, step)))
                expected[name] = getattr(parsed, name).replace(bare, _other(bare, step))
                changes.append(f"{name} {bare} → {_other(bare, step)}")
        if parsed.seats:
            seats = [_other(seat, 17) for seat in parsed.seats]
            seats += [_other(parsed.seats[-1], 18 + n) for n in range(more)]
            listed = _HEAD + _SEAT_SEPARATOR.join(re.escape(seat) for seat in parsed.seats) + _TAIL

            def rewrite(found, seats=seats):
                separator = re.search(_SEAT_SEPARATOR, found.group(0))
                return (separator.group(0) if separator else ", ").join(seats)

            swaps.append(Swap("seats", ", ".join(parsed.seats), rewrite, listed))
            expected["seats"] = seats
            changes.append(f"seats {', '.join(parsed.seats)} → {', '.join(seats)}")
        if more:
            swaps.append(Swap("quantity", str(parsed.quantity), str(parsed.quantity + 1)))
            changes.append(f"{parsed.quantity} → {parsed.quantity + 1} tickets")
        text = _edits(mail.text, swaps, spans, kept, taken)
        in_subject = [swap for swap in swaps if swap.field in ("seller", "event", "quantity")]
        subject = _edits(mail.subject, in_subject, {}, [], taken)
        out.append((changes, MailText(subject, mail.from_addresses, text), expected))
    return out


def _wrong(parsed: ParsedMail | None, expected: dict) -> list[str]:
    if parsed is None:
        return ["no kind (the subject)"]
    read = {
        "event": normalise(parsed.event_name) == normalise(expected["event"]),
        "venue": normalise(parsed.venue_name) == normalise(expected["venue"]),
        "start": parsed.starts_at_local == expected["start"],
        "section": normalise(parsed.section, prefixes=True) == normalise(expected["section"], prefixes=True),
        "row": normalise(parsed.row, prefixes=True) == normalise(expected["row"], prefixes=True),
        "seats": seats_normalise(parsed.seats) == seats_normalise(expected["seats"]),
        "quantity": parsed.quantity == expected["quantity"],
        "accept_link": parsed.accept_link == expected["accept_link"],
    }
    return sorted({*parsed.missing, *(name for name, ok in read.items() if not ok)})


def variants_read(template: platforms.Platform, mail: MailText, parsed: ParsedMail) -> list[VariantRead]:
    """Each variant of ``mail`` read by ``template``, with the fields it reads wrong."""
    results = []
    for changes, variant, expected in variants(template, mail, parsed):
        read = platforms.parse_text(template, variant)
        reads = {}
        if read is not None:
            reads = {
                "event": read.event_name,
                "venue": read.venue_name,
                "start": read.starts_at_local,
                "section": read.section,
                "row": read.row,
                "seats": ", ".join(read.seats),
                "quantity": read.quantity,
                "accept_link": read.accept_link,
            }
        results.append(VariantRead(changes=changes, reads=reads, wrong=_wrong(read, expected)))
    return results
