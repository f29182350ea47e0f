"""The per-platform report of the admin's "Platform templates" page (selectors, read-only): the stored mail
(messages received, received automatically, cases by kind), the template versions in force, and the corpus of
captured e-mails measured as ``make transfer-corpus`` measures it (``orders.transfers.testing.corpus``, the same
function and the same figures)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db.models import Count

from orders.transfers.models import InboundMessage, PlatformTemplateVersion, TransferCase
from orders.transfers.reading import platforms
from orders.transfers.reading.selectors import platform_names, version_in_force
from orders.transfers.testing.corpus import corpus_run, corpus_summary


def corpus_folder() -> Path:
    """The captured e-mails ``make transfer-corpus`` reads (``TRANSFER_CORPUS``' default)."""
    return Path(settings.BASE_DIR) / "tests" / "fixtures" / "transfer_mail"


@dataclass
class PlatformRow:
    platform: str
    version: int | None
    version_pk: int | None
    source: str
    activated: str
    messages: int = 0
    authentic: int = 0
    auto_received: int = 0
    cases: dict[str, int] = field(default_factory=dict)
    open_unparsed: int = 0
    drafts: int = 0
    corpus: dict[str, int] | None = None


def platforms_report(*, with_corpus: bool = True) -> list[PlatformRow]:
    names = platform_names()
    summary = {}
    folder = corpus_folder()
    if with_corpus and folder.is_dir():
        summary = corpus_summary(corpus_run(folder, platforms.registry()))
    messages = {
        row["platform"]: row
        for row in InboundMessage.objects.filter(platform__in=names)
        .values("platform")
        .annotate(n=Count("pk"))
        .order_by()
    }
    authentic = dict(
        InboundMessage.objects.filter(platform__in=names, authentic=True)
        .values("platform")
        .annotate(n=Count("pk"))
        .values_list("platform", "n")
        .order_by()
    )
    auto = dict(
        InboundMessage.objects.filter(platform__in=names, outcome=InboundMessage.Outcome.MATCHED)
        .values("platform")
        .annotate(n=Count("pk"))
        .values_list("platform", "n")
        .order_by()
    )
    cases: dict[str, dict[str, int]] = {}
    for platform, kind, n in (
        TransferCase.objects.filter(message__platform__in=names)
        .values("message__platform", "kind")
        .annotate(n=Count("pk"))
        .values_list("message__platform", "kind", "n")
        .order_by()
    ):
        cases.setdefault(platform, {})[kind] = n
    open_unparsed = dict(
        TransferCase.objects.filter(
            message__platform__in=names,
            kind=TransferCase.Kind.UNPARSED,
            state__in=TransferCase.OPEN_STATES,
        )
        .values("message__platform")
        .annotate(n=Count("pk"))
        .values_list("message__platform", "n")
        .order_by()
    )
    drafts = dict(
        PlatformTemplateVersion.objects.filter(state=PlatformTemplateVersion.State.DRAFT)
        .values("platform")
        .annotate(n=Count("pk"))
        .values_list("platform", "n")
        .order_by()
    )
    rows = []
    for name in names:
        active = version_in_force(name)
        rows.append(
            PlatformRow(
                platform=name,
                version=active.version if active else (1 if name in summary or _shipped(name) else None),
                version_pk=active.pk if active else None,
                source=active.get_source_display() if active else ("Shipped file" if _shipped(name) else "—"),
                activated=(
                    f"{active.activated_at:%Y-%m-%d %H:%M} UTC by {active.activated_by}"
                    if active and active.activated_at
                    else ""
                ),
                messages=messages.get(name, {}).get("n", 0),
                authentic=authentic.get(name, 0),
                auto_received=auto.get(name, 0),
                cases=dict(sorted(cases.get(name, {}).items())),
                open_unparsed=open_unparsed.get(name, 0),
                drafts=drafts.get(name, 0),
                corpus=summary.get(name),
            )
        )
    return rows


def _shipped(name: str) -> bool:
    from orders.transfers.reading.templates_store import shipped_file

    return shipped_file(name) is not None
