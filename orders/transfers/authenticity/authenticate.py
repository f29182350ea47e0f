"""Is an inbound message the ticketing platform's own mail to this order's transfer address?
(docs/operations/receiving-mail.md "Transfer detection": "Authentic means all of these".)

``authenticate`` checks, over the raw bytes as received:
- a header section of at most 64 KB without a bare CR or LF and with at most 5 DKIM-Signature headers
  (``orders.transfers.intake.bounds``; else ``unverifiable``, nothing verified);
- exactly one From (with exactly one address), To, Subject, Date and Message-ID, their values read from the
  instances the signature covers;
- a DKIM signature that verifies (``rsa-sha256``, key ≥ 1024 bits, no ``l=``, ``h=`` covering From, To,
  Subject, Date and Message-ID)
  whose ``d=`` is in the From domain's organisational domain; an ARC chain stands in for it only when sealed
  by a sealer listed in ``INBOUND_TRUSTED_ARC_SEALERS``;
- the From domain is a sender domain of the order's ``primary_site`` in the platform registry; the sandbox
  platform's ``sandbox.invalid`` is accepted for test orders only;
- the signed To names the order's transfer address; the signed Date is no earlier than 15 minutes before the
  order was made and no later than 15 minutes after the message was received;
- the raw sha256 and the Message-ID were not already processed for another recipient (``replay_suspected``);
- no provider flagged it as spam or a virus.
SPF is recorded, never decisive. A DNS lookup that failed for now makes the verdict ``temperror`` (processed
again later) unless the message already fails on something DNS cannot change. Every failed check is one
human-readable line in ``failures``, shown to staff.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import hashlib
import re
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from orders.models import Order
from orders.transfers.authenticity.dkim import (
    Signature,
    arc_signature,
    header_fields,
    verify_arc,
    verify_signatures,
)
from orders.transfers.authenticity.dns import DnsTempError, get_resolver
from orders.transfers.authenticity.spf import spf_verdict
from orders.transfers.intake.bounds import header_problem, no_nul
from orders.transfers.models import InboundMessage
from orders.transfers.reading import platforms
from orders.transfers.verdicts import AuthVerdict

SANDBOX_PLATFORM = "sandbox"
DATE_SLACK = timedelta(minutes=15)
SINGLE_HEADERS = ("from", "to", "subject", "date", "message-id")


def platform_sender_domains(site: str) -> set[str]:
    """The sender domains the platform registry lists for ``site`` (lowercase)."""
    entry = platforms.registry().get(site)
    if entry is None:
        return set()
    return {d.strip().rstrip(".").lower() for d in entry.sender_domains}


def _is_flagged(value) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "yes", "1")


def _read_headers(raw: bytes, verdict: AuthVerdict) -> tuple[str, list[str], datetime | None]:
    """Fill the header fields of ``verdict``; return (From domain, To addresses, Date), recording failures.

    The values are read from the very header instances dkimpy reads and the signature covers (each of From, To,
    Subject, Date and Message-ID exactly once), never from a second parser's view of the message."""
    counts: dict[str, int] = {}
    values: dict[str, bytes] = {}
    try:
        fields = header_fields(raw)
    except Exception as exc:  # dkimpy's reader raises more than DKIMException on a broken header section
        verdict.failures.append(f"The header section cannot be read ({str(exc)[:200]})")
        return "", [], None
    for name, value in fields:
        key = name.decode("ascii", "replace").strip().lower()
        counts[key] = counts.get(key, 0) + 1
        values.setdefault(key, value)
    for name in SINGLE_HEADERS:
        if counts.get(name, 0) != 1:
            verdict.failures.append(
                f"The message has {counts.get(name, 0)} {name.capitalize()} headers (exactly one is required)"
            )
    try:
        return _header_values(values, verdict)
    except Exception as exc:  # the standard library's header parser on hostile input: fail closed
        verdict.failures.append(f"The headers cannot be read ({exc.__class__.__name__})")
        return "", [], None


def _header(values: dict[str, bytes], name: str):
    """The header object (``email.policy.default``) of the one instance of ``name`` dkimpy read, or None."""
    value = values.get(name)
    if value is None:
        return None
    text = no_nul(value.decode("utf-8", "replace"))
    unfolded = re.sub(r"\r?\n", "", text).strip()
    return email.policy.default.header_fetch_parse(name, unfolded)


