"""SPF for ``orders.transfers.authenticity.authenticate``: recorded for mail received over SMTP from a known client address, never
sufficient and never required (docs/operations/receiving-mail.md "Transfer detection").

pyspf's ``check2`` evaluation, with its DNS answered by the service's resolver (TXT through ``txt``; A, AAAA, MX
and PTR through the resolver's ``lookup`` when it has one, else no data): a temporary DNS failure is the
``temperror`` result, anything unreadable is ``none``. The whole evaluation has one budget,
``INBOUND_DNS_TIMEOUT_SECONDS`` (5 s), counted across its lookups: past it the result is ``temperror``
(recorded; SPF never decides).
"""

from __future__ import annotations

import ipaddress
import time
from functools import reduce

import spf
from django.conf import settings

from orders.transfers.authenticity.dns import (
    DnsNotFound,
    DnsPythonResolver,
    DnsTempError,
    Resolver,
    normalise_name,
)
from orders.transfers.testing.simulator import SANDBOX_DOMAIN


class SpfBudgetExceeded(spf.TempError):
    """The whole SPF evaluation ran past its one budget (``INBOUND_DNS_TIMEOUT_SECONDS``)."""


class ResolverSpfQuery(spf.query):
    """``spf.query`` whose DNS goes through ``resolver`` instead of dnspython's global resolver, with one time
    budget for the whole evaluation: every lookup is checked against the deadline set when the query was made
    (pyspf's own ``querytime`` is counted in its ``dns()``, which this class replaces), so ten ``mx:``
    mechanisms of ten hosts each stop at the budget instead of taking 111 lookups' time."""

    def __init__(self, *args, resolver: Resolver, budget: float, **kwargs) -> None:
        self._resolver = resolver
        self._budget = budget
        self._deadline = time.monotonic() + budget
        super().__init__(*args, **kwargs)

    def _check_budget(self) -> None:
        if time.monotonic() >= self._deadline:
            raise SpfBudgetExceeded(f"the SPF evaluation took more than its {self._budget:g} s")

    def _answer(self, name: str, qtype: str) -> list:
        # The process resolver's lookups are cut at what is left of the budget (a test's resolver has no bound).
        inner = getattr(self._resolver, "inner", self._resolver)
        bounded = (
            {"timeout": self._deadline - time.monotonic()} if isinstance(inner, DnsPythonResolver) else {}
        )
        if qtype == "TXT":
            if name.endswith(SANDBOX_DOMAIN) or not bounded:
                return [[record] for record in self._resolver.txt(name)]
            return [[record] for record in inner.txt(name, **bounded)]
        if qtype == "SPF":  # type 99 is obsolete (RFC 7208): only TXT is published
            return []
        lookup = getattr(self._resolver, "lookup", None)
        if lookup is None:
            return []
        if bounded and not name.endswith(SANDBOX_DOMAIN):
            return list(inner.lookup(name, qtype, **bounded))
        return list(lookup(name, qtype))

    def dns(self, name, qtype, cnames=None, ignore_void=False):
        name = normalise_name(str(name))
        if not name or not reduce(lambda ok, label: ok and 0 < len(label) < 64, name.split("."), True):
            return []
        key = (name, qtype)
        if key in self.cache:
            return self.cache[key]
        self._check_budget()
        try:
            result = self._answer(name, qtype)
        except DnsNotFound:
            result = []
        except DnsTempError as exc:
            raise spf.TempError(f"DNS {exc}")
        self._check_budget()  # a lookup that itself ran past the deadline counts as over the budget
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
        query = ResolverSpfQuery(i=ip, s=mail_from, h=helo, querytime=bound, resolver=resolver, budget=bound)
        result, _code, explanation = query.check()
    except spf.TempError as exc:
        result, explanation = "temperror", str(exc)
    except Exception as exc:  # pyspf on an unreadable sender or HELO: recorded, never decisive
        result, explanation = "none", f"not evaluated: {exc}"
    verdict.update(result=str(result), explanation=str(explanation)[:300])
    return verdict
