"""DKIM and ARC for ``orders.transfers.authenticity.authenticate`` (docs/operations/receiving-mail.md "Transfer detection").

Each DKIM-Signature is verified over the raw bytes with dkimpy, its key fetched through the service's resolver;
a signature is usable only if it verifies, its algorithm is ``rsa-sha256`` (``rsa-sha1`` is refused), its key
has at least 1024 bits, it has no ``l=``, its ``h=`` covers From, To, Subject, Date and Message-ID, and its
``d=`` is in the From domain's organisational domain (public suffix list). At most five signatures are read
(``orders.transfers.intake.bounds``).
An ARC chain counts only when its latest seal comes from a sealer listed in ``INBOUND_TRUSTED_ARC_SEALERS``,
the chain verifies, and that sealer's ARC-Authentication-Results reports a DKIM pass for an aligned domain
whose signature is still on the message with the same tags.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import dkim
from dkim.util import InvalidTagValueList, parse_tag_value

from orders.transfers.authenticity.dns import DnsNotFound, DnsTempError, Resolver, dkim_dnsfunc
from orders.transfers.intake.bounds import MAX_DKIM_SIGNATURES

REQUIRED_SIGNED = ("from", "to", "subject", "date", "message-id")
MIN_KEY_BITS = 1024


@lru_cache(maxsize=1)
def _psl():
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def org_domain(domain: str) -> str:
    """The organisational domain (the public suffix plus one label), or "" for a bare public suffix."""
    domain = (domain or "").strip().rstrip(".").lower()
    if not domain:
        return ""
    try:
        domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        return ""
    return _psl().privatesuffix(domain) or ""


def aligned(signing_domain: str, from_domain: str) -> bool:
    org = org_domain(signing_domain)
    return bool(org) and org == org_domain(from_domain)


@dataclass
class Signature:
    index: int  # 1-based, top to bottom
    domain: str = ""
    selector: str = ""
    algorithm: str = ""
    signed_headers: list[str] = field(default_factory=list)
    length_tag: bool = False
    bits: int = 0
    result: str = ""  # "pass" (valid and usable), "fail", "temperror"
    problems: list[str] = field(default_factory=list)  # why it is not usable, for staff

    @property
    def usable(self) -> bool:
        return self.result == "pass" and not self.problems

    @property
    def label(self) -> str:
        return f"DKIM signature {self.index} (d={self.domain or '?'}, s={self.selector or '?'})"

    def as_json(self) -> dict:
        data = asdict(self)
        data["usable"] = self.usable
        return data


def header_fields(raw: bytes) -> list[tuple[bytes, bytes]]:
    """The raw header fields as dkimpy reads them (name, value)."""
    headers, _body = dkim.rfc822_parse(raw)
    return headers


def _tags(value: bytes) -> dict[bytes, bytes]:
    try:
        return parse_tag_value(value)
    except InvalidTagValueList:
        return {}


def _describe(exc: Exception) -> str:
    text = str(exc)
    if "body hash mismatch" in text:
        return "the body was changed after signing (body hash mismatch)"
    if match := re.search(r"public key too small: (\d+)", text):
        return f"its key has {match.group(1)} bits (at least {MIN_KEY_BITS} are required)"
    return f"unreadable or invalid: {text[:200]}"


def _policy_problems(sig: Signature, from_domain: str) -> list[str]:
    """The contract's rules beyond cryptographic validity."""
    problems = []
    if sig.length_tag:
        problems.append("it has an l= tag: only part of the body is signed, text may have been appended")
    if sig.algorithm.startswith("rsa") and 0 < sig.bits < MIN_KEY_BITS:
        problems.append(f"its key has {sig.bits} bits (at least {MIN_KEY_BITS} are required)")
    if sig.algorithm != "rsa-sha256":
        problems.append(
            f"its algorithm {sig.algorithm or '?'} is not accepted (rsa-sha256 with a key of 1024 bits or more)"
        )
    missing = [h for h in REQUIRED_SIGNED if h not in sig.signed_headers]
    if missing:
        problems.append("its h= does not cover " + ", ".join(missing))
    if not from_domain:
        problems.append("there is no single From address to align with")
    elif not aligned(sig.domain, from_domain):
        problems.append(
            f"d={sig.domain} is not in the organisational domain of the From address ({from_domain})"
        )
    return problems


def _signature_from_tags(index: int, tags: dict[bytes, bytes]) -> Signature:
    def text(key: bytes) -> str:
        return tags.get(key, b"").decode("ascii", "replace").strip().lower()

    return Signature(
        index=index,
        domain=text(b"d").rstrip("."),
        selector=text(b"s"),
        algorithm=text(b"a"),
        signed_headers=[h.strip() for h in text(b"h").split(":") if h.strip()],
        length_tag=b"l" in tags,
    )


def key_record(resolver: Resolver, selector: str, domain: str) -> bytes | None:
    """The key's TXT record as dkimpy would fetch it (``None``: none published). ``DnsTempError`` propagates."""
    answers: dict[str, bytes | None] = {}
    return dkim_dnsfunc(resolver, answers)(f"{selector}._domainkey.{domain}".encode())


def _revoked(record: bytes | None) -> bool:
    return record is not None and _tags(record).get(b"p", b"x").strip() == b""