def _header_values(values: dict[str, bytes], verdict: AuthVerdict) -> tuple[str, list[str], datetime | None]:
    from_header, to_header = _header(values, "from"), _header(values, "to")
    subject, date_header = _header(values, "subject"), _header(values, "date")
    message_id = _header(values, "message-id")
    verdict.header_from = str(from_header or "")[:500]
    verdict.header_to = str(to_header or "")[:500]
    verdict.header_subject = str(subject or "")[:500]
    verdict.message_id = str(message_id or "").strip()[:500]

    from_domain = ""
    if from_header is not None:
        addresses = list(getattr(from_header, "addresses", ()))
        plain = [a for _n, a in email.utils.getaddresses([str(from_header)]) if a]
        malformed = any(type(d).__name__ == "InvalidHeaderDefect" for d in from_header.defects)
        if (
            len(addresses) != 1
            or len(plain) != 1
            or malformed
            or plain[0].lower() != addresses[0].addr_spec.lower()
        ):
            verdict.failures.append(
                f"The From header must hold exactly one well-formed address (it reads {verdict.header_from!r})"
            )
        else:
            from_domain = addresses[0].domain.strip().rstrip(".").lower()

    to_addresses: list[str] = []
    if to_header is not None:
        # An address counts only when both readings find it in a well-formed header: a recipient's display name
        # written like an address ("ord-…@… <someone@else>") must not pass for the transfer address.
        if any(type(d).__name__ == "InvalidHeaderDefect" for d in to_header.defects):
            verdict.failures.append(f"The To header is malformed (it reads {verdict.header_to!r})")
        else:
            parsed_to = {a.addr_spec.lower() for a in getattr(to_header, "addresses", ())}
            plain_to = {a.lower() for _n, a in email.utils.getaddresses([str(to_header)]) if a}
            to_addresses = sorted(parsed_to & plain_to)

    date = getattr(date_header, "datetime", None) if date_header is not None else None
    if date is not None and date.tzinfo is None:
        date = date.replace(tzinfo=UTC)
    if date is None and date_header is not None:
        verdict.failures.append(f"The Date header {str(date_header)!r} cannot be read")
    verdict.header_date = date.isoformat() if date else ""
    return from_domain, to_addresses, date


def _choose_signature(raw: bytes, verdict: AuthVerdict, from_domain: str) -> tuple[Signature | None, bool]:
    """The first usable DKIM signature (or the one a trusted ARC chain vouches for); whether a key lookup failed
    for now. Fills ``verdict.dkim`` and ``verdict.arc``."""
    resolver = get_resolver()
    signatures = verify_signatures(raw, resolver, from_domain)
    chosen = next((s for s in signatures if s.usable), None)
    temp = any(s.result == "temperror" for s in signatures)
    via = "signature"
    try:
        verdict.arc = verify_arc(raw, resolver, tuple(settings.INBOUND_TRUSTED_ARC_SEALERS))
    except DnsTempError as exc:
        verdict.arc = {
            "present": True,
            "counted": False,
            "reason": f"a key could not be fetched for now ({exc})",
        }
        temp = True
    if chosen is None and verdict.arc.get("dkim_pass"):
        try:
            chosen = arc_signature(raw, resolver, verdict.arc, from_domain)
        except DnsTempError:
            temp = True
        if chosen is not None:
            verdict.arc["counted"] = True
            via = "arc"
    verdict.dkim = {"signatures": [s.as_json() for s in signatures], "result": "none"}
    if chosen is not None:
        verdict.dkim.update(
            d=chosen.domain,
            s=chosen.selector,
            a=chosen.algorithm,
            bits=chosen.bits,
            h=chosen.signed_headers,
            result="pass",
            via=via,
        )
        return chosen, False
    if not signatures:
        verdict.failures.append("The message has no DKIM signature")
    for sig in signatures:
        verdict.failures.append(
            f"{sig.label} is not usable: " + "; ".join(sig.problems or ["it did not verify"])
        )
    if verdict.arc.get("present") and not verdict.arc.get("trusted"):
        verdict.failures.append(
            f"An ARC seal by {verdict.arc.get('sealer') or '?'} was ignored: that sealer is not trusted"
        )
    verdict.dkim["result"] = "temperror" if temp else "fail"
    return None, temp


