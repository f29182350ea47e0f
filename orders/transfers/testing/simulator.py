"""The transfer simulator's DKIM signer (docs/partners/test-mode.md "Test mode"): test mode's simulated
transfers come from the simulated platform (its template is ``reading/platforms/sandbox.yaml``) and are signed
like a real platform's mail, with ``d=sandbox.invalid; s=sandbox``. Not the payment sandbox (the simulated
payment platform).

The RSA 2048 key is made on first use and kept in the database (``SandboxSigningKey``, the private key sealed
under ``SECRET_KEY``) so that every process signs and verifies with the same key; the service's resolver
(``orders.transfers.authenticity.dns``) answers ``sandbox._domainkey.sandbox.invalid`` with its public half, never DNS. Its
signature is accepted for test orders only (``orders.transfers.authenticity.authenticate``).
"""

from __future__ import annotations

import base64
import logging
import threading

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import IntegrityError, transaction

from config.core.keys import seal, unseal
from orders.transfers.models import SandboxSigningKey

logger = logging.getLogger(__name__)

SANDBOX_DOMAIN = "sandbox.invalid"
SANDBOX_SELECTOR = "sandbox"
SIGNED_HEADERS = ("from", "to", "subject", "date", "message-id")
KEY_BITS = 2048
_SEAL_PURPOSE = "transfers.sandbox-dkim-key"

# The unsealed private key of the stored row, by its sealed text: one unsealing per process and key.
_unsealed: dict[str, bytes] = {}
_unsealed_lock = threading.Lock()


def _aad(selector: str) -> bytes:
    return f"sandbox-dkim:{selector}".encode()


def _new_key_row(selector: str) -> SandboxSigningKey:
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return SandboxSigningKey(
        selector=selector,
        private_key_sealed=seal(pem, purpose=_SEAL_PURPOSE, aad=_aad(selector)),
        public_key=base64.b64encode(der).decode(),
    )


def sandbox_key(selector: str = SANDBOX_SELECTOR) -> SandboxSigningKey:
    """The stored key, made on first use. Two processes making it at once: the unique selector lets one row in,
    and the other process reads that row."""
    row = SandboxSigningKey.objects.filter(selector=selector).first()
    if row is not None:
        return row
    row = _new_key_row(selector)
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        return SandboxSigningKey.objects.get(selector=selector)
    logger.info("sandbox DKIM key made", extra={"selector": selector})
    return row


def _private_pem(row: SandboxSigningKey) -> bytes:
    with _unsealed_lock:
        pem = _unsealed.get(row.private_key_sealed)
    if pem is None:
        pem = unseal(row.private_key_sealed, purpose=_SEAL_PURPOSE, aad=_aad(row.selector)).encode()
        with _unsealed_lock:
            _unsealed[row.private_key_sealed] = pem
    return pem


def _usable_key() -> tuple[SandboxSigningKey, bytes]:
    row = sandbox_key()
    try:
        return row, _private_pem(row)
    except ValueError:
        # Sealed under a SECRET_KEY the service no longer has: the sandbox's key is only test mode's, so a new
        # one replaces it (mail signed with the old one no longer verifies, as after a real key rotation).
        logger.warning("sandbox DKIM key unreadable under the current SECRET_KEY: replaced")
        SandboxSigningKey.objects.filter(pk=row.pk).delete()
        row = sandbox_key()
        return row, _private_pem(row)


def sandbox_public_txt() -> bytes:
    """The TXT record of ``sandbox._domainkey.sandbox.invalid``: ``v=DKIM1; k=rsa; p=…``."""
    return b"v=DKIM1; k=rsa; p=" + sandbox_key().public_key.encode()


def sandbox_sign(raw: bytes) -> bytes:
    """``raw`` with the sandbox platform's DKIM-Signature on top (relaxed/relaxed, h=from:to:subject:date:
    message-id)."""
    _row, pem = _usable_key()
    linesep = b"\r\n" if b"\r\n" in raw else b"\n"
    signature = dkim.sign(
        raw,
        SANDBOX_SELECTOR.encode(),
        SANDBOX_DOMAIN.encode(),
        pem,
        canonicalize=(b"relaxed", b"relaxed"),
        include_headers=[h.encode() for h in SIGNED_HEADERS],
        linesep=linesep,
    )
    return signature + raw
