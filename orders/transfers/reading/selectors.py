"""What the reading stage's pages and commands read of the platform templates: the version in force, its data
(else the shipped file's) and every platform the service knows."""

from __future__ import annotations

from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading import platforms
from orders.transfers.reading.templates_store import registry_part, shipped_data

V = PlatformTemplateVersion


def version_in_force(platform: str) -> V | None:
    return V.objects.filter(platform=platform, state=V.State.ACTIVE).first()


def data_in_force(platform: str) -> dict | None:
    """The data the service reads for ``platform``: staff's active version, else the shipped file as it is now
    (version 1 records the file as it was first seen; a release may have changed it since)."""
    active = version_in_force(platform)
    if active is not None and active.source == V.Source.STAFF:
        return active.data
    shipped = shipped_data(platform)
    return shipped if shipped is not None or active is None else active.data


def registry_in_force(platform: str) -> dict:
    """The sender domains and accept-link hosts in force for ``platform`` (normalised)."""
    return registry_part(data_in_force(platform))


def registry_changes(version: V) -> bool:
    """Whether putting ``version`` in force now would change what makes a mail authentic (a draft is compared
    with what is in force now, not when it was made)."""
    if version.state != V.State.DRAFT:
        return version.registry_change
    return registry_part(version.data) != registry_in_force(version.platform)


def approval_holds(version: V) -> bool:
    """Whether the draft's approval covers the registry change it would make now: approved against the sender
    domains and accept-link hosts still in force."""
    return bool(version.approved_by) and version.approved_registry == registry_in_force(version.platform)


def platform_names() -> list[str]:
    """Every platform the service knows: the files' and those staff made."""
    names = set(platforms.registry().names()) | set(V.objects.values_list("platform", flat=True).distinct())
    return sorted(names)
