"""The ticketing platforms the service reads transfer e-mails of: one YAML template per ``primary_site`` in
this folder (docs/operations/receiving-mail.md "Platform templates and the corpus").

A template names the platform's sender domains (the authentication's From alignment reads them), the hosts
its accept links may point at, whether its barcodes are static, and per kind (``transfer_offer``,
``transfer_accepted``, ``transfer_canceled``) a subject pattern that recognises the kind and one pattern per
field (event, start, venue, section, row, seats, quantity, accept link) over the message's text, each with a
``value`` group. ``registry()`` loads and validates every template once; ``TransfersConfig.ready()`` calls
it, so a bad template stops the service at start-up (``ImproperlyConfigured``) rather than at the first mail.
Templates of further platforms live in the folders the ``TRANSFER_PLATFORM_DIRS`` setting lists (read after
this one; a platform defined twice stops the start); changing the setting (a test's override) reloads them.

The sandbox platform and test orders: test orders keep the ``primary_site`` of their event (``ticketmaster``,
``axs``…), yet test mode's simulated transfers come from the sandbox platform. So a test order accepts the
sandbox platform *in addition to* its own ``primary_site``, whatever that is: ``order_platforms(order)``
lists what an order accepts (its ``primary_site`` when a template exists; plus ``sandbox`` when the order is
a test order). A live order never accepts the sandbox platform. Accept links are recorded for staff, only
when their host is listed in ``accept_link_hosts``; the service never fetches them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import regex
import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from orders.transfers.reading.platforms.text import MailText, mail_text
from orders.transfers.verdicts import ParsedMail

SANDBOX = "sandbox"
KINDS = ("transfer_offer", "transfer_accepted", "transfer_canceled")
FIELDS = ("event", "start", "venue", "section", "row", "seats", "quantity", "accept_link")
DEFAULT_START_FORMATS = ("%Y-%m-%d %H:%M",)
FOLDER = Path(__file__).resolve().parent
_SEAT_WORD = re.compile(r"\bseats?\b\.?", re.IGNORECASE)
_SEAT_RANGE = re.compile(r"^([A-Za-z]*)(\d+)\s*[-–]\s*\1?(\d+)$")
# Every template pattern runs with a time limit (a staff-made pattern may backtrack catastrophically): a search
# that takes longer finds nothing, so the message stays unparsed.
PATTERN_SECONDS = 0.25
# Set by ``orders.transfers.reading.templates_store`` once the app is ready: the registry of the files with the
# versions staff activated laid over it.
OVERLAY = None


def pattern_search(pattern, text: str):
    """``pattern.search(text)`` within ``PATTERN_SECONDS``; ``None`` when the time ran out."""
    try:
        return pattern.search(text, timeout=PATTERN_SECONDS)
    except TimeoutError:
        return None


@dataclass(frozen=True)
class KindTemplate:
    kind: str
    subject: regex.Pattern
    fields: dict[str, regex.Pattern]
    required: tuple[str, ...]


@dataclass(frozen=True)
class Platform:
    name: str
    sender_domains: tuple[str, ...]
    accept_link_hosts: tuple[str, ...]
    static_barcodes: bool
    kinds: dict[str, KindTemplate]
    start_formats: tuple[str, ...] = DEFAULT_START_FORMATS
    source: str = ""
    version: int = 1  # the shipped file is version 1; staff's versions are numbered on from it

    def kind_for(self, subject: str) -> KindTemplate | None:
        for template in self.kinds.values():
            if pattern_search(template.subject, subject):
                return template
        return None


@dataclass
class Registry:
    platforms: dict[str, Platform] = field(default_factory=dict)

    def get(self, name: str) -> Platform | None:
        return self.platforms.get((name or "").strip().lower())

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def names(self) -> list[str]:
        return sorted(self.platforms)


# --- the schema ---------------------------------------------------------------------------------------------
def _fail(source: str, problem: str):
    raise ImproperlyConfigured(f"Platform template {source}: {problem}")


def _str_list(source: str, data: dict, key: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        _fail(source, f"{key!r} must be a non-empty list of strings")
    return tuple(v.strip().lower() for v in value)


def _regex(source: str, where: str, pattern, flags: int) -> regex.Pattern:
    if not isinstance(pattern, str) or not pattern:
        _fail(source, f"{where} must be a regular expression (a string)")
    if len(pattern) > 1000:
        _fail(source, f"{where} is longer than 1000 characters")
    try:
        return regex.compile(pattern, flags)
    except (regex.error, ValueError, OverflowError) as exc:
        _fail(source, f"{where} does not compile: {exc}")


def _kind(source: str, kind: str, data) -> KindTemplate:
    if not isinstance(data, dict):
        _fail(source, f"kind {kind!r} must be a mapping")
    unknown = set(data) - {"subject", "fields", "required"}
    if unknown:
        _fail(source, f"kind {kind!r} has unknown keys {sorted(unknown)}")
    subject = _regex(source, f"{kind}.subject", data.get("subject"), regex.IGNORECASE)
    raw_fields = data.get("fields")
    if not isinstance(raw_fields, dict) or not raw_fields:
        _fail(source, f"{kind}.fields must be a mapping of field to pattern")
    fields = {}
    for name, pattern in raw_fields.items():
        if name not in FIELDS:
            _fail(source, f"{kind}.fields has unknown field {name!r} (known: {', '.join(FIELDS)})")
        compiled = _regex(source, f"{kind}.fields.{name}", pattern, regex.IGNORECASE | regex.MULTILINE)
        if "value" not in compiled.groupindex:
            _fail(source, f"{kind}.fields.{name} has no (?P<value>…) group")
        fields[name] = compiled
    required = data.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        _fail(source, f"{kind}.required must be a list of field names")
    for name in required:
        if name not in fields and not (name == "quantity" and "seats" in fields):
            _fail(source, f"{kind}.required names {name!r}, which has no pattern")
    return KindTemplate(kind=kind, subject=subject, fields=fields, required=tuple(required))


def platform_validate(data, *, source: str, name: str) -> Platform:
    """A ``Platform`` from a template's parsed YAML; ``ImproperlyConfigured`` naming the first problem."""
    if not isinstance(data, dict):
        _fail(source, "must be a mapping")
    allowed = {"platform", "sender_domains", "accept_link_hosts", "static_barcodes", "start_formats", "kinds"}
    unknown = set(data) - allowed
    if unknown:
        _fail(source, f"unknown keys {sorted(unknown)}")
    if data.get("platform") != name:
        _fail(source, f"'platform' must be {name!r}, the file's name")
    if not isinstance(data.get("static_barcodes"), bool):
        _fail(source, "'static_barcodes' must be true or false")
    start_formats = tuple(data.get("start_formats") or DEFAULT_START_FORMATS)
    if not all(isinstance(f, str) and "%" in f for f in start_formats):
        _fail(source, "'start_formats' must be strptime formats")
    kinds = data.get("kinds")
    # No kinds at all is a registry entry alone (its authentic mail opens unparsed cases until staff add them).
    if not isinstance(kinds, dict) or (kinds and "transfer_offer" not in kinds):
        _fail(source, "'kinds' must be a mapping with at least 'transfer_offer'")
    for kind in kinds:
        if kind not in KINDS:
            _fail(source, f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return Platform(
        name=name,
        sender_domains=_str_list(source, data, "sender_domains"),
        accept_link_hosts=_str_list(source, data, "accept_link_hosts"),
        static_barcodes=data["static_barcodes"],
        kinds={kind: _kind(source, kind, kinds[kind]) for kind in KINDS if kind in kinds},
        start_formats=start_formats,
        source=source,
    )


def registry_load(folder: Path = FOLDER) -> Registry:
    """Every ``*.yaml`` template of ``folder``, validated."""
    platforms = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        name = path.stem.lower()
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeError) as exc:
            _fail(path.name, f"is not valid YAML: {exc}")
        platforms[name] = platform_validate(data, source=path.name, name=name)
    return Registry(platforms=platforms)


