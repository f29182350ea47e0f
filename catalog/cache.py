"""The catalog's versioned response store: the encoded ``data`` of every catalog read, kept per version.

A catalog answer is identified by its route key (the endpoint, its path parameters and its validated,
normalised query) and stamped with the versions it was built under:
- the catalog version (``catalog:version``), replaced once any change to events, venues, performers,
  sections, rows, prices or statuses commits (``bump_version``, staff edits and imports);
- for section and row pages, the event's availability version (``catalog:ev:<hash of event_id>``), replaced
  once an order, a cancel, an expiry or a staff adjustment of one of its rows' quantities commits
  (``availability_changed``).

Both are replaced by the writer itself, after its transaction commits and before its response is sent, so
the next request anyone makes reads the new version. A version is random (never a counter) and never repeats:
a version the cache lost (a restart of Redis, the event version's expiry, an eviction) is replaced on the next
read by a fresh random one (set once, shared by every process), so no older page's stamp or tag comes back.

Every catalog read fetches the current versions in the round trip that authenticates it and counts its rate
limit (``partners.authentication``), together with the shared copy of the page when this process holds none.
An answer is then served from stored bytes only when it was built under the versions just read:
- in the process itself (``CATALOG_LOCAL_CACHE_SECONDS``, default 5), checked against the versions on every
  read, so a local copy is never served after a change that committed anywhere;
- in the shared cache (Redis) for ``CATALOG_CACHE_SECONDS`` (default 5), shared by every web process.

The versions also make the answer's strong ``ETag`` (docs/partners/conventions.md "Conditional requests"):
a tag names the stamp, the route key and the mode, so it changes whenever anything in the answer could.
If the shared cache does not answer, the database answers and the tag is made from the answer's bytes
instead: slower, never wrong.

A quote chooses its row among the section's rows as the database gave them under the versions its own round
trip read (:func:`held`: in the process only, checked against the versions on every quote), so it sees every
change an answered write made, like a catalog read. Orders never read from here: they decide on the database's
rows, under the row's lock.
"""

import hashlib
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import cache

from config.core.versions import version_or_fresh

logger = logging.getLogger(__name__)

VERSION_KEY = "catalog:version"
LOCAL_MAX_ENTRIES = 1024
# An event's version outlives every page stamped with it by far (pages live CATALOG_CACHE_SECONDS), so an
# expired version can never make an older page current again; a day keeps Redis free of dead events' keys.
EVENT_VERSION_SECONDS = 24 * 3600
# The longest a process keeps a section's rows for its quotes (:func:`held`), however often they are quoted:
# the versions decide what is current; this bounds how long a change that no version names (a row edited in
# SQL by hand) can stay out of the quotes.
HELD_MAX_SECONDS = 60
_MISSING = object()
_clock = time.monotonic
# What a route's build gives: the answer's data, or the data and the instant it changes by itself.
Built = bytes | tuple[bytes, float | None]


class Page(NamedTuple):
    """One stored answer: the stamp it was built under (``None``: unknown, the cache did not answer), its
    encoded ``data``, the base of its tag, and the instant it stops being current by itself (``None``: only a
    new version ends it)."""

    stamp: tuple | None
    data: bytes
    tag: str
    until: float | None = None

    def etag(self, *, livemode: bool) -> str:
        """The strong ETag of this answer for a token of that mode."""
        return f'"{self.tag}{"l" if livemode else "t"}"'


class _LocalTier:
    """A small, thread-safe, time-bounded LRU of pages in this process."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.entries: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str, *, renew: float | None = None) -> Any:
        """The value under ``key`` until its time runs out; ``renew``: a hit is kept that many seconds more."""
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return _MISSING
            now = _clock()
            if entry[0] <= now:
                del self.entries[key]
                return _MISSING
            if renew is not None:
                self.entries[key] = (now + renew, entry[1])
                self.entries.move_to_end(key)
            return entry[1]

    def put(self, key: str, value: Any, seconds: float) -> None:
        with self.lock:
            self.entries[key] = (_clock() + seconds, value)
            self.entries.move_to_end(key)
            while len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


local = _LocalTier(LOCAL_MAX_ENTRIES)


def local_cache_seconds() -> float:
    """``CATALOG_LOCAL_CACHE_SECONDS`` (never longer than the shared copies live)."""
    return min(settings.CATALOG_LOCAL_CACHE_SECONDS, settings.CATALOG_CACHE_SECONDS)


def event_version_key(event_id: str) -> str:
    # Hashed like the pages' keys: the id comes from the URL and may hold anything until looked up.
    return "catalog:ev:" + hashlib.blake2b(event_id.encode(), digest_size=16).hexdigest()


class _Unsent:
    """Per process: version changes that could not be written to the shared cache (it did not answer). They
    are written again by the next change, and by the next catalog read this process serves, so that a change
    is never left behind an old version once the cache answers again."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.catalog = False
        self.events: set[str] = set()

    def __bool__(self) -> bool:
        return self.catalog or bool(self.events)

    def take(self) -> tuple[bool, set[str]]:
        with self.lock:
            taken = (self.catalog, self.events)
            self.catalog, self.events = False, set()
            return taken

    def keep(self, *, catalog: bool = False, events: set[str] = frozenset()) -> None:
        with self.lock:
            self.catalog = self.catalog or catalog
            self.events |= set(events)