def verify_signatures(raw: bytes, resolver: Resolver, from_domain: str) -> list[Signature]:
    """Every DKIM-Signature of ``raw``, verified and judged; ``DnsTempError`` on a key lookup that failed for
    now is recorded as that signature's ``temperror``."""
    try:
        values = [v for n, v in header_fields(raw) if n.lower() == b"dkim-signature"]
    except Exception:  # an unreadable header section (dkimpy raises more than DKIMException): no signature
        return []
    values = values[:MAX_DKIM_SIGNATURES]  # each one re-reads the whole message: the receiver refuses more
    signatures = []
    for idx, value in enumerate(values):
        sig = _signature_from_tags(idx + 1, _tags(value))
        signatures.append(sig)
        answers: dict[str, bytes | None] = {}
        verifier = dkim.DKIM(raw, minkey=MIN_KEY_BITS)
        try:
            valid = verifier.verify(idx, dnsfunc=dkim_dnsfunc(resolver, answers))
        except DnsTempError as exc:
            sig.result = "temperror"
            sig.problems.append(f"its key could not be fetched for now ({exc})")
            continue
        except Exception as exc:  # dkimpy raises more than DKIMException on hostile input: fail closed
            sig.result = "fail"
            sig.bits = int(getattr(verifier, "keysize", 0) or 0)
            sig.problems.append(_describe(exc))
            continue
        sig.bits = int(getattr(verifier, "keysize", 0) or 0)
        record = answers.get(f"{sig.selector}._domainkey.{sig.domain}")
        if valid:
            sig.result = "pass"
            sig.problems.extend(_policy_problems(sig, from_domain))
            continue
        sig.result = "fail"
        if not answers or all(v is None for v in answers.values()):
            sig.problems.append(f"no key is published at {sig.selector}._domainkey.{sig.domain}")
        elif _revoked(record):
            sig.problems.append("its key is revoked (empty p=)")
        else:
            sig.problems.append("the signature does not match the message (wrong key or changed headers)")
    return signatures


def _aar_dkim_passes(aar_value: bytes) -> list[str]:
    """The domains an ARC-Authentication-Results value reports a DKIM pass for (header.d, or header.i's)."""
    import authres

    text = aar_value.decode("utf-8", "replace").strip()
    text = re.sub(r"^\s*i\s*=\s*\d+\s*;", "", text)
    try:
        header = authres.AuthenticationResultsHeader.parse_value(text)
    except Exception:  # authres raises its own SyntaxError and others on malformed values
        return []
    domains = []
    for result in header.results:
        if result.method != "dkim" or (result.result or "").lower() != "pass":
            continue
        props = {(p.type, p.name): (p.value or "") for p in result.properties}
        domain = props.get(("header", "d")) or props.get(("header", "i"), "").rpartition("@")[2]
        if domain:
            domains.append(domain.strip().rstrip(".").lower())
    return domains


def latest_arc_seal(raw: bytes) -> tuple[int, str] | None:
    """(instance, sealer d=) of the latest ARC-Seal, or ``None`` when the message carries none."""
    try:
        seals = [v for n, v in header_fields(raw) if n.lower() == b"arc-seal"]
    except Exception:  # an unreadable header section: no seal to speak of
        return None
    latest: tuple[int, str] | None = None
    for value in seals:
        tags = _tags(value)
        try:
            instance = int(tags.get(b"i", b"0"))
        except ValueError:
            continue
        sealer = tags.get(b"d", b"").decode("ascii", "replace").strip().rstrip(".").lower()
        if latest is None or instance > latest[0]:
            latest = (instance, sealer)
    if latest is None and seals:
        return (0, "")  # seals without a readable i=: present, and from no listed sealer
    return latest


def verify_arc(raw: bytes, resolver: Resolver, trusted: tuple[str, ...]) -> dict:
    """The ARC verdict: ``{}`` without a seal; otherwise the sealer, whether it is trusted, the chain's result
    and the domains its latest ARC-Authentication-Results reports a DKIM pass for (only when it counts)."""
    seal = latest_arc_seal(raw)
    if seal is None:
        return {}
    instance, sealer = seal
    info: dict = {"present": True, "instance": instance, "sealer": sealer, "trusted": sealer in trusted}
    info["counted"] = False
    if not info["trusted"]:
        info["note"] = "sealer not listed in INBOUND_TRUSTED_ARC_SEALERS: recorded and ignored"
        return info
    try:
        cv, results, reason = dkim.arc_verify(raw, dnsfunc=dkim_dnsfunc(resolver), minkey=MIN_KEY_BITS)
    except DnsTempError:
        raise
    except Exception as exc:  # hostile ARC headers dkimpy does not wrap in its own exceptions
        cv, results, reason = dkim.CV_Fail, [], f"unreadable ARC set: {str(exc)[:200]}"
    info["cv"] = (cv or b"").decode()
    info["reason"] = reason
    if cv != dkim.CV_Pass or not results:
        return info
    info["dkim_pass"] = _aar_dkim_passes(results[0].get("aar-value", b""))
    return info


def arc_signature(raw: bytes, resolver: Resolver, arc: dict, from_domain: str) -> Signature | None:
    """The DKIM signature a trusted, verified ARC chain vouches for: one still on the message whose d= the
    sealer saw pass, aligned with From, whose tags and key meet the same rules as a directly verified one."""
    passed = set(arc.get("dkim_pass") or [])
    if not passed:
        return None
    values = [v for n, v in header_fields(raw) if n.lower() == b"dkim-signature"]
    for idx, value in enumerate(values):
        sig = _signature_from_tags(idx + 1, _tags(value))
        if sig.domain not in passed:
            continue
        try:
            record = key_record(resolver, sig.selector, sig.domain)
            _pk, bits, _ktag, _tlsrpt = dkim.evaluate_pk(sig.domain, record)
        except (dkim.DKIMException, DnsNotFound):
            continue
        sig.bits = int(bits or 0)
        sig.result = "pass"
        sig.problems.extend(_policy_problems(sig, from_domain))
        if sig.usable:
            return sig
    return None
