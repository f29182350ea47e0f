"""What the providers' inbound channels share: the request body read as bytes (a multipart field exactly as
posted), Amazon S3 for SES's S3 action, and the sweeper that stores an S3 object whose SNS notification was
lost (docs/operations/receiving-mail.md "Provider channels")."""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import timedelta
from email.parser import BytesHeaderParser
from email.policy import compat32

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django.utils.http import parse_header_parameters

from orders.transfers.intake.bounds import header_section
from orders.transfers.intake.services import MessageTooLarge, message_receive
from orders.transfers.models import InboundMessage

logger = logging.getLogger(__name__)

# A webhook body carries the message (base64 or JSON-escaped, and parsed copies of it beside): a bound on
# what is read before anything is parsed.
WEBHOOK_BODY_FACTOR = 4


def webhook_body_limit() -> int:
    return WEBHOOK_BODY_FACTOR * settings.INBOUND_MAX_BYTES


# --- multipart/form-data, as bytes ----------------------------------------------------------------------


def multipart_fields(body: bytes, content_type: str) -> dict[str, bytes] | None:
    """The form fields of a ``multipart/form-data`` body, each value exactly the bytes posted (Django decodes
    fields as text and bounds them by DATA_UPLOAD_MAX_MEMORY_SIZE; a raw message is neither). Files are
    included under their field name. ``None`` when the body is not multipart; the last value of a repeated
    name wins, as Django's ``QueryDict`` reads it."""
    return (
        {name: value for name, value, _, _ in multipart_parts(body, content_type)}
        if _boundary(content_type)
        else None
    )


def multipart_parts(body: bytes, content_type: str) -> list[tuple[str, bytes, str | None, str]]:
    """``(name, value, filename or None, content type)`` of each part, in order."""
    boundary = _boundary(content_type)
    if not boundary:
        return []
    parts = []
    # A delimiter is CRLF "--" boundary at the start of a line; the CRLF before it belongs to it.
    for chunk in (b"\r\n" + body).split(b"\r\n--" + boundary)[1:]:
        if chunk.startswith(b"--"):
            break  # the close delimiter
        _, _, chunk = chunk.partition(b"\r\n")  # transport padding after the delimiter
        head, sep, value = chunk.partition(b"\r\n\r\n")
        if not sep:
            continue
        headers = BytesHeaderParser(policy=compat32).parsebytes(head + b"\r\n\r\n")
        _, params = parse_header_parameters(headers.get("Content-Disposition", ""))
        if "name" not in params:
            continue
        parts.append((params["name"], value, params.get("filename"), headers.get_content_type()))
    return parts


def _boundary(content_type: str) -> bytes:
    kind, params = parse_header_parameters(content_type or "")
    if kind != "multipart/form-data":
        return b""
    return params.get("boundary", "").encode("ascii", "ignore")


# --- Amazon S3 (SES's S3 action) --------------------------------------------------------------------------


def s3_client():
    """A boto3 S3 client built from anymail's AMAZON_SES_SESSION_PARAMS and AMAZON_SES_CLIENT_PARAMS, the
    settings anymail's SES webhook downloads with."""
    import boto3
    from anymail.backends.amazon_ses import _get_anymail_boto3_params

    session_params, client_params = _get_anymail_boto3_params()
    return boto3.session.Session(**session_params).client("s3", **client_params)


def s3_object_read(bucket: str, key: str, client=None) -> bytes:
    own = client is None
    client = client or s3_client()
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"]
        try:
            return body.read()
        finally:
            body.close()
    finally:
        if own:
            client.close()


# --- The sweeper ----------------------------------------------------------------------------------------

# SES stores the object, then notifies: an object younger than this may still be on its way through SNS.
SWEEP_GRACE = timedelta(minutes=5)
# Objects older than this are not looked at again (the bucket's own lifecycle rule removes them).
SWEEP_MAX_AGE = timedelta(days=2)
SWEPT_KEY = "transfers:ses-swept:{bucket}:{key}"


