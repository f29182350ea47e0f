"""The platform templates against a corpus of captured transfer e-mails (``make transfer-corpus``;
docs/operations/receiving-mail.md "Platform templates and the corpus").

The corpus is a folder per platform (``tests/fixtures/transfer_mail/<platform>/``) of ``.eml`` files, each
with a ``.json`` beside it: the order it was sent for (``order``), what a person reading it says it is
(``truth``: ``match``, ``mismatch`` or ``unparsed``) and the expected result (``expected``: the parse, the
match and the decision). Messages of one ``series`` (per-ticket mails for one order) add up in file-name
order, by distinct seats, as the service adds up an order's evidence. Authentication is not part of it (the
files are captured mail, replayed outside their DKIM window): the corpus measures reading and matching.

    python -m orders.transfers.testing.corpus tests/fixtures/transfer_mail

prints per platform the messages, those received automatically, the cases (unparsed or mismatch) and the
mismatches received automatically (a person says mismatch, the service would have moved the order: must be
0); exits 1 if that is not 0 anywhere.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from orders.transfers.reading import platforms

AUTOMATIC = ("received", "partial")


@dataclass
class Result:
    name: str
    platform: str
    truth: str
    parse: dict | None
    match: dict | None
    decision: str
    expected: dict = field(default_factory=dict)

    def as_expected(self) -> dict:
        return {"parse": self.parse, "match": self.match, "decision": self.decision}


def corpus_order(spec: dict):
    """An unsaved order (with its event and venue) as the fixture describes it."""
    # Imported here: ``python -m`` runs this module before Django is set up (``main``).
    from catalog.models import Event, Venue
    from orders.models import Order

    zone = ZoneInfo(spec.get("timezone", "America/New_York"))
    start = datetime.strptime(spec["starts_at_local"], "%Y-%m-%d %H:%M").replace(tzinfo=zone)
    venue = Venue(name=spec["venue"], timezone=zone.key)
    event = Event(
        name=spec["event"], venue=venue, starts_at=start, timezone=zone.key, event_date=start.date()
    )
    return Order(
        event=event,
        quantity=spec["quantity"],
        section_name=spec.get("section_name", ""),
        section_name_display=spec.get("section_name_display", ""),
        row_name=spec.get("row_name", ""),
        row_name_display=spec.get("row_name_display", ""),
        general_admission=spec.get("general_admission", False),
        primary_site=spec.get("primary_site", "sandbox"),
        livemode=spec.get("livemode", False),
    )


def corpus_run(folder: Path | str, registry: platforms.Registry | None = None) -> list[Result]:
    """Every fixture of every platform folder under ``folder``, in file-name order, read with ``registry``
    (default: the template files; ``main`` and the admin's report pass the registry in force)."""
    from orders.transfers.reading.matching import match

    registry = registry if registry is not None else platforms.files_registry()

    results: list[Result] = []
    for platform_dir in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        seen: dict[str, set[str] | int] = {}
        for eml in sorted(platform_dir.glob("*.eml")):
            meta = json.loads(eml.with_suffix(".json").read_text(encoding="utf-8"))
            order = corpus_order(meta["order"])
            template = registry.get(platform_dir.name)
            parsed = platforms.parse_with(template, eml.read_bytes()) if template is not None else None
            parse_json = (
                None if parsed is None else {k: v for k, v in parsed.as_json().items() if k != "text"}
            )
            match_json, decision = None, "unparsed"
            if parsed is not None and not parsed.missing:
                result = match(parsed, order)
                match_json = {"matched": result.matched, "seats": result.seats, "quantity": result.quantity}
                if parsed.kind != "transfer_offer":
                    decision = parsed.kind
                elif not result.matched:
                    decision = "mismatch"
                else:
                    series = meta.get("series", eml.stem)
                    if order.general_admission:
                        seen[series] = int(seen.get(series, 0)) + result.quantity
                        detected = seen[series]
                    else:
                        seen[series] = set(seen.get(series, set())) | set(result.seats)
                        detected = len(seen[series])
                    decision = "received" if detected >= order.quantity else "partial"
            results.append(
                Result(
                    name=eml.name,
                    platform=platform_dir.name,
                    truth=meta.get("truth", ""),
                    parse=parse_json,
                    match=match_json,
                    decision=decision,
                    expected=meta.get("expected", {}),
                )
            )
    return results


def corpus_summary(results: list[Result]) -> dict[str, dict[str, int]]:
    summary: dict[str, dict[str, int]] = {}
    for r in results:
        row = summary.setdefault(
            r.platform, {"messages": 0, "auto_received": 0, "cases": 0, "mismatches_auto_received": 0}
        )
        row["messages"] += 1
        row["auto_received"] += r.decision == "received"
        row["cases"] += r.decision in ("unparsed", "mismatch")
        row["mismatches_auto_received"] += r.truth == "mismatch" and r.decision in AUTOMATIC
    return summary


def main(argv: list[str]) -> int:
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    folder = argv[0] if argv else "tests/fixtures/transfer_mail"
    results = corpus_run(folder, platforms.registry())
    summary = corpus_summary(results)
    print(
        f"{'platform':<12} {'messages':>8} {'auto-received':>13} {'cases':>5} {'mismatches auto-received':>24}"
    )
    for name, row in summary.items():
        print(
            f"{name:<12} {row['messages']:>8} {row['auto_received']:>13} {row['cases']:>5} "
            f"{row['mismatches_auto_received']:>24}"
        )
    differ = [r.name for r in results if r.expected and r.as_expected() != r.expected]
    if differ:
        print("differ from their expected result: " + ", ".join(differ))
    return 1 if differ or any(row["mismatches_auto_received"] for row in summary.values()) else 0


if __name__ == "__main__":  # pragma: no cover - the Makefile's entry point
    sys.exit(main(sys.argv[1:]))
