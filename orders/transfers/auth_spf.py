"""SPF for ``orders.transfers.auth``: recorded for mail received over SMTP from a known client address, never
sufficient and never required (docs/operations/receiving-mail.md "Transfer detection").

pyspf's ``check2`` evaluation, with its DNS answered by the service's resolver (TXT through ``txt``; A, AAAA, MX
and PTR through the resolver's ``lookup`` when it has one, else no data): a temporary DNS failure is the
``temperror`` result, anything unreadable is ``none``. The whole check is bounded by
``INBOUND_DNS_TIMEOUT_SECONDS``.
"""

from __future__ import annotations

import ipaddress
from functools import reduce

import spf
from django.conf import settings

from .dns import DnsNotFound, DnsTempError, Resolver, normalise_name


class ResolverSpfQuery(spf.query):
    """``spf.query`` whose DNS goes through ``resolver`` instead of dnspython's global resolver."""

    def __init__(self, *args, resolver: Resolver, **kwargs) -> None:
        self._resolver = resolver
        super().__init__(*args, **kwargs)

    def _answer(self, name: str, qtype: str) -> list:
        if qtype == "TXT":
            return [[record] for record in self._resolver.txt(name)]
        if qtype == "SPF":  # type 99 is obsolete (RFC 7208): only TXT is published
            return []
        lookup = getattr(self._resolver, "lookup", None)
        return list(lookup(name, qtype)) if lookup is not None else []

    def dns(self, name, qtype, cnames=None, ignore_void=False):
        name = normalise_name(str(name))
        if not name or not reduce(lambda ok, label: ok and 0 < len(label) < 64, name.split("."), True):
            return []
        key = (name, qtype)
        if key in self.cache:
            return self.cache[key]
        try:
            result = self._answer(name, qtype)
        except DnsNotFound:
            result = []
        except DnsTempError as exc:
            raise spf.TempError(f"DNS {exc}")
        self.cache[key] = result
        if not result and not ignore_void:
            self.void_lookups += 1
            if self.void_lookups > spf.MAX_VOID_LOOKUPS:
                raise spf.PermError(f"Void lookup limit of {spf.MAX_VOID_LOOKUPS} exceeded")
        return result


def peer_ip(peer: str) -> str:
    """The client address of a stored ``peer`` ("192.0.2.1", "192.0.2.1:25", "[2001:db8::1]:25"), or ""."""
    peer = (peer or "").strip()
    candidates = [peer, peer.strip("[]")]
    if peer.startswith("[") and "]" in peer:
        candidates.append(peer[1 : peer.index("]")])
    if peer.count(":") == 1:
        candidates.append(peer.partition(":")[0])
    for candidate in candidates:
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return ""


def spf_verdict(*, channel: str, peer: str, mail_from: str, helo: str, resolver: Resolver) -> dict:
    if channel != "smtp":
        return {"result": "none", "checked": False, "reason": f"received through {channel}, not SMTP"}
    ip = peer_ip(peer)
    if not ip:
        return {"result": "none", "checked": False, "reason": "no client address"}
    verdict = {"checked": True, "ip": ip, "mail_from": mail_from, "helo": helo}
    try:
        bound = float(settings.INBOUND_DNS_TIMEOUT_SECONDS)
        query = ResolverSpfQuery(i=ip, s=mail_from, h=helo, querytime=bound, resolver=resolver)
        result, _code, explanation = query.check()
    except spf.TempError as exc:
        result, explanation = "temperror", str(exc)
    except Exception as exc:  # pyspf on an unreadable sender or HELO: recorded, never decisive
        result, explanation = "none", f"not evaluated: {exc}"
    verdict.update(result=str(result), explanation=str(explanation)[:300])
    return verdict
