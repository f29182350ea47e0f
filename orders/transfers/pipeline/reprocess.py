"""The open ``unparsed`` cases of a platform, and the ``unverified`` first mail of a platform the service did
not know, processed again once a new template version is in force (docs/staff-guide.md "Re-processing").

Each case's message goes through the whole processing again — authentication, parsing, matching and the
decision (``orders.transfers.pipeline.process``) — so an order moves only when everything holds, through the same
decision as a new message. Under the case's and the message's locks, and only while the case is still an open
``unparsed`` one: a second run (a task delivered twice, a second activation) changes nothing. A message the
version still cannot read leaves its case open, noting the version tried. Otherwise the case is closed
(resolution ``dismissed``, by ``system:transfers``) with the template version that decided it and what it
decided; a mismatch opens its own ``mismatch`` case, as for any message.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from orders.transfers.decision import state
from orders.transfers.intake.bounds import mime_shape
from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage, PlatformTemplateVersion, TransferCase
from orders.transfers.pipeline import process
from orders.transfers.reading import platforms

logger = logging.getLogger(__name__)
CS, Kind = TransferCase.State, TransferCase.Kind
ACTOR = "system:transfers"


# The cases a version in force processes again: unparsed mail, and the first mail of a platform the service
# did not know (``unverified``, its sender no platform's), whose registry entry the version may now hold.
AWAITING_TEMPLATE = Q(kind=Kind.UNPARSED) | Q(kind=Kind.UNVERIFIED, details__has_key="new_platform")


def awaits_template(case: TransferCase) -> bool:
    return case.kind == Kind.UNPARSED or (case.kind == Kind.UNVERIFIED and "new_platform" in case.details)


def platform_open_unparsed(platform: str) -> list[int]:
    return list(
        TransferCase.objects.filter(
            AWAITING_TEMPLATE, state__in=TransferCase.OPEN_STATES, message__platform=platform
        )
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )


def _tried(case: TransferCase, version: int | None, result: str) -> str:
    """Note on the case that ``version`` could not decide it yet; returns ``result``."""
    tried = list(case.details.get("reprocessed", []))
    tried.append({"template_version": version, "at": timezone.now().isoformat(), "result": result})
    case.details = {**case.details, "reprocessed": tried[-20:]}
    case.save(update_fields=["details", "updated_at"])
    return result


def _authenticated_beforehand(case_pk: int):
    """The case's raw message and its authentication, made before any lock is taken (DNS is asked)."""
    message = (
        InboundMessage.objects.select_related("order__event__venue", "order__partner")
        .filter(cases__pk=case_pk)
        .first()
    )
    if message is None or message.order is None:
        return None, None
    raw = raw_read(message)
    if raw is None or mime_shape(raw).problem:
        return raw, None
    return raw, process.authenticate(raw, message=message, order=message.order)


def case_reprocess(*, case_pk: int) -> str:
    """Process the case's message again with the templates in force; returns what happened."""
    raw, verdict = _authenticated_beforehand(case_pk)
    with transaction.atomic():
        # Race: the task delivered twice, or staff resolving the case meanwhile — the case is decided once.
        case = TransferCase.objects.select_for_update().get(pk=case_pk)
        if case.state not in TransferCase.OPEN_STATES or not awaits_template(case) or case.message_id is None:
            return "skipped"
        message = (
            InboundMessage.objects.select_for_update(of=("self",))
            .select_related("order__event__venue", "order__partner")
            .get(pk=case.message_id)
        )
        entry = platforms.registry().get(message.platform)
        version = entry.version if entry is not None else None
        if case.kind == Kind.UNVERIFIED:
            # The platform's entry now in force may make the mail authentic; read or not, it is then decided
            # as a new message would be (an unparsed case of its own when no template reads it yet).
            if verdict is None or not verdict.authentic:
                return _tried(case, version, "unverified")
        else:
            parsed = platforms.parse_with(entry, raw) if entry is not None and raw is not None else None
            if parsed is None or parsed.missing:
                return _tried(case, version, "unparsed")
        previous = {
            k: message.verdicts.get(k) for k in ("auth", "parse", "decision") if k in message.verdicts
        }
        message.verdicts = {**message.verdicts, "previous": previous}
        message.stage, message.outcome = InboundMessage.Stage.RECEIVED, InboundMessage.Outcome.PENDING
        outcome = process._run(message, raw, verdict)
        decided = message.verdicts.get("decision", {})
        if decided.get("case") == Kind.UNPARSED and decided.get("case_pk") == case.pk:
            return "unparsed"
        opened = f" ({decided['case']} case #{decided['case_pk']})" if decided.get("case_pk") else ""
        summary = f"Processed again with the {message.platform} template version {version}: {outcome or 'waiting'}{opened}"
        case.details = {
            **case.details,
            "decided_by": {"platform": message.platform, "template_version": version, "outcome": outcome},
        }
        case.save(update_fields=["details", "updated_at"])
        state.case_move(
            case=case,
            to=CS.RESOLVED,
            actor=ACTOR,
            reason=summary,
            resolution=TransferCase.Resolution.DISMISSED,
        )
    logger.info("Transfer case %s processed again: %s", case_pk, outcome)
    return outcome or "waiting"


def platform_cases_reprocess(*, version_pk: int) -> dict[str, int]:
    """Every open ``unparsed`` case of the version's platform, while the version is still the one in force."""
    version = PlatformTemplateVersion.objects.get(pk=version_pk)
    results: dict[str, int] = {}
    if version.state != PlatformTemplateVersion.State.ACTIVE:
        return results
    for case_pk in platform_open_unparsed(version.platform):
        outcome = case_reprocess(case_pk=case_pk)
        results[outcome] = results.get(outcome, 0) + 1
    return results


def platform_cases_reprocess_due() -> int:
    """The sweep behind a lost activation message: each staff version in force processes the open unparsed
    cases of its platform opened before its activation that no run of it has tried yet."""
    done = 0
    versions = PlatformTemplateVersion.objects.filter(
        state=PlatformTemplateVersion.State.ACTIVE, source=PlatformTemplateVersion.Source.STAFF
    )
    for version in versions:
        cases = TransferCase.objects.filter(
            AWAITING_TEMPLATE,
            state__in=TransferCase.OPEN_STATES,
            message__platform=version.platform,
            created_at__lt=version.activated_at,
        ).only("pk", "details")
        for case in cases:
            tried = {t.get("template_version") for t in case.details.get("reprocessed", [])}
            if version.version not in tried:
                case_reprocess(case_pk=case.pk)
                done += 1
    return done
