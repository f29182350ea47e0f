"""Amazon SNS message signatures (docs/operations/receiving-mail.md "Provider channels"): a notification posted to the SES
webhook is taken only when Amazon signed it, with the certificate at its ``SigningCertURL`` — an
``https://sns.<region>.amazonaws.com/….pem`` address, that host exactly, nothing else is fetched — and, when
``INBOUND_SES_TOPIC_ARNS`` lists topics, only from one of them. The basic-auth secret proves the post was
meant for the service; the signature proves SNS sent it.
"""

from __future__ import annotations

import base64
import re
import threading
import urllib.parse
import urllib.request
from collections import OrderedDict

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from django.conf import settings

# The signing certificate's URL: https, the host exactly ``sns.<region>.amazonaws.com`` (no user, no port), a
# ``.pem`` path and no query.
CERT_HOST = re.compile(r"^sns\.[a-z]{2}(-[a-z]+)+-[0-9]{1,2}\.amazonaws\.com$")
CERT_PATH = re.compile(r"^/[A-Za-z0-9._/-]+\.pem$")
CERT_FETCH_TIMEOUT_SECONDS = 5
CERT_MAX_BYTES = 64 * 1024
# Certificates kept per process (SNS signs with a handful; the oldest is dropped past this).
CERT_CACHE_SIZE = 16
# The keys each message type signs, in this order ("Subject" only when the notification has one).
SIGNED_KEYS = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
    "UnsubscribeConfirmation": (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
}
HASHES = {"1": hashes.SHA1, "2": hashes.SHA256}

_certificates: OrderedDict[str, x509.Certificate] = OrderedDict()
_lock = threading.Lock()


class SNSSignatureError(Exception):
    pass


def string_to_sign(message: dict) -> bytes:
    keys = SIGNED_KEYS.get(message.get("Type", ""))
    if keys is None:
        raise SNSSignatureError(f"unknown SNS message type {message.get('Type')!r}")
    out = ""
    for key in keys:
        if key in message and message[key] is not None:
            out += f"{key}\n{message[key]}\n"
    return out.encode("utf-8")


def certificate_url_valid(url: str) -> bool:
    """Whether ``url`` is an SNS signing certificate's address (``https://sns.<region>.amazonaws.com/….pem``)."""
    try:
        parts = urllib.parse.urlsplit(url or "")
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme == "https"
        and parts.username is None
        and parts.password is None
        and port is None
        and parts.netloc == parts.hostname
        and bool(CERT_HOST.match(parts.netloc))
        and bool(CERT_PATH.match(parts.path))
        and not parts.query
        and not parts.fragment
        and url == f"https://{parts.netloc}{parts.path}"
    )


def certificate(url: str) -> x509.Certificate:
    """The signing certificate at ``url`` (kept per process, at most ``CERT_CACHE_SIZE`` of them)."""
    if not certificate_url_valid(url):
        raise SNSSignatureError(f"SigningCertURL {url!r} is not Amazon SNS's")
    with _lock:
        if url in _certificates:
            _certificates.move_to_end(url)
            return _certificates[url]
    try:
        with urllib.request.urlopen(url, timeout=CERT_FETCH_TIMEOUT_SECONDS) as response:  # noqa: S310 (https only)
            cert = x509.load_pem_x509_certificate(response.read(CERT_MAX_BYTES))
    except (OSError, ValueError) as exc:
        raise SNSSignatureError(f"SNS signing certificate unavailable: {exc}") from exc
    certificate_trust(url, cert)
    return cert


def certificate_trust(url: str, cert: x509.Certificate) -> None:
    """Record ``cert`` as the one at ``url`` (its fetch done elsewhere, or a test's own certificate); the
    least recently used one is dropped past ``CERT_CACHE_SIZE``."""
    with _lock:
        _certificates[url] = cert
        _certificates.move_to_end(url)
        while len(_certificates) > CERT_CACHE_SIZE:
            _certificates.popitem(last=False)


def sns_verify(message: dict) -> None:
    """Raise ``SNSSignatureError`` unless ``message`` (the posted JSON) carries SNS's valid signature and
    comes from an allowed topic."""
    topics = settings.INBOUND_SES_TOPIC_ARNS
    if topics and message.get("TopicArn") not in topics:
        raise SNSSignatureError(f"topic {message.get('TopicArn')!r} is not in INBOUND_SES_TOPIC_ARNS")
    algorithm = HASHES.get(str(message.get("SignatureVersion", "")))
    if algorithm is None:
        raise SNSSignatureError(f"unknown SignatureVersion {message.get('SignatureVersion')!r}")
    try:
        signature = base64.b64decode(message.get("Signature") or "", validate=True)
    except ValueError as exc:
        raise SNSSignatureError("the signature is not base64") from exc
    cert = certificate(message.get("SigningCertURL", ""))
    try:
        cert.public_key().verify(signature, string_to_sign(message), padding.PKCS1v15(), algorithm())
    except (InvalidSignature, TypeError, ValueError) as exc:
        raise SNSSignatureError("the SNS signature does not verify") from exc