_registry: Registry | None = None
_lock = threading.Lock()


def registry_folders() -> list[Path]:
    """This folder, then the folders of ``TRANSFER_PLATFORM_DIRS``."""
    return [FOLDER, *(Path(d) for d in getattr(settings, "TRANSFER_PLATFORM_DIRS", ()))]


def registry() -> Registry:
    """The registry in force: the files' (``files_registry``) with the versions staff activated over them."""
    files = files_registry()
    return OVERLAY(files) if OVERLAY is not None else files


def files_registry() -> Registry:
    """The templates of this folder and of ``TRANSFER_PLATFORM_DIRS``, loaded and validated once per process."""
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                merged = Registry()
                for folder in registry_folders():
                    if folder != FOLDER and not folder.is_dir():
                        _fail(str(folder), "TRANSFER_PLATFORM_DIRS names a folder that does not exist")
                    for name, platform in registry_load(folder).platforms.items():
                        if name in merged.platforms:
                            _fail(platform.source, f"the platform {name!r} is defined twice")
                        merged.platforms[name] = platform
                _registry = merged
    return _registry


def _settings_changed(*, setting, **kwargs):
    global _registry
    if setting == "TRANSFER_PLATFORM_DIRS":
        with _lock:
            _registry = None


setting_changed.connect(_settings_changed, dispatch_uid="transfers.platforms.registry")


