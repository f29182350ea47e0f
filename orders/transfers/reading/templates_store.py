"""Platform templates and registry entries as versioned data (docs/staff-guide.md "Platform templates").

A version holds a platform's template in the file format (``data``: what ``platforms/<name>.yaml`` holds)
and is validated by the start-up's own validator (``platforms.platform_validate``). The shipped file of a
platform is its version 1 (``services.versions_seed`` records it); staff's versions are numbered on from there, each
with who, when and why. The registry the service reads (``platforms.registry()``) is the files with the
versions staff activated laid over them (``registry_overlay``, installed when the app is ready), so an
activation takes effect in every process at its next message, without a release. A version exports back to
the file format (``data_dump``; ``manage.py export_platform_template``), so it can ship in the repository.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import yaml
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError

from config.core.statemachine import StateMachine
from orders.transfers.models import PlatformTemplateHistory, PlatformTemplateVersion
from orders.transfers.reading import platforms

V = PlatformTemplateVersion
SHIPPED_ACTOR = "system:shipped"
REGISTRY_KEYS = ("sender_domains", "accept_link_hosts")
KEY_ORDER = ("platform", "sender_domains", "accept_link_hosts", "static_barcodes", "start_formats", "kinds")

TEMPLATE_MACHINE = StateMachine(
    name="platform template",
    field="state",
    moves={
        V.State.DRAFT: frozenset({V.State.ACTIVE, V.State.DISCARDED}),
        V.State.ACTIVE: frozenset({V.State.SUPERSEDED}),
        V.State.SUPERSEDED: frozenset(),
        V.State.DISCARDED: frozenset(),
    },
    history=PlatformTemplateHistory,
    history_fk="template",
)


class TemplateInvalid(Exception):
    """The data is not a valid template: the message names the first problem, as the start-up would."""


# --- the file format ---------------------------------------------------------------------------------------------
def data_validate(data, *, platform: str) -> platforms.Platform:
    """The ``Platform`` the data makes, by the start-up's validator; ``TemplateInvalid`` naming the problem."""
    try:
        return platforms.platform_validate(data, source=f"{platform} (version)", name=platform)
    except ImproperlyConfigured as exc:
        raise TemplateInvalid(str(exc)) from exc


def data_dump(data: dict) -> str:
    """The version as its YAML file (keys in the shipped files' order), loadable by ``registry_load``."""
    ordered = {key: data[key] for key in KEY_ORDER if key in data}
    if isinstance(ordered.get("kinds"), dict):  # the shipped files' order, whatever order the database kept
        ordered["kinds"] = {
            kind: {
                **{k: spec[k] for k in ("subject", "required") if k in spec},
                "fields": {f: spec["fields"][f] for f in platforms.FIELDS if f in (spec.get("fields") or {})},
            }
            for kind, spec in ((k, ordered["kinds"][k]) for k in platforms.KINDS if k in ordered["kinds"])
        }
    header = (
        f"# The {data.get('platform')} platform: sender domains, accept-link hosts and templates per kind.\n"
    )
    return header + yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=120)


def data_load(text: str, *, platform: str) -> dict:
    """A template's YAML text as data, validated (the editor's text, an uploaded file)."""
    if len(text) > 64_000:
        raise TemplateInvalid("The template is longer than 64 000 characters.")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TemplateInvalid(f"The template is not valid YAML: {exc}") from exc
    data_validate(data, platform=platform)
    return data


def shipped_file(platform: str) -> Path | None:
    """The platform's file in the platforms folder or a ``TRANSFER_PLATFORM_DIRS`` folder, if it has one."""
    for folder in platforms.registry_folders():
        path = Path(folder) / f"{platform}.yaml"
        if path.is_file():
            return path
    return None


def shipped_data(platform: str) -> dict | None:
    path = shipped_file(platform)
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path is not None else None


def registry_part(data: dict | None) -> dict:
    """What decides authenticity: the sender domains and accept-link hosts, normalised."""
    data = data or {}
    return {key: sorted({str(v).strip().lower() for v in data.get(key) or []}) for key in REGISTRY_KEYS}


# --- the registry the service reads ------------------------------------------------------------------------------
_cache: dict = {"key": None, "registry": None}
_cache_lock = threading.Lock()


def registry_overlay(base: platforms.Registry) -> platforms.Registry:
    """``base`` (the files) with staff's versions in force laid over it: one indexed query per call, the
    merged registry rebuilt only when the versions in force changed."""
    try:
        in_force = list(
            V.objects.filter(state=V.State.ACTIVE, source=V.Source.STAFF)
            .order_by("platform")
            .values_list("pk", "platform", "version")
        )
    except DatabaseError:  # before the migration that makes the table: the files alone
        return base
    if not in_force:
        return base
    key = (id(base), tuple(in_force))
    with _cache_lock:
        if _cache["key"] == key:
            return _cache["registry"]
    merged = dict(base.platforms)
    data = dict(V.objects.filter(pk__in=[pk for pk, _, _ in in_force]).values_list("pk", "data"))
    for pk, name, number in in_force:
        try:
            merged[name] = dataclasses.replace(data_validate(data[pk], platform=name), version=number)
        except TemplateInvalid:  # validated when saved: a version the validator now refuses keeps the file
            continue
    registry = platforms.Registry(platforms=merged)
    with _cache_lock:
        _cache.update(key=key, registry=registry)
    return registry


def overlay_install() -> None:
    """Called by ``TransfersConfig.ready()`` after the files were validated."""
    platforms.OVERLAY = registry_overlay
