"""A parsed transfer e-mail against its order: exact after normalising, field by field
(docs/operations/receiving-mail.md "Platform templates and the corpus").

Normalising: Unicode NFKC, case, runs of whitespace, the prefixes "Section", "Sec", "Sect" and "Row", and
leading zeros of every number ("Sec. 007" and "section 7" are the same). Compared:

- the event start in venue time (``order.event.starts_at`` in ``order.event.zone``, to the minute);
- the event name or the venue name (platforms name events their own way: either one equal is enough);
- the section and the row (against the order's name or its display name), except for general admission;
- the seats: distinct after normalising, no more than the order's quantity, and as many as the mail's ticket
  count says; general admission: the ticket count only (at least 1, at most the order's quantity).

A similarity score (rapidfuzz) is recorded for each field that differs, to explain the mismatch to staff: it
never makes a field match.
"""

from __future__ import annotations

import re
import unicodedata

from rapidfuzz import fuzz

from orders.models import Order
from orders.transfers.verdicts import MatchResult, ParsedMail

_PREFIX = re.compile(r"^(?:section|sect|sec|row)\b\.?\s*", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-"})


def normalise(value: str, *, prefixes: bool = False) -> str:
    """Case, whitespace, typographic quotes and dashes, leading zeros; with ``prefixes`` also a leading
    "Section"/"Sec"/"Sect"/"Row" word."""
    value = unicodedata.normalize("NFKC", str(value or "")).translate(_QUOTES)
    value = " ".join(value.split()).lower()
    if prefixes:
        previous = None
        while previous != value:
            previous, value = value, _PREFIX.sub("", value).strip()
    return _NUMBER.sub(lambda m: str(int(m.group(0))), value)


def seats_normalise(seats: list[str]) -> list[str]:
    """The distinct normalised seats, in the mail's order."""
    return list(dict.fromkeys(s for s in (normalise(seat) for seat in seats) if s))


def order_start_local(order: Order) -> str:
    return order.event.starts_at.astimezone(order.event.zone).strftime("%Y-%m-%d %H:%M")


def _similarity(a: str, b: str) -> float:
    return round(fuzz.ratio(a, b) / 100.0, 2)


def _field(order_values: list[str], mail_value: str, *, prefixes: bool = False) -> dict:
    wanted = [v for v in dict.fromkeys(order_values) if v]
    mail_norm = normalise(mail_value, prefixes=prefixes)
    ok = bool(mail_norm) and any(normalise(v, prefixes=prefixes) == mail_norm for v in wanted)
    result = {"order": wanted[0] if len(wanted) == 1 else wanted, "mail": mail_value, "ok": ok}
    if not ok:
        result["similarity"] = max(
            (_similarity(normalise(v, prefixes=prefixes), mail_norm) for v in wanted), default=0.0
        )
    return result


def match(parsed: ParsedMail, order: Order) -> MatchResult:
    """``parsed`` against ``order``: ``matched`` only when every compared field is equal after normalising."""
    event = order.event
    fields: dict[str, dict] = {}
    fields["start"] = _field([order_start_local(order)], parsed.starts_at_local)
    event_field = _field([event.name], parsed.event_name)
    venue_field = _field([event.venue.name], parsed.venue_name)
    fields["event"], fields["venue"] = event_field, venue_field
    # Either name is enough; the other, when it differs, is still shown.
    name_ok = event_field["ok"] or venue_field["ok"]
    checked = [fields["start"]["ok"], name_ok]
    if not order.general_admission:
        fields["section"] = _field(
            [order.section_name, order.section_name_display], parsed.section, prefixes=True
        )
        fields["row"] = _field([order.row_name, order.row_name_display], parsed.row, prefixes=True)
        checked += [fields["section"]["ok"], fields["row"]["ok"]]
    seats = seats_normalise(parsed.seats)
    if order.general_admission:
        quantity = parsed.quantity
        ok = 1 <= quantity <= order.quantity
        fields["quantity"] = {"order": order.quantity, "mail": quantity, "ok": ok}
        checked.append(ok)
    else:
        quantity = len(seats)
        repeated = len(seats) != len([s for s in parsed.seats if normalise(s)])
        ok = 1 <= quantity <= order.quantity and not repeated and (parsed.quantity in (0, quantity))
        problem = (
            "no seats"
            if not seats
            else "a seat repeats"
            if repeated
            else f"{quantity} seats, more than the order's {order.quantity}"
            if quantity > order.quantity
            else f"{quantity} seats listed, {parsed.quantity} tickets said"
            if not ok
            else ""
        )
        fields["seats"] = {"order": order.quantity, "mail": seats, "ok": ok}
        if problem:
            fields["seats"]["problem"] = problem
        checked.append(ok)
    return MatchResult(matched=all(checked), fields=fields, seats=seats, quantity=quantity)
