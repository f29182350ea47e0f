"""A platform the service does not know yet: what its first mail says about it, and the registry entry staff
start from (docs/staff-guide.md "A platform the service does not know").

``facts`` reads the mail of an ``unverified`` case whose sender no platform's registry entry lists: the From
domain, the DKIM signatures' ``d=`` and selector, and the hosts of the https links in its text (bounded).
``skeleton`` is the text "A new platform" opens with: every key of a template file, commented, filled from
those facts when there are some; the YAML's comments are dropped when it is saved."""

from __future__ import annotations

import email.utils
import re
from urllib.parse import urlsplit

from orders.transfers.intake.bounds import MAX_DKIM_SIGNATURES

MAX_HOSTS = 10
_LINK = re.compile(r"https://[^\s<>\"'()\[\]]{1,2000}")
_HOST = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,62}\.)+[a-z]{2,63}$")
_SELECTOR = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_PLATFORM = re.compile(r"^[a-z0-9_-]{1,32}$")


def _kept(pattern: re.Pattern, value) -> str:
    """``value`` (lowercase) when it is a plain name ``pattern`` accepts, else "": the mail is hostile, and
    what it says goes into the YAML staff start from."""
    value = str(value or "").strip().rstrip(".").lower()
    return value if pattern.match(value) else ""


def link_hosts(text: str) -> list[str]:
    """The hosts of the https links in ``text``, in order of appearance, at most ``MAX_HOSTS``."""
    hosts: list[str] = []
    for link in _LINK.findall(text or ""):
        try:
            host = (urlsplit(link).hostname or "").lower()
        except ValueError:
            continue
        if _HOST.match(host) and host not in hosts:
            hosts.append(host)
            if len(hosts) == MAX_HOSTS:
                break
    return hosts


def facts(*, auth: dict, text: str, platform: str) -> dict:
    """What the first mail of an unknown platform says about it (``auth``: the authentication verdict as
    stored): the order's platform name, the From domain, each DKIM signature's d= and selector, the link
    hosts."""
    address = email.utils.parseaddr(str(auth.get("header_from") or "")[:1000])[1]
    signatures = [
        {"d": _kept(_HOST, s.get("domain")), "s": _kept(_SELECTOR, s.get("selector"))}
        for s in ((auth.get("dkim") or {}).get("signatures") or [])[:MAX_DKIM_SIGNATURES]
        if isinstance(s, dict)
    ]
    return {
        "platform": _kept(_PLATFORM, platform) or "new-platform",
        "from_domain": _kept(_HOST, address.rpartition("@")[2]),
        "dkim": [s for s in signatures if s["d"] and s["s"]],
        "link_hosts": link_hosts(text),
    }


def _quoted(values: list[str], placeholder: str) -> str:
    return "[" + ", ".join(values or [placeholder]) + "]"


def skeleton(found: dict | None = None) -> str:
    """A template file with every key, commented: the registry entry from ``found`` (``facts``) when given,
    else placeholders to replace."""
    found = found or {}
    platform = found.get("platform") or "new-platform"
    signed = ", ".join(f"d={s['d']} s={s['s']}" for s in found.get("dkim") or []) or "none found"
    lines = [
        f"# The {platform} platform: its registry entry (what makes its mail authentic) and its templates.",
        "# The name is the primary_site of its events, as the catalog writes it.",
        f"platform: {platform}",
        "# The domains its transfer mail comes From; each message must carry a valid DKIM signature of the same",
        "# organisational domain (the first mail's DKIM signatures: " + signed + ").",
        "sender_domains: "
        + _quoted([found["from_domain"]] if found.get("from_domain") else [], "mail.example.com"),
        "# The hosts its accept links may point at (https only); the first mail's links go to the hosts below:",
        "# keep only the platform's own.",
        "accept_link_hosts: " + _quoted(found.get("link_hosts") or [], "accept.example.com"),
        "# Whether its barcodes stay the same until the event (true) or rotate, as mobile tickets do (false).",
        "static_barcodes: false",
        "# The date formats of the event's start in its mail (Python strptime), tried in this order.",
        'start_formats: ["%Y-%m-%d %H:%M"]',
        "# Per kind (transfer_offer, transfer_accepted, transfer_canceled): a subject pattern, the fields it",
        "# requires and one pattern per field with a (?P<value>...) group. Leave it empty: the first mail of",
        '# each kind then opens an unparsed case, and "Make a template from this mail" proposes the patterns.',
        "kinds: {}",
        "#  transfer_offer:",
        '#    subject: "^You have been sent \\\\d+ tickets? to .+$"',
        "#    required: [event, venue, start, quantity, accept_link]",
        "#    fields:",
        '#      event: "^Event:[ \\\\t]*(?P<value>.+?)[ \\\\t]*$"',
        "#      venue, start, section, row, seats, quantity, accept_link: the same way",
    ]
    return "\n".join(lines) + "\n"