def ses_sweep(*, now=None, client=None) -> int:
    """Store every S3 object of ``INBOUND_SES_BUCKET``/``INBOUND_SES_PREFIX`` that no stored message came
    from, so a lost SNS notification does not lose a message. Returns the number of objects stored.

    An object counts as stored when a message records its key (``verdicts["provider"]["s3_key"]``) or has
    its sha256. Its recipients are the transfer addresses of the envelope as SES recorded it in its own
    Received header on top of the object (never the sender's To or Cc); the sweep's SES verdicts are the ones
    SES wrote on top of the object. An object over ``INBOUND_MAX_BYTES`` is refused (recorded, not stored)
    and the sweep goes on. Does nothing unless ``amazon_ses`` is an inbound channel with a bucket.
    """
    bucket, prefix = settings.INBOUND_SES_BUCKET, settings.INBOUND_SES_PREFIX
    if "amazon_ses" not in settings.INBOUND_CHANNELS or not bucket:
        return 0
    now = now or timezone.now()
    own = client is None
    client = client or s3_client()
    stored = 0
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                key, modified = item["Key"], item["LastModified"]
                if not now - SWEEP_MAX_AGE <= modified <= now - SWEEP_GRACE:
                    continue
                if key.endswith("AMAZON_SES_SETUP_NOTIFICATION"):
                    continue
                stored += _sweep_object(client, bucket, key, size=int(item.get("Size") or 0))
    finally:
        if own:
            client.close()
    return stored


def _sweep_object(client, bucket: str, key: str, *, size: int = 0) -> int:
    marker = SWEPT_KEY.format(bucket=bucket, key=hashlib.sha256(key.encode()).hexdigest())
    if cache.get(marker) or InboundMessage.objects.filter(verdicts__provider__s3_key=key).exists():
        return 0
    count = 0
    if size > settings.INBOUND_MAX_BYTES:
        # Refused as the receiver refuses it (never downloaded): recorded, and the sweep goes on.
        logger.warning("SES object %s refused by the sweeper: %d bytes is over the message limit", key, size)
    else:
        try:
            count = _sweep_store(client, bucket, key)
        except MessageTooLarge as exc:
            logger.warning("SES object %s refused by the sweeper: %s", key, exc)
    cache.set(marker, 1, timeout=int(SWEEP_MAX_AGE.total_seconds()) + 3600)
    return count


def _sweep_store(client, bucket: str, key: str) -> int:
    raw = s3_object_read(bucket, key, client=client)
    sha256 = hashlib.sha256(raw).hexdigest()
    if InboundMessage.objects.filter(sha256=sha256).exists():
        return 0
    headers = BytesHeaderParser(policy=compat32).parsebytes(header_section(raw) + b"\r\n")
    received = message_receive(
        raw,
        recipients=receipt_recipients(headers),
        channel="amazon_ses",
        mail_from=(headers.get("Return-Path") or "").strip().strip("<>"),
        peer="Amazon SES",
        verdicts={"provider": swept_verdicts(headers, bucket, key)},
    )
    logger.warning("SES object %s stored by the sweeper (its notification did not arrive)", key)
    return int(any(r.created for r in received))


# SES's own Received header, on top of the object: "… by inbound-smtp.<region>.amazonaws.com with SMTP id …
# for <recipient>; <date>".
SES_RECEIVED = re.compile(r"\bby\s+inbound-smtp\.[a-z0-9-]+\.amazonaws\.com\b", re.IGNORECASE)
RECEIVED_FOR = re.compile(r"\bfor\s+<?([^\s<>;]+@[^\s<>;]+)>?\s*;", re.IGNORECASE)


def receipt_recipients(headers) -> list[str]:
    """The envelope recipients of an object SES stored: the ``for`` of SES's own Received header on top of
    it. Never the sender's own To, Cc or Delivered-To: a seller writes those (an object without SES's
    Received header has no recipient and is not stored)."""
    domain = "@" + settings.ORDER_TRANSFER_ADDRESS_DOMAIN.lower()
    received = [str(v) for v in headers.get_all("Received") or []]
    if not received or not SES_RECEIVED.search(received[0]):
        return []
    return [a for a in RECEIVED_FOR.findall(" ".join(received[0].split())) if a.lower().endswith(domain)]


def swept_verdicts(headers, bucket: str, key: str) -> dict:
    """SES's verdicts as it wrote them on top of the object (the first of each header: SES's own)."""

    def status(name: str) -> str:
        return (headers.get(name) or "").strip().lower()

    spam, virus = status("X-SES-Spam-Verdict"), status("X-SES-Virus-Verdict")
    return {
        "esp": "amazon_ses",
        "swept": True,
        "message_id": headers.get("Message-ID", ""),
        "spam": {"fail": True, "pass": False}.get(spam),
        "virus": {"fail": True, "pass": False}.get(virus),
        "spam_status": spam,
        "virus_status": virus,
        "spf": (status("Received-SPF").split() or [""])[0],
        "authentication_results": (headers.get("Authentication-Results") or "")[:1000],
        "action": "S3",
        "s3_bucket": bucket,
        "s3_key": key,
    }
