"""The resolver of the authentication: dnspython against a real (local) nameserver with the 5 s bound, the
service's own layer for the sandbox key, the test resolvers and dkimpy's adapter."""

import socket
import threading
import time

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from orders.transfers.authenticity import dns as transfer_dns
from orders.transfers.authenticity.dns import (
    DnsNotFound,
    DnsPythonResolver,
    DnsTempError,
    Resolver,
    ServiceResolver,
    StaticResolver,
    dkim_dnsfunc,
    get_resolver,
    production_resolver,
    set_resolver,
    use_resolver,
)
from orders.transfers.testing.simulator import sandbox_public_txt


class Nameserver:
    """A UDP nameserver on 127.0.0.1 answering from ``zone`` ({name: [txt strings]}); names in ``servfail``
    get SERVFAIL, names in ``silent`` no answer at all, the rest NXDOMAIN."""

    def __init__(self, zone=None, servfail=(), silent=()):
        self.zone, self.servfail, self.silent = zone or {}, set(servfail), set(silent)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.queries = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def _serve(self):
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            query = dns.message.from_wire(data)
            name = query.question[0].name.to_text(omit_final_dot=True).lower()
            self.queries.append(name)
            if name in self.silent:
                continue
            response = dns.message.make_response(query)
            if name in self.servfail:
                response.set_rcode(dns.rcode.SERVFAIL)
            elif name in self.zone and query.question[0].rdtype == dns.rdatatype.TXT:
                records = [" ".join(f'"{c}"' for c in chunks) for chunks in self.zone[name]]
                response.answer.append(dns.rrset.from_text(query.question[0].name, 60, "IN", "TXT", *records))
            else:
                response.set_rcode(dns.rcode.NXDOMAIN)
            self.sock.sendto(response.to_wire(), addr)


def test_dnspython_resolver_reads_txt_records_joining_their_strings():
    zone = {"k1._domainkey.tickets.example": [["v=DKIM1; k=rsa; ", "p=MIIB"]]}
    with Nameserver(zone) as server:
        resolver = DnsPythonResolver(timeout=2, nameservers=["127.0.0.1"], port=server.port)
        assert resolver.txt("K1._domainkey.tickets.example.") == [b"v=DKIM1; k=rsa; p=MIIB"]
        with pytest.raises(DnsNotFound):
            resolver.txt("nope._domainkey.tickets.example")


def test_dnspython_resolver_maps_servfail_to_a_temporary_error():
    with Nameserver(servfail={"k1._domainkey.broken.example"}) as server:
        resolver = DnsPythonResolver(timeout=2, nameservers=["127.0.0.1"], port=server.port)
        with pytest.raises(DnsTempError, match="SERVFAIL"):
            resolver.txt("k1._domainkey.broken.example")


def test_dnspython_resolver_gives_up_after_its_bound():
    with Nameserver(silent={"k1._domainkey.slow.example"}) as server:
        resolver = DnsPythonResolver(timeout=0.6, nameservers=["127.0.0.1"], port=server.port)
        started = time.monotonic()
        with pytest.raises(DnsTempError, match="no answer within"):
            resolver.txt("k1._domainkey.slow.example")
        elapsed = time.monotonic() - started
        assert 0.5 <= elapsed < 2.0
        assert server.queries and set(server.queries) == {"k1._domainkey.slow.example"}


def test_the_process_resolver_is_bounded_by_the_setting(settings, monkeypatch):
    monkeypatch.setattr(transfer_dns, "_production", None)
    settings.INBOUND_DNS_TIMEOUT_SECONDS = 5.0
    resolver = production_resolver()
    assert isinstance(resolver, DnsPythonResolver) and resolver.timeout == 5.0
    assert production_resolver() is resolver


@pytest.mark.django_db
def test_the_service_layer_answers_the_sandbox_key_without_asking_dns():
    inner = StaticResolver({"sandbox._domainkey.sandbox.invalid": [b"v=DKIM1; k=rsa; p=FORGED"]})
    layer = ServiceResolver(inner)
    assert layer.txt("sandbox._domainkey.sandbox.invalid.") == [sandbox_public_txt()]
    for name in ("other._domainkey.sandbox.invalid", "sandbox.invalid", "x.y.sandbox.invalid"):
        with pytest.raises(DnsNotFound):
            layer.txt(name)
    assert inner.queries == []


def test_the_service_layer_passes_other_names_to_the_installed_resolver():
    inner = StaticResolver({"k1._domainkey.tickets.example": [b"v=DKIM1; p=AAA"]})
    with use_resolver(inner):
        resolver = get_resolver()
        assert isinstance(resolver, Resolver)
        assert resolver.txt("k1._domainkey.tickets.example") == [b"v=DKIM1; p=AAA"]
    assert inner.queries == ["k1._domainkey.tickets.example"]


def test_use_resolver_restores_the_previous_one():
    first, second = StaticResolver(), StaticResolver()
    previous = set_resolver(first)
    try:
        with use_resolver(second):
            assert get_resolver().inner is second
        assert get_resolver().inner is first
    finally:
        set_resolver(previous)


def test_the_installed_resolver_is_seen_by_other_threads():
    seen = []
    inner = StaticResolver()
    with use_resolver(inner):
        thread = threading.Thread(target=lambda: seen.append(get_resolver().inner))
        thread.start()
        thread.join()
    assert seen == [inner]


def test_static_resolver_raises_what_it_is_given():
    resolver = StaticResolver({"a.example": DnsTempError("timeout"), "b.example": [b"x"]})
    with pytest.raises(DnsTempError):
        resolver.txt("a.example")
    with pytest.raises(DnsNotFound):
        resolver.txt("c.example")
    assert resolver.txt("B.EXAMPLE.") == [b"x"]


def test_the_dkim_adapter_prefers_the_key_record_and_lets_temporary_errors_through():
    resolver = StaticResolver(
        {
            "k1._domainkey.a.example": [b"unrelated", b"v=DKIM1; p=KEY"],
            "k2._domainkey.a.example": DnsTempError("SERVFAIL"),
        }
    )
    answers = {}
    dnsfunc = dkim_dnsfunc(resolver, answers)
    assert dnsfunc(b"k1._domainkey.a.example.", timeout=5) == b"v=DKIM1; p=KEY"
    assert dnsfunc(b"k3._domainkey.a.example.") is None
    assert answers == {"k1._domainkey.a.example": b"v=DKIM1; p=KEY", "k3._domainkey.a.example": None}
    with pytest.raises(DnsTempError):
        dnsfunc(b"k2._domainkey.a.example.")