unsent = _Unsent()


def _replace_versions(*, catalog: bool, event_ids: set[str]) -> None:
    """Write new versions (with every change still unsent); keep them for later if the cache does not answer."""
    old_catalog, old_events = unsent.take()
    catalog, event_ids = catalog or old_catalog, set(event_ids) | old_events
    values = {event_version_key(event_id): uuid.uuid4().hex for event_id in event_ids}
    try:
        if catalog:
            cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)
        if values:
            cache.set_many(values, timeout=EVENT_VERSION_SECONDS)
    except Exception:
        unsent.keep(catalog=catalog, events=event_ids)
        logger.warning("catalog cache unreachable; versions kept to be written again", exc_info=True)


def bump_version() -> None:
    """Once a change to the catalog committed: every page, in every process, is rebuilt on its next read."""
    local.clear()
    _replace_versions(catalog=True, event_ids=set())


def availability_changed(*, event_ids: set[str]) -> None:
    """Once row quantities of these events changed (call after commit): their section and row pages,
    in every process, are rebuilt on their next read."""
    if event_ids:
        _replace_versions(catalog=False, event_ids=set(event_ids))


def send_unsent() -> None:
    """Write the version changes this process could not write earlier (a no-op when there are none)."""
    if unsent:
        _replace_versions(catalog=False, event_ids=set())


def entry_key(*parts: Any) -> str:
    raw = "\x1f".join(str(p) for p in parts)
    return "catalog:r:" + hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def _active() -> bool:
    return settings.CATALOG_CACHE_SECONDS > 0


def stamp_keys(event_id: str | None) -> list[str]:
    """The versions an answer is stamped with: the catalog's, and the event's availability for pages that
    show quantities (``event_id``)."""
    return [VERSION_KEY] if event_id is None else [VERSION_KEY, event_version_key(event_id)]


def read_keys(key: str, *, event_id: str | None) -> list[str]:
    """What the request's first round trip reads for the answer under ``key``: the versions, and the shared
    copy unless this process holds one."""
    keys = stamp_keys(event_id)
    if _active() and (local_cache_seconds() <= 0 or local.get(key) is _MISSING):
        keys.append(key)
    return keys


def _version_seconds(key: str) -> int | None:
    return None if key == VERSION_KEY else EVENT_VERSION_SECONDS


def _stamp(found: dict, event_id: str | None) -> tuple | None:
    """The versions in ``found``, a fresh one for each it lacks; ``None`` when the cache stopped answering."""
    try:
        return tuple(version_or_fresh(found, k, timeout=_version_seconds(k)) for k in stamp_keys(event_id))
    except Exception:
        logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
        return None


def _tag(stamp: tuple | None, key: str, data: bytes, until: float | None) -> str:
    if stamp is None:
        # No version could be read: the tag names the bytes themselves.
        material = b"bytes\x1f" + key.encode() + b"\x1f" + data
    else:
        material = "\x1f".join((*stamp, key, repr(until))).encode()
    return hashlib.blake2b(material, digest_size=15).hexdigest()


def _made(stamp: tuple | None, key: str, build: Callable[[], Built]) -> Page:
    built = build()
    data, until = built if isinstance(built, tuple) else (built, None)
    return Page(stamp, data, _tag(stamp, key, data, until), until)


def _current(entry: Any, stamp: tuple) -> bool:
    return (
        isinstance(entry, Page)
        and entry.stamp == stamp
        and (entry.until is None or entry.until > time.time())
    )


