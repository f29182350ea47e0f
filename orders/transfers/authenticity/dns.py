"""DNS for the authentication of inbound mail: one injectable resolver for the DKIM keys, the ARC sealers' keys
and SPF (docs/operations/receiving-mail.md "Transfer detection").

Every lookup goes through ``get_resolver()``: the service's own layer first, which answers the sandbox
platform's DKIM key (``sandbox._domainkey.sandbox.invalid``) from the key kept in the database and never asks
DNS for a name under ``sandbox.invalid``; everything else goes to the process resolver, dnspython asking the
nameservers of ``INBOUND_DNS_NAMESERVERS`` (else the system's, ``/etc/resolv.conf``), bounded by
``INBOUND_DNS_TIMEOUT_SECONDS`` (5 s) per lookup. Tests install a ``StaticResolver`` with ``use_resolver``.

A resolver answers ``txt(name)`` with the TXT records of ``name`` (each record's strings joined), raises
``DnsNotFound`` when the name or its TXT records do not exist, and ``DnsTempError`` when DNS could not answer
for now (timeout, SERVFAIL, no nameserver): the message is then processed again later.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

from django.conf import settings

from orders.transfers.testing.simulator import SANDBOX_DOMAIN, SANDBOX_SELECTOR, sandbox_public_txt

SANDBOX_KEY_NAME = f"{SANDBOX_SELECTOR}._domainkey.{SANDBOX_DOMAIN}"


class DnsNotFound(Exception):
    """The name does not exist, or has no record of the type asked (NXDOMAIN, no answer)."""


class DnsTempError(Exception):
    """DNS did not answer for now (timeout, SERVFAIL, no nameserver reachable): try again later."""


@runtime_checkable
class Resolver(Protocol):
    def txt(self, name: str) -> list[bytes]:
        """The TXT records of ``name``, each record's character-strings joined; ``DnsNotFound`` /
        ``DnsTempError`` otherwise."""
        ...


def normalise_name(name: str | bytes) -> str:
    if isinstance(name, bytes):
        name = name.decode("ascii", "replace")
    return name.strip().rstrip(".").lower()


class DnsPythonResolver:
    """The process resolver: dnspython with the system's nameservers (or ``nameservers``: addresses asked on
    ``port``, or (address, port) pairs), each lookup bounded by ``timeout`` seconds
    (``INBOUND_DNS_TIMEOUT_SECONDS``)."""

    def __init__(
        self, *, timeout: float, nameservers: Sequence[str | tuple[str, int]] | None = None, port: int = 53
    ) -> None:
        self.timeout = timeout
        self.nameservers = tuple(nameservers) if nameservers is not None else None
        self._port = port
        self._resolver = None
        self._lock = threading.Lock()

    def _get(self):
        import dns.nameserver
        import dns.resolver

        with self._lock:
            if self._resolver is None:
                try:
                    resolver = dns.resolver.Resolver(configure=self.nameservers is None)
                except dns.resolver.NoResolverConfiguration as exc:
                    raise DnsTempError(f"no DNS configuration: {exc}") from exc
                if self.nameservers is not None:
                    resolver.nameservers = [
                        dns.nameserver.Do53Nameserver(*server)
                        if isinstance(server, tuple)
                        else dns.nameserver.Do53Nameserver(server, self._port)
                        for server in self.nameservers
                    ]
                resolver.timeout = self.timeout
                resolver.lifetime = self.timeout
                self._resolver = resolver
            return self._resolver

    def _resolve(self, name: str, rdtype: str, timeout: float | None = None):
        import dns.exception
        import dns.name
        import dns.resolver

        lifetime = self.timeout if timeout is None else max(0.01, min(self.timeout, timeout))
        try:
            return self._get().resolve(name + ".", rdtype, lifetime=lifetime, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer, dns.resolver.YXDOMAIN) as exc:
            raise DnsNotFound(f"{name} {rdtype}: {exc.__class__.__name__}") from exc
        except dns.name.NameTooLong as exc:
            raise DnsNotFound(f"{name}: name too long") from exc
        except (dns.exception.Timeout, dns.resolver.LifetimeTimeout) as exc:
            raise DnsTempError(f"{name} {rdtype}: no answer within {self.timeout:g} s") from exc
        except dns.resolver.NoNameservers as exc:
            raise DnsTempError(f"{name} {rdtype}: no nameserver answered (SERVFAIL or refused)") from exc
        except dns.exception.DNSException as exc:
            raise DnsTempError(f"{name} {rdtype}: {exc.__class__.__name__}: {exc}") from exc

    def txt(self, name: str, *, timeout: float | None = None) -> list[bytes]:
        name = normalise_name(name)
        return [b"".join(record.strings) for record in self._resolve(name, "TXT", timeout)]

    def lookup(self, name: str, rdtype: str, *, timeout: float | None = None) -> list:
        """A, AAAA, MX and PTR answers in the shapes pyspf works with (SPF's mechanisms); ``timeout`` shortens
        the lookup's bound (what is left of a budget)."""
        name = normalise_name(name)
        answer = self._resolve(name, rdtype, timeout)
        if rdtype in ("A", "AAAA"):
            return [record.address for record in answer]
        if rdtype == "MX":
            return [(record.preference, record.exchange.to_text(True)) for record in answer]
        if rdtype == "PTR":
            return [record.target.to_text(True) for record in answer]
        return []


class StaticResolver:
    """Fixed answers, for tests: ``{name: [txt bytes]}``; a value that is an exception (class or instance) is
    raised instead (``DnsTempError("timeout")`` stands for a timeout). Names not listed are ``DnsNotFound``.
    ``other`` answers ``lookup`` (SPF's A/AAAA/MX/PTR) as ``{(name, "A"): ["192.0.2.1"]}``."""

    def __init__(
        self,
        records: Mapping[str, list[bytes] | BaseException | type[BaseException]] | None = None,
        *,
        other: Mapping[tuple[str, str], list] | None = None,
    ) -> None:
        self.records = {normalise_name(k): v for k, v in (records or {}).items()}
        self.other = {(normalise_name(n), t.upper()): v for (n, t), v in (other or {}).items()}
        self.queries: list[str] = []

    def txt(self, name: str) -> list[bytes]:
        name = normalise_name(name)
        self.queries.append(name)
        value = self.records.get(name)
        if value is None:
            raise DnsNotFound(name)
        if isinstance(value, BaseException) or (isinstance(value, type) and issubclass(value, BaseException)):
            raise value
        return [v.encode() if isinstance(v, str) else bytes(v) for v in value]

    def lookup(self, name: str, rdtype: str) -> list:
        name = normalise_name(name)
        self.queries.append(f"{name} {rdtype}")
        value = self.other.get((name, rdtype.upper()))
        if value is None:
            raise DnsNotFound(f"{name} {rdtype}")
        if isinstance(value, BaseException) or (isinstance(value, type) and issubclass(value, BaseException)):
            raise value
        return list(value)


class ServiceResolver:
    """The service's own layer over a resolver: the sandbox platform's key from the database, no DNS for the
    rest of ``sandbox.invalid``; every other name from ``inner``."""

    def __init__(self, inner: Resolver) -> None:
        self.inner = inner

    def txt(self, name: str) -> list[bytes]:
        name = normalise_name(name)
        if name == SANDBOX_KEY_NAME:
            return [sandbox_public_txt()]
        if name == SANDBOX_DOMAIN or name.endswith("." + SANDBOX_DOMAIN):
            raise DnsNotFound(name)
        return self.inner.txt(name)

    def lookup(self, name: str, rdtype: str) -> list:
        name = normalise_name(name)
        if name == SANDBOX_DOMAIN or name.endswith("." + SANDBOX_DOMAIN):
            raise DnsNotFound(name)
        lookup = getattr(self.inner, "lookup", None)
        if lookup is None:
            raise DnsNotFound(f"{name} {rdtype}")
        return lookup(name, rdtype)


# The process resolver (made on first use) and the one tests installed in its place. A plain global, not a
# thread-local: the SMTP receiver's and the workers' threads must see the resolver a test installed.
_production: DnsPythonResolver | None = None
_override: Resolver | None = None
_lock = threading.Lock()


def production_resolver() -> Resolver:
    """The process resolver of the settings (``INBOUND_DNS_NAMESERVERS``, ``INBOUND_DNS_TIMEOUT_SECONDS``), made
    again when they change."""
    global _production
    timeout = float(settings.INBOUND_DNS_TIMEOUT_SECONDS)
    servers = tuple(settings.INBOUND_DNS_NAMESERVERS)
    with _lock:
        if _production is None or (_production.timeout, _production.nameservers or ()) != (timeout, servers):
            _production = DnsPythonResolver(timeout=timeout, nameservers=servers or None)
        return _production


def get_resolver() -> Resolver:
    """The resolver every authentication lookup goes through: the service's layer over the process resolver
    (or over the one installed with ``set_resolver`` / ``use_resolver``)."""
    return ServiceResolver(_override if _override is not None else production_resolver())


def set_resolver(resolver: Resolver | None) -> Resolver | None:
    """Install ``resolver`` in place of the process resolver (``None`` restores it); returns the previous one."""
    global _override
    with _lock:
        previous, _override = _override, resolver
    return previous


@contextmanager
def use_resolver(resolver: Resolver) -> Iterator[Resolver]:
    previous = set_resolver(resolver)
    try:
        yield resolver
    finally:
        set_resolver(previous)


def dkim_dnsfunc(
    resolver: Resolver, answers: dict[str, bytes | None] | None = None
) -> Callable[..., bytes | None]:
    """dkimpy's ``dnsfunc(name, timeout=…)`` over ``resolver``: the key record's TXT (the first carrying
    ``p=`` when several are published), ``None`` when there is none. ``DnsTempError`` propagates (dkimpy
    would take its own timeout error for a failed signature). Each answer is noted in ``answers``."""

    def dnsfunc(name: bytes | str, timeout: float = 5) -> bytes | None:
        key = normalise_name(name)
        try:
            records = resolver.txt(key)
        except DnsNotFound:
            records = []
        chosen = next((r for r in records if b"p=" in r), records[0] if records else None)
        if answers is not None:
            answers[key] = chosen
        return chosen

    return dnsfunc
