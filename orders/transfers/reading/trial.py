"""A template version tried against every stored authentic message of its platform, read-only
(docs/staff-guide.md "Test before use").

For each message whose raw bytes the receiver kept: what the version would read, and what it would do —
``move`` (a matching offer: the order would be received automatically), ``mismatch``, ``accepted``,
``recall`` or ``unparsed`` — beside what staff decided for that message (the resolution of its case, when a
staff member resolved one) and what the service did. A message the version would receive automatically while
staff decided otherwise (dismissed, forged, asked the seller…) *disagrees*: a version is activated only when
none does. Each message the version would receive automatically is read again in variants, its order's values
replaced by other plausible ones (``variants``): a version that reads a variant wrong or not at all — a template
fitted to one mail — is not activated either. Nothing is written: no order, message, case or evidence changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.reading import platforms
from orders.transfers.reading.matching import match
from orders.transfers.reading.variants import VariantRead, variants_read

R = TransferCase.Resolution
MAX_MESSAGES = 500
MAX_SECONDS = 30.0  # the whole run: each pattern has its own limit besides (platforms.PATTERN_SECONDS)
# Staff outcomes that agree with the order being received automatically.
RECEIVED_BY_STAFF = (R.MARKED_RECEIVED, R.ACCEPTED_ON_PLATFORM)
AUTOMATIC = ("move",)


@dataclass
class TrialRow:
    message: InboundMessage
    kind: str
    would: str
    extracted: dict
    staff_outcome: str
    service_outcome: str
    problems: list[str] = field(default_factory=list)
    variants: list[VariantRead] = field(default_factory=list)

    @property
    def variants_wrong(self) -> list[VariantRead]:
        return [variant for variant in self.variants if variant.wrong]

    @property
    def disagrees(self) -> bool:
        return (
            self.would in AUTOMATIC
            and bool(self.staff_outcome)
            and self.staff_outcome not in RECEIVED_BY_STAFF
        )


@dataclass
class Trial:
    platform: str
    rows: list[TrialRow]
    skipped: int = 0  # raw purged
    stopped: bool = False  # the run reached its time limit: the rest was not tried

    @property
    def disagreeing(self) -> list[TrialRow]:
        return [row for row in self.rows if row.disagrees]

    @property
    def variants_wrong(self) -> list[TrialRow]:
        """The messages a variant of which the version reads wrong or not at all."""
        return [row for row in self.rows if row.variants_wrong]

    @property
    def counts(self) -> dict[str, int]:
        counts = {
            "messages": len(self.rows),
            "disagree": len(self.disagreeing),
            "variants": sum(len(row.variants) for row in self.rows),
            "variants_wrong": sum(len(row.variants_wrong) for row in self.rows),
        }
        for row in self.rows:
            counts[row.would] = counts.get(row.would, 0) + 1
        return counts

    @property
    def passes(self) -> bool:
        return not self.disagreeing and not self.variants_wrong and not self.stopped


def staff_outcome(message: InboundMessage) -> str:
    """The resolution a staff member gave the message's latest resolved case ("" if none)."""
    resolved = [
        c
        for c in message.cases.all()
        if c.state == TransferCase.State.RESOLVED and c.resolved_by.startswith("staff:")
    ]
    return max(resolved, key=lambda c: (c.resolved_at, c.pk)).resolution if resolved else ""


def _would(parsed, order) -> tuple[str, list[str]]:
    if parsed is None:
        return "unparsed", ["no kind recognised by the subject"]
    if parsed.missing:
        return "unparsed", [f"missing: {', '.join(parsed.missing)}"]
    if parsed.kind == "transfer_accepted":
        return "accepted", []
    if parsed.kind == "transfer_canceled":
        return "recall", []
    if order is None:
        return "unparsed", ["the order no longer exists"]
    result = match(parsed, order)
    wrong = [name for name, f in result.fields.items() if not f["ok"]]
    return ("move", []) if result.matched else ("mismatch", [f"differs: {', '.join(wrong)}"])


def template_trial(*, platform: str, data: dict) -> Trial:
    """``data`` (a version's template) against the platform's stored authentic messages, newest first."""
    from orders.transfers.reading.templates_store import data_validate

    template = data_validate(data, platform=platform)
    messages = (
        InboundMessage.objects.filter(platform=platform, authentic=True)
        .select_related("order__event__venue")
        .prefetch_related("cases")
        .order_by("-received_at", "-pk")[:MAX_MESSAGES]
    )
    trial = Trial(platform=platform, rows=[])
    deadline = time.monotonic() + MAX_SECONDS
    for message in messages:
        if time.monotonic() > deadline:
            trial.stopped = True
            break
        raw = raw_read(message)
        if raw is None:
            trial.skipped += 1
            continue
        mail = platforms.mail_text(raw)
        parsed = platforms.parse_text(template, mail)
        would, problems = _would(parsed, message.order)
        extracted = {}
        if parsed is not None:
            extracted = {
                k: ", ".join(v) if isinstance(v, list) else v
                for k, v in parsed.as_json().items()
                if k not in ("text", "missing", "platform", "kind")
            }
        trial.rows.append(
            TrialRow(
                message=message,
                kind=parsed.kind if parsed is not None else "",
                would=would,
                extracted=extracted,
                staff_outcome=staff_outcome(message),
                service_outcome=message.get_outcome_display(),
                problems=problems,
                variants=variants_read(template, mail, parsed) if would in AUTOMATIC else [],
            )
        )
    return trial