def page(key: str, build: Callable[[], Built], *, event_id: str | None, found: dict | None) -> Page:
    """The answer under ``key``, current as of the versions in ``found`` (what :func:`read_keys` named, read
    in the request's first round trip; ``None`` when the cache did not answer).

    ``build()`` gives the answer's ``data``, or ``(data, until)`` for an answer that changes by itself at the
    instant ``until`` (epoch seconds; the events list without ``date_from`` drops an event once it starts): it
    is current until then only, and ``until`` is part of its tag.

    No round trip of its own when the process holds a copy of the current stamp or ``found`` holds the
    shared one; a copy that is out of date is rebuilt from the database and shared."""
    if found is None:
        return _made(None, key, build)
    stamp = _stamp(found, event_id)
    if stamp is None:
        return _made(None, key, build)
    local_seconds = local_cache_seconds()
    if not _active():
        return _made(stamp, key, build)
    held = local.get(key) if local_seconds > 0 else _MISSING
    if _current(held, stamp):
        return held
    if key in found or held is _MISSING:
        entry = found.get(key, _MISSING)
    else:
        # The local copy is out of date: the shared one may already be current (another process rebuilt it).
        try:
            entry = cache.get(key, _MISSING)
        except Exception:
            logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
            return _made(None, key, build)
    value = entry if _current(entry, stamp) else _build_and_share(key, stamp, build)
    if local_seconds > 0:
        local.put(key, value, local_seconds)
    return value


class _Held(NamedTuple):
    stamp: tuple
    value: Any
    until: float  # built + HELD_MAX_SECONDS


def held(key: str, build: Callable[[], Any], *, event_id: str | None, found: dict | None) -> Any:
    """What ``build()`` reads from the database, kept by this process alone (never shared, never encoded)
    while the versions it was built under are current: the rows a quote chooses from. Each quote that uses it
    keeps it ``CATALOG_LOCAL_CACHE_SECONDS`` more (a section nobody quotes is let go), and it is read again
    at the latest ``HELD_MAX_SECONDS`` after it was built. ``found``: the request's first round trip's read of
    :func:`stamp_keys` (``None`` when the cache did not answer, and then, as without a local tier, ``build()``
    runs every time). The versions were read before the build, so a change that commits during it leaves the
    value under a stamp already out of date."""
    seconds = local_cache_seconds()
    if found is None or seconds <= 0:
        return build()
    stamp = _stamp(found, event_id)
    if stamp is None:
        return build()
    value = _held_value(key, stamp, seconds)
    if value is not _MISSING:
        return value
    value = build()
    local.put(key, _Held(stamp, value, _clock() + HELD_MAX_SECONDS), seconds)
    return value


def held_now(key: str, *, event_id: str | None, found: dict) -> Any:
    """What :func:`held` keeps under ``key``, if this process holds it under exactly the versions in ``found``
    (each of them present; the use keeps it as :func:`held`'s does); ``None`` otherwise. Reads nothing and
    builds nothing."""
    seconds = local_cache_seconds()
    if seconds <= 0:
        return None
    keys = stamp_keys(event_id)
    if any(k not in found for k in keys):
        return None
    value = _held_value(key, tuple(found[k] for k in keys), seconds)
    return None if value is _MISSING else value


def _held_value(key: str, stamp: tuple, seconds: float) -> Any:
    """What this process holds under ``key`` for ``stamp``, kept ``seconds`` more by this use, unless it is
    ``HELD_MAX_SECONDS`` old; ``_MISSING`` otherwise."""
    entry = local.get(key, renew=seconds)
    if isinstance(entry, _Held) and entry.stamp == stamp and _clock() < entry.until:
        return entry.value
    return _MISSING


def page_read(key: str, build: Callable[[], Built], *, event_id: str | None) -> Page:
    """:func:`page` for a caller whose first round trip did not read the entries: it reads them itself."""
    send_unsent()
    try:
        found = cache.get_many(read_keys(key, event_id=event_id))
    except Exception:
        logger.warning("catalog cache unreachable; reading from the database", exc_info=True)
        found = None
    return page(key, build, event_id=event_id, found=found)


def _build_and_share(key: str, stamp: tuple, build: Callable[[], Built]) -> Page:
    # The stamp was read before the build: a change that commits during the build replaces a version after
    # it, so the page, even if it missed the change, is stored under a stamp that is already out of date.
    value = _made(stamp, key, build)
    try:
        cache.set(key, value, timeout=settings.CATALOG_CACHE_SECONDS)
    except Exception:
        logger.warning("catalog cache unreachable; page not cached", exc_info=True)
    return value