def _check_platform(verdict: AuthVerdict, from_domain: str, order: Order) -> None:
    if not from_domain:
        return
    sandbox_domains = platform_sender_domains(SANDBOX_PLATFORM)
    if from_domain in sandbox_domains:
        verdict.sandbox = True
        if order.livemode:
            verdict.failures.append(
                f"The sandbox platform's mail ({from_domain}) is accepted for test orders only: this order is live"
            )
        else:
            verdict.platform = SANDBOX_PLATFORM
        return
    if from_domain in platform_sender_domains(order.primary_site):
        verdict.platform = order.primary_site
        return
    failure = (
        f"The From domain {from_domain} is not a sender domain of the order's platform {order.primary_site!r}"
    )
    if platforms.platform_for_domain(from_domain) is None:
        # The first mail of a platform the service does not know: the case offers its registry entry.
        verdict.unknown_sender = True
        entry = (
            "has no registry entry yet" if platforms.registry().get(order.primary_site) is None else "exists"
        )
        failure += (
            f": the sender is not a known platform (no platform's registry entry lists {from_domain}; "
            f"{order.primary_site!r} {entry})"
        )
    verdict.failures.append(failure)


def _check_to_and_date(
    verdict: AuthVerdict,
    to_addresses: list[str],
    date: datetime | None,
    message: InboundMessage,
    order: Order,
) -> None:
    if order.transfer_address.lower() not in to_addresses:
        verdict.failures.append(
            f"The To header ({verdict.header_to!r}) does not name this order's transfer address"
        )
    if date is None:
        return
    earliest = order.created_at - DATE_SLACK
    latest = (message.received_at or timezone.now()) + DATE_SLACK
    if date < earliest:
        verdict.failures.append(
            f"The Date {date.isoformat()} is before the order ({order.created_at.isoformat()}, 15 min allowed)"
        )
    elif date > latest:
        verdict.failures.append(
            f"The Date {date.isoformat()} is after the message was received (more than 15 min ahead)"
        )


def _replays(raw: bytes, verdict: AuthVerdict, message: InboundMessage) -> tuple[list[int], bool]:
    """Earlier processed messages this one repeats: the same bytes to another recipient (the same bytes to the
    same recipient are the same row), or an authentic one of the same platform with the same Message-ID, to any
    recipient (a copy re-sent with an unsigned header added has new bytes, not a new Message-ID). Returns their
    pks and whether one of them was for another recipient."""
    processed = InboundMessage.objects.filter(stage=InboundMessage.Stage.PROCESSED).exclude(pk=message.pk)
    sha256 = message.sha256 or hashlib.sha256(raw).hexdigest()
    rows = set(
        processed.filter(sha256=sha256)
        .exclude(recipient=message.recipient)
        .values_list("pk", "recipient")[:10]
    )
    if verdict.platform and verdict.message_id:
        rows |= set(
            processed.filter(
                platform=verdict.platform, message_id=verdict.message_id, authentic=True
            ).values_list("pk", "recipient")[:10]
        )
    return sorted(pk for pk, _ in rows), any(recipient != message.recipient for _, recipient in rows)


def authenticate(raw: bytes, *, message: InboundMessage, order: Order) -> AuthVerdict:
    """The authentication verdict of ``raw`` (the bytes of ``message``) as the platform's mail for ``order``."""
    verdict = AuthVerdict(authentic=False)
    problem = header_problem(raw)
    if problem:
        # Nothing is verified (each signature would re-read the whole message and fetch a key).
        verdict.failures.append(f"Not read: {problem}")
        verdict.case_kind = "unverifiable"
        return verdict
    from_domain, to_addresses, date = _read_headers(raw, verdict)
    before = len(verdict.failures)
    chosen, dns_pending = _choose_signature(raw, verdict, from_domain)
    dkim_failures = len(verdict.failures) - before
    _check_platform(verdict, from_domain, order)
    _check_to_and_date(verdict, to_addresses, date, message, order)
    provider = (message.verdicts or {}).get("provider") or {}
    for flag in ("spam", "virus"):
        if _is_flagged(provider.get(flag)):
            verdict.failures.append(f"The provider flagged it as {flag}")
    replay, elsewhere = _replays(raw, verdict, message)
    if replay:
        verdict.replay_of = replay
        verdict.failures.append(
            "The same message (sha256 or Message-ID) was already processed "
            + ("for another order" if elsewhere else "for this order, with other bytes")
            + f" (inbound messages {', '.join(map(str, replay))})"
        )
    verdict.spf = spf_verdict(
        channel=message.channel,
        peer=message.peer,
        mail_from=message.mail_from,
        helo=message.helo,
        resolver=get_resolver(),
    )
    if chosen is not None and not verdict.failures:
        verdict.authentic = True
    elif replay and chosen is not None:
        verdict.case_kind = "replay_suspected"
    elif dns_pending and len(verdict.failures) == dkim_failures:
        # Nothing but a key that could not be fetched for now: processed again later.
        verdict.temperror = True
        verdict.case_kind = "auth_temperror"
    else:
        verdict.case_kind = "unverified"
    return verdict
