"""Where a webhook may be sent: the SSRF guard, applied at registration and again before every delivery.

The host is resolved once and the request connects to the address that was checked, so a DNS answer that
changes between the check and the connection (rebinding) cannot steer a delivery into the private network.
"""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings


class TargetNotAllowed(Exception):
    """The URL may not receive webhooks; ``issue`` is the VALIDATION_ERROR word the API reports."""

    def __init__(self, message: str, *, issue: str = "not_allowed") -> None:
        self.issue = issue
        super().__init__(message)


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written in the URL (used for SNI, the certificate check and the Host header)
    port: int
    path: str  # path and query
    address: str  # the checked IP address the request connects to

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


# NAT64 (RFC 6052 well-known prefix, RFC 8215 local-use prefix): an address here is an IPv4 host reached
# through the operator's own translator, so a target inside them is never a partner's public server.
NAT64_NETWORKS = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


def address_is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in NAT64_NETWORKS):
            return False
        # ::ffff:10.0.0.1 and friends reach an IPv4 host: judge that host.
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None and not address_is_public(embedded):
            return False
    return not (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def url_check(url: str) -> tuple[str, str, int]:
    """Scheme, host and port of ``url``, if its form may receive webhooks (no DNS lookup)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetNotAllowed(f"The URL is not valid: {exc}.", issue="invalid") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise TargetNotAllowed("The URL must be an absolute http(s) URL.", issue="invalid")
    if scheme == "http" and not settings.WEBHOOK_ALLOW_HTTP:
        raise TargetNotAllowed("Webhook URLs must use https://.")
    if parts.username is not None or parts.password is not None:
        raise TargetNotAllowed("Webhook URLs may not carry credentials (user:password@).", issue="invalid")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def target_resolve(url: str) -> Target:
    """Check ``url`` and resolve its host to the one address a delivery will connect to."""
    scheme, host, port = url_check(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetNotAllowed(f"The host {host} does not resolve.", issue="unresolvable") from exc
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise TargetNotAllowed(f"The host {host} does not resolve.", issue="unresolvable")
    if not settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
        # Every address must be public: a name that also resolves privately could be steered there.
        refused = [str(ip) for ip in addresses if not address_is_public(ip)]
        if refused:
            raise TargetNotAllowed(
                f"The host {host} resolves to a non-public address ({refused[0]}); webhooks go to public "
                "addresses only."
            )
    path = urlsplit(url).path or "/"
    query = urlsplit(url).query
    return Target(
        scheme=scheme,
        host=host,
        port=port,
        path=f"{path}?{query}" if query else path,
        address=str(addresses[0]),
    )
