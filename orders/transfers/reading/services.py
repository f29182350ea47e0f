"""The reading stage's writes: staff's platform template versions, recorded (``version_create``; the shipped
file as version 1, ``versions_seed``) and put in force (docs/staff-guide.md "Activate under four eyes").

- A version that changes the sender domains or accept-link hosts (what makes a mail authentic) is activated
  only once a second staff member, not its author, approved it (``version_approve``; the admin asks for
  ``transfers.approve_platform_registry``). The change is measured against what is in force when the version
  is approved and again when it is activated: an approval given against other sender domains or hosts than
  those in force at activation no longer counts. Extraction changes alone need ``manage_platform_templates``.
- Activation tries the version against the stored mail again (``trial.template_trial``) and is refused while a
  single message would be received automatically against a different staff outcome, or while a variant of a
  stored mail (its order's values replaced by others) is read wrong or not at all.
- The version in force becomes ``superseded``, this one ``active``; after the commit the platform's open
  ``unparsed`` cases, and the ``unverified`` ones of its first mail when the service did not know it yet, are
  processed again (``orders.transfers.tasks.platform_cases_reprocess``).
Every move goes through the template machine and its history (the platform's history).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from config.core.publish import publish_on_commit
from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading.selectors import data_in_force, registry_in_force
from orders.transfers.reading.templates_store import (
    SHIPPED_ACTOR,
    TEMPLATE_MACHINE,
    TemplateInvalid,
    data_validate,
    registry_part,
    shipped_data,
)
from orders.transfers.reading.trial import template_trial

V = PlatformTemplateVersion


class Refused(Exception):
    """The step does not apply (any more): the message says why; nothing was changed."""


def versions_seed(*, platform: str) -> V | None:
    """Record the shipped file as version 1 (in force) when the platform has no version yet."""
    data = shipped_data(platform)
    if data is None or V.objects.filter(platform=platform).exists():
        return None
    try:
        with transaction.atomic():
            seeded = V.objects.create(
                platform=platform,
                version=1,
                data=data,
                state=V.State.ACTIVE,
                source=V.Source.SHIPPED,
                reason="The shipped template file",
                created_by=SHIPPED_ACTOR,
                activated_by=SHIPPED_ACTOR,
            )
            seeded.activated_at = seeded.created_at
            seeded.save(update_fields=["activated_at"])
            TEMPLATE_MACHINE.record(
                obj=seeded, from_state="", to_state=V.State.ACTIVE, actor=SHIPPED_ACTOR, reason=seeded.reason
            )
    except IntegrityError:  # seeded by another request at the same moment
        return None
    return seeded


def version_create(
    *,
    platform: str,
    data: dict,
    actor: str,
    reason: str,
    learned_from=None,
    based_on: int | None = None,
) -> V:
    """A new draft version of ``platform``; ``TemplateInvalid`` when the data does not validate."""
    platform = platform.strip().lower()
    if not platform or len(platform) > 32 or not platform.replace("_", "").replace("-", "").isalnum():
        raise TemplateInvalid("A platform's name is up to 32 letters, digits, '-' or '_'.")
    data = {**data, "platform": platform}
    data_validate(data, platform=platform)
    if not reason.strip():
        raise TemplateInvalid("Say why: the reason is kept in the platform's history.")
    versions_seed(platform=platform)
    for _ in range(3):
        try:
            with transaction.atomic():
                number = (V.objects.filter(platform=platform).aggregate(n=Max("version"))["n"] or 0) + 1
                # Race: two staff saving a version of one platform at once — the unique (platform, version)
                # constraint refuses the second number, which is then taken again.
                created = V.objects.create(
                    platform=platform,
                    version=number,
                    data=data,
                    based_on=based_on,
                    learned_from=learned_from,
                    registry_change=registry_part(data) != registry_part(data_in_force(platform)),
                    reason=reason.strip()[:500],
                    created_by=actor,
                )
                TEMPLATE_MACHINE.record(
                    obj=created, from_state="", to_state=V.State.DRAFT, actor=actor, reason=created.reason
                )
                return created
        except IntegrityError:
            continue
    raise TemplateInvalid("Another version was saved at the same moment: save again.")


def _locked_draft(version_pk: int) -> V:
    # Race: two staff approving, activating or discarding one version at once (a second tab, a resubmitted
    # form) — the second finds it no longer a draft.
    version = V.objects.select_for_update().get(pk=version_pk)
    if version.state != V.State.DRAFT:
        raise Refused(
            f"Version {version.version} of {version.platform} is {version.get_state_display().lower()}."
        )
    return version


def _locked_platform(version: V) -> dict:
    """Lock the platform's versions against another approval or activation and return the registry in force.

    The platform's first version row is locked after the draft's own, always in that order, so the registry
    compared is the one in force when the step commits."""
    # Race: a draft approved or activated while another version of the platform is activated.
    V.objects.select_for_update().filter(platform=version.platform).order_by("version").first()
    return registry_in_force(version.platform)


def version_approve(*, version_pk: int, actor: str, reason: str) -> V:
    """The second pair of eyes on a registry change: anyone but its author. The approval covers the change
    against the sender domains and accept-link hosts in force now (``approved_registry``)."""
    with transaction.atomic():
        version = _locked_draft(version_pk)
        in_force = _locked_platform(version)
        if registry_part(version.data) == in_force:
            raise Refused("This version does not change the sender domains or accept-link hosts.")
        if version.approved_by and version.approved_registry == in_force:
            raise Refused(f"Already approved by {version.approved_by}.")
        if actor == version.created_by:
            raise Refused("A registry change needs a second staff member: its author cannot approve it.")
        version.approved_by, version.approved_at = actor, timezone.now()
        version.approved_registry, version.registry_change = in_force, True
        version.save(update_fields=["approved_by", "approved_at", "approved_registry", "registry_change"])
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
        in_force = _locked_platform(version)
        data_validate(version.data, platform=version.platform)
        # Compared with what is in force now, not when the draft was made or approved: a draft made before
        # another version changed the registry would otherwise undo that change unapproved.
        version.registry_change = registry_part(version.data) != in_force
        if version.registry_change and not version.approved_by:
            raise Refused(
                "It changes the sender domains or accept-link hosts: a second staff member must approve it first."
            )
        if version.registry_change and version.approved_registry != in_force:
            raise Refused(
                "The sender domains or accept-link hosts in force changed since it was approved: a second staff "
                "member must approve it again."
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
        if trial.variants_wrong:
            pks = ", ".join(str(row.message.pk) for row in trial.variants_wrong)
            raise Refused(
                f"It reads a variant of {len(trial.variants_wrong)} stored message(s) wrong or not at all (inbound "
                f"messages {pks}): it reads only the order it was made from. Anchor its patterns on the "
                "platform's labels and test again."
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
                "registry_change": version.registry_change,
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
