"""Putting a template version in force (docs/staff-guide.md "Activate under four eyes").

- A version that changes the sender domains or accept-link hosts (what makes a mail authentic) is activated
  only once a second staff member, not its author, approved it (``version_approve``; the admin asks for
  ``transfers.approve_platform_registry``). Extraction changes alone need ``manage_platform_templates``.
- Activation tries the version against the stored mail again (``trial.template_trial``) and is refused while a
  single message would be received automatically against a different staff outcome.
- The version in force becomes ``superseded``, this one ``active``; after the commit the platform's open
  ``unparsed`` cases are processed again (``orders.transfers.tasks.platform_cases_reprocess``).
Every move goes through the template machine and its history (the platform's history).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from config.core.publish import publish_on_commit
from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading.templates_store import TEMPLATE_MACHINE, data_validate, versions_seed
from orders.transfers.reading.trial import template_trial

V = PlatformTemplateVersion


class Refused(Exception):
    """The step does not apply (any more): the message says why; nothing was changed."""


def _locked_draft(version_pk: int) -> V:
    # Race: two staff approving, activating or discarding one version at once (a second tab, a resubmitted
    # form) — the second finds it no longer a draft.
    version = V.objects.select_for_update().get(pk=version_pk)
    if version.state != V.State.DRAFT:
        raise Refused(
            f"Version {version.version} of {version.platform} is {version.get_state_display().lower()}."
        )
    return version


def version_approve(*, version_pk: int, actor: str, reason: str) -> V:
    """The second pair of eyes on a registry change: anyone but its author."""
    with transaction.atomic():
        version = _locked_draft(version_pk)
        if not version.registry_change:
            raise Refused("This version does not change the sender domains or accept-link hosts.")
        if version.approved_by:
            raise Refused(f"Already approved by {version.approved_by}.")
        if actor == version.created_by:
            raise Refused("A registry change needs a second staff member: its author cannot approve it.")
        version.approved_by, version.approved_at = actor, timezone.now()
        version.save(update_fields=["approved_by", "approved_at"])
        TEMPLATE_MACHINE.record(
            obj=version,
            from_state=version.state,
            to_state=version.state,
            actor=actor,
            reason=f"Approved the sender domains and accept-link hosts: {reason}",
        )
    return version


def version_activate(*, version_pk: int, actor: str, reason: str) -> V:
    """Put the version in force; ``Refused`` says why not."""
    with transaction.atomic():
        version = _locked_draft(version_pk)
        data_validate(version.data, platform=version.platform)
        if version.registry_change and not version.approved_by:
            raise Refused(
                "It changes the sender domains or accept-link hosts: a second staff member must approve it first."
            )
        trial = template_trial(platform=version.platform, data=version.data)
        if trial.stopped:
            raise Refused(
                "The test against the stored mail ran out of time: it cannot show the version is safe."
            )
        if trial.disagreeing:
            pks = ", ".join(str(row.message.pk) for row in trial.disagreeing)
            raise Refused(
                f"{len(trial.disagreeing)} stored message(s) would be received automatically against a different "
                f"staff outcome (inbound messages {pks}): correct the template and test again."
            )
        versions_seed(platform=version.platform)
        current = (
            V.objects.select_for_update().filter(platform=version.platform, state=V.State.ACTIVE).first()
        )
        if current is not None:
            TEMPLATE_MACHINE.move(
                obj=current,
                to=V.State.SUPERSEDED,
                actor=actor,
                reason=f"Replaced by version {version.version}",
            )
        version, _ = TEMPLATE_MACHINE.move(
            obj=version,
            to=V.State.ACTIVE,
            actor=actor,
            reason=reason,
            changes={
                "activated_by": actor,
                "activated_at": timezone.now(),
                "trial": {
                    "messages": len(trial.rows),
                    "counts": trial.counts,
                    "at": timezone.now().isoformat(),
                },
            },
        )
        publish_on_commit("orders.transfers.tasks.platform_cases_reprocess", version.pk)
    return version


def version_discard(*, version_pk: int, actor: str, reason: str) -> V:
    with transaction.atomic():
        version = _locked_draft(version_pk)
        version, _ = TEMPLATE_MACHINE.move(obj=version, to=V.State.DISCARDED, actor=actor, reason=reason)
    return version
