"""What the reading stage's pages and commands read of the platform templates: the version in force, its data
(else the shipped file's) and every platform the service knows."""

from __future__ import annotations

from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading import platforms
from orders.transfers.reading.templates_store import shipped_data

V = PlatformTemplateVersion


def version_in_force(platform: str) -> V | None:
    return V.objects.filter(platform=platform, state=V.State.ACTIVE).first()


def data_in_force(platform: str) -> dict | None:
    """The data of the version in force: staff's active version, else the shipped file."""
    active = version_in_force(platform)
    return active.data if active is not None else shipped_data(platform)


def platform_names() -> list[str]:
    """Every platform the service knows: the files' and those staff made."""
    names = set(platforms.registry().names()) | set(V.objects.values_list("platform", flat=True).distinct())
    return sorted(names)