def platform_for_domain(domain: str) -> str | None:
    """The platform whose sender domains include ``domain`` (or a parent domain of it)."""
    domain = (domain or "").strip().strip(".").lower()
    for platform in registry().platforms.values():
        for sender in platform.sender_domains:
            if domain == sender or domain.endswith("." + sender):
                return platform.name
    return None


def order_platforms(order) -> list[str]:
    """The platforms whose mail the order accepts: its ``primary_site`` (with a template), and for a test
    order also the sandbox platform, whatever its ``primary_site``."""
    names = [order.primary_site.lower()] if order.primary_site.lower() in registry() else []
    if not order.livemode and SANDBOX not in names:
        names.append(SANDBOX)
    return names


# --- parsing ------------------------------------------------------------------------------------------------
def seats_split(value: str) -> list[str]:
    """The seats a "Seats:" value lists, ranges expanded (``1-4``, ``A1-A3``), in order, repeats kept."""
    seats: list[str] = []
    for token in re.split(r"\s*(?:,|;|/|&|\band\b)\s*", _SEAT_WORD.sub("", value.strip())):
        token = token.strip().strip(".")
        if not token:
            continue
        ranged = _SEAT_RANGE.match(token)
        if ranged and 0 <= int(ranged.group(3)) - int(ranged.group(2)) < 100:
            prefix = ranged.group(1)
            seats.extend(f"{prefix}{n}" for n in range(int(ranged.group(2)), int(ranged.group(3)) + 1))
        else:
            seats.extend(token.split())
    return seats


def _start(value: str, formats: tuple[str, ...]) -> str:
    for fmt in formats:
        try:
            return datetime.strptime(" ".join(value.split()), fmt).strftime("%Y-%m-%d %H:%M")
        except ValueError:
            continue
    return ""


def _accept_link(pattern: re.Pattern, text: str, hosts: tuple[str, ...]) -> str:
    try:
        found_all = list(pattern.finditer(text, timeout=PATTERN_SECONDS))
    except TimeoutError:
        return ""
    for found in found_all:
        link = found.group("value").strip()
        host = (urlsplit(link).hostname or "").lower()
        if urlsplit(link).scheme == "https" and host in hosts:
            return link[:1000]
    return ""


def parse(raw: bytes, platform: str) -> ParsedMail | None:
    """The template of ``platform`` applied to ``raw``: ``None`` when the platform has no template or the
    subject is of no known kind; else a ``ParsedMail`` whose ``missing`` lists the required fields not found."""
    template = registry().get(platform)
    if template is None:
        return None
    return parse_with(template, raw)


def parse_with(template: Platform, raw: bytes) -> ParsedMail | None:
    """``parse`` with a given template (a draft under test, or the one in force)."""
    return parse_text(template, mail_text(raw))


def parse_text(template: Platform, mail: MailText) -> ParsedMail | None:
    """``parse_with`` of a mail already read as text (a stored mail's variant under test)."""
    kind = template.kind_for(mail.subject)
    if kind is None:
        return None
    values: dict[str, str] = {}
    for name, pattern in kind.fields.items():
        if name == "accept_link":
            values[name] = _accept_link(pattern, mail.text, template.accept_link_hosts)
            continue
        found = pattern_search(pattern, mail.text)
        values[name] = " ".join(found.group("value").split()) if found and found.group("value") else ""
    seats = seats_split(values.get("seats", ""))
    quantity_text = values.get("quantity", "")
    quantity = int(quantity_text) if quantity_text.isdigit() else len(seats)
    starts_at_local = _start(values["start"], template.start_formats) if values.get("start") else ""
    parsed = ParsedMail(
        platform=template.name,
        kind=kind.kind,
        event_name=values.get("event", ""),
        venue_name=values.get("venue", ""),
        starts_at_local=starts_at_local,
        section=values.get("section", ""),
        row=values.get("row", ""),
        seats=seats,
        quantity=quantity,
        accept_link=values.get("accept_link", ""),
        text=mail.text,
    )
    found = {
        "event": parsed.event_name,
        "venue": parsed.venue_name,
        "start": parsed.starts_at_local,
        "section": parsed.section,
        "row": parsed.row,
        "seats": parsed.seats,
        "quantity": parsed.quantity,
        "accept_link": parsed.accept_link,
    }
    parsed.missing = [name for name in kind.required if not found[name]]
    return parsed


__all__ = [
    "KINDS",
    "SANDBOX",
    "Platform",
    "Registry",
    "files_registry",
    "mail_text",
    "order_platforms",
    "parse",
    "parse_text",
    "parse_with",
    "pattern_search",
    "platform_for_domain",
    "platform_validate",
    "registry",
    "registry_load",
    "seats_split",
]
