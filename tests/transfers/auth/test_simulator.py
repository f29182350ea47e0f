"""The transfer simulator's signer: one key for every process, made on first use, kept sealed; its signatures
verify through the service's resolver and nothing else."""

import threading

import dkim
import pytest
from django.db import connection

from orders.transfers.authenticity.dns import StaticResolver, dkim_dnsfunc, get_resolver, use_resolver
from orders.transfers.models import SandboxSigningKey
from orders.transfers.testing import simulator as sandbox
from orders.transfers.testing.simulator import sandbox_key, sandbox_public_txt, sandbox_sign
from tests.transfers.mailkit import transfer_email


def _signature_tags(signed: bytes) -> dict:
    verifier = dkim.DKIM(signed)
    verifier.verify_headerprep(0)
    return {k.decode(): v.decode() for k, v in verifier.signature_fields.items()}


@pytest.mark.django_db
def test_the_key_is_made_once_and_kept_sealed():
    assert SandboxSigningKey.objects.count() == 0
    txt = sandbox_public_txt()
    row = SandboxSigningKey.objects.get()
    assert row.selector == "sandbox"
    assert row.private_key_sealed.startswith("v1:") and "PRIVATE KEY" not in row.private_key_sealed
    assert txt == b"v=DKIM1; k=rsa; p=" + row.public_key.encode()
    _pk, bits, _ktag, _tls = dkim.evaluate_pk(b"sandbox", txt)
    assert bits == 2048
    sandbox_sign(transfer_email("ord-x@transfers.example"))
    assert sandbox_public_txt() == txt and SandboxSigningKey.objects.count() == 1


@pytest.mark.django_db
def test_a_signed_message_verifies_through_the_service_resolver_only():
    raw = transfer_email("ord-abc@transfers.example")
    signed = sandbox_sign(raw)
    assert signed.endswith(raw) and signed.startswith(b"DKIM-Signature:")
    tags = _signature_tags(signed)
    assert (tags["d"], tags["s"]) == ("sandbox.invalid", "sandbox")
    assert [h.strip() for h in tags["h"].split(":")] == ["from", "to", "subject", "date", "message-id"]
    assert "l" not in tags
    with use_resolver(StaticResolver()):  # nothing published anywhere but the service's own layer
        assert dkim.verify(signed, dnsfunc=dkim_dnsfunc(get_resolver())) is True
        assert (
            dkim.verify(signed.replace(b"Row: A", b"Row: C"), dnsfunc=dkim_dnsfunc(get_resolver())) is False
        )


@pytest.mark.django_db
def test_messages_with_bare_newlines_are_signed_too():
    raw = transfer_email("ord-lf@transfers.example").replace(b"\r\n", b"\n")
    signed = sandbox_sign(raw)
    assert b"\r\n" not in signed
    with use_resolver(StaticResolver()):
        assert dkim.verify(signed, dnsfunc=dkim_dnsfunc(get_resolver())) is True


@pytest.mark.django_db
def test_a_key_sealed_under_a_retired_secret_key_is_replaced(settings, monkeypatch):
    old_txt = sandbox_public_txt()
    monkeypatch.setattr(sandbox, "_unsealed", {})
    settings.SECRET_KEY = "an-entirely-different-secret-key-for-this-test-0123456789"
    settings.SECRET_KEY_FALLBACKS = []
    signed = sandbox_sign(transfer_email("ord-rot@transfers.example"))
    assert sandbox_public_txt() != old_txt and SandboxSigningKey.objects.count() == 1
    with use_resolver(StaticResolver()):
        assert dkim.verify(signed, dnsfunc=dkim_dnsfunc(get_resolver())) is True


@pytest.mark.django_db(transaction=True)
def test_processes_making_the_key_at_once_share_one():
    barrier = threading.Barrier(4)
    keys, errors = [], []

    def make():
        try:
            barrier.wait(5)
            keys.append(sandbox_key().public_key)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(keys) == 4 and len(set(keys)) == 1
    assert SandboxSigningKey.objects.count() == 1
