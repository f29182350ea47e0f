"""A DKIM-signed transfer e-mail made in the test (a key of its own, answered from a dict, never DNS), and
the ways each provider posts it to its inbound webhook, built as the provider sends them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from email.utils import format_datetime

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.utils import timezone

DOMAIN = "tickets.example"
SELECTOR = "s2026"
WEBHOOK_SECRET = "anymail:inbound-secret"
MAILGUN_KEY = "key-mailgun-signing-test"


@dataclass(frozen=True)
class Signer:
    private_pem: bytes
    txt: bytes

    def dnsfunc(self, name, timeout=5):
        name = name.decode() if isinstance(name, bytes) else name
        return self.txt if name.rstrip(".") == f"{SELECTOR}._domainkey.{DOMAIN}" else None

    def sign(self, message: bytes) -> bytes:
        signature = dkim.sign(
            message,
            SELECTOR.encode(),
            DOMAIN.encode(),
            self.private_pem,
            include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
        )
        return signature + message

    def verifies(self, raw: bytes) -> bool:
        return dkim.verify(raw, dnsfunc=self.dnsfunc)


def signer() -> Signer:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public_der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return Signer(private_pem, b"v=DKIM1; k=rsa; p=" + base64.b64encode(public_der))


def transfer_mail(to: str, *, seats: str = "1, 2", tickets: int = 2, extra: bytes = b"") -> bytes:
    """The platform's transfer offer, CRLF line ends as it travels over SMTP (unsigned)."""
    lines = [
        f"From: Tickets Example <transfers@{DOMAIN}>",
        f"To: {to}",
        f"Subject: You've been sent {tickets} tickets to Skyline Festival",
        f"Date: {format_datetime(timezone.now())}",
        f"Message-ID: <{uuid.uuid4().hex}@{DOMAIN}>",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: 8bit",
        "",
        "Event: Skyline Festival",
        "Venue: Harbor Arena",
        f"Date: {timezone.now().year + 1}-12-12 20:00",
        "Section: Lower 101",
        "Row: A",
        f"Seats: {seats}",
        f"Tickets: {tickets}",
        # 8-bit UTF-8 in the body: the bytes must arrive unchanged, not re-encoded by a parser.
        "Enjoy the show \u2014 Harbor Arena",
        f"Accept your tickets: https://accept.{DOMAIN}/t/{uuid.uuid4().hex}",
    ]
    return "\r\n".join(lines).encode("utf-8") + b"\r\n" + extra


# --- Amazon SES (SNS notifications of a receipt rule) -----------------------------------------------------


def ses_received(
    raw: bytes, recipients: list[str], *, action: dict, verdict: str = "PASS", virus: str = "PASS"
) -> dict:
    """The SES "Received" notification (docs: SES "Contents of notifications for Amazon SES email receiving")."""
    now = timezone.now().strftime("%Y-%m-%dT%H:%M:%S.000Z")
    message = {
        "notificationType": "Received",
        "mail": {
            "timestamp": now,
            "source": f"bounces@{DOMAIN}",
            "messageId": uuid.uuid4().hex,
            "destination": recipients,
            "headersTruncated": False,
            "headers": [],
            "commonHeaders": {"from": [f"transfers@{DOMAIN}"], "to": recipients},
        },
        "receipt": {
            "timestamp": now,
            "processingTimeMillis": 420,
            "recipients": recipients,
            "spamVerdict": {"status": verdict},
            "virusVerdict": {"status": virus},
            "spfVerdict": {"status": "PASS"},
            "dkimVerdict": {"status": "PASS"},
            "dmarcVerdict": {"status": "PASS"},
            "action": action,
        },
    }
    if action["type"] == "SNS":
        content = (
            base64.b64encode(raw).decode() if action.get("encoding") == "BASE64" else raw.decode("utf-8")
        )
        message["content"] = content
    return message


SNS_TOPIC = "arn:aws:sns:us-east-1:123456789012:ses-inbound"
SNS_CERT_URL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem"
_sns_key = None


def sns_key():
    """SNS's signing key for the tests: a certificate made here, trusted for SNS_CERT_URL (never fetched)."""
    global _sns_key
    if _sns_key is None:
        from datetime import timedelta

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import NameOID

        from orders.transfers.intake.sns import certificate_trust

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
        now = timezone.now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=30))
            .sign(key, hashes.SHA256())
        )
        certificate_trust(SNS_CERT_URL, cert)
        _sns_key = key
    return _sns_key


def sns_sign(body: dict, version: str = "1") -> dict:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    from orders.transfers.intake.sns import string_to_sign

    body = {**body, "SignatureVersion": version, "SigningCertURL": SNS_CERT_URL}
    algorithm = hashes.SHA1() if version == "1" else hashes.SHA256()
    signature = sns_key().sign(string_to_sign(body), padding.PKCS1v15(), algorithm)
    return {**body, "Signature": base64.b64encode(signature).decode()}


def sns_envelope(
    ses_message: dict, *, version: str = "1", topic: str = SNS_TOPIC, tamper=None
) -> tuple[bytes, dict]:
    """The SNS HTTP(S) POST around it: body and headers as SNS sends them, signed as SNS signs them."""
    message_id = str(uuid.uuid4())
    body = {
        "Type": "Notification",
        "MessageId": message_id,
        "TopicArn": topic,
        "Subject": "Amazon SES Email Receipt Notification",
        "Message": json.dumps(ses_message),
        "Timestamp": timezone.now().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
    }
    body = sns_sign(body, version)
    if tamper:
        body = tamper(body)
    headers = {
        "HTTP_X_AMZ_SNS_MESSAGE_TYPE": "Notification",
        "HTTP_X_AMZ_SNS_MESSAGE_ID": message_id,
        "HTTP_X_AMZ_SNS_TOPIC_ARN": topic,
        "HTTP_USER_AGENT": "Amazon Simple Notification Service Agent",
    }
    return json.dumps(body).encode(), headers


# --- Mailgun (a route forwarding to the URL) --------------------------------------------------------------


def mailgun_form(raw: bytes | None, recipient: str, *, key: str = MAILGUN_KEY) -> list[tuple[str, bytes]]:
    """The fields of a route's forward(): raw MIME (``body-mime``) when ``raw``, else the parsed fields."""
    timestamp, token = str(int(time.time())), uuid.uuid4().hex
    signature = hmac.new(key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    fields = [
        ("recipient", recipient.encode()),
        ("sender", f"bounces@{DOMAIN}".encode()),
        ("from", f"Tickets Example <transfers@{DOMAIN}>".encode()),
        ("subject", b"You've been sent 2 tickets to Skyline Festival"),
    ]
    if raw is not None:
        fields.append(("body-mime", raw))
    else:
        headers = [["From", f"transfers@{DOMAIN}"], ["To", recipient], ["Subject", "Sent 2 tickets"]]
        headers += [["Message-Id", f"<{uuid.uuid4().hex}@{DOMAIN}>"]]
        fields += [
            ("body-plain", b"Event: Skyline Festival"),
            ("message-headers", json.dumps(headers).encode()),
        ]
    fields += [
        ("timestamp", timestamp.encode()),
        ("token", token.encode()),
        ("signature", signature.encode()),
    ]
    return fields


def multipart(fields: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    out = b""
    for name, value in fields:
        out += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value
            + b"\r\n"
        )
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


# --- Postmark (the inbound webhook's JSON) -----------------------------------------------------------------


def postmark_json(raw: bytes, recipient: str, *, include_raw: bool = True, spam: str = "No") -> bytes:
    payload = {
        "FromName": "Tickets Example",
        "From": f"transfers@{DOMAIN}",
        "FromFull": {"Email": f"transfers@{DOMAIN}", "Name": "Tickets Example", "MailboxHash": ""},
        "To": recipient,
        "ToFull": [{"Email": recipient, "Name": "", "MailboxHash": ""}],
        "CcFull": [],
        "BccFull": [],
        "OriginalRecipient": recipient,
        "Subject": "You've been sent 2 tickets to Skyline Festival",
        "MessageID": str(uuid.uuid4()),
        "Date": format_datetime(timezone.now()),
        "MailboxHash": "",
        "TextBody": "Event: Skyline Festival",
        "HtmlBody": "",
        "StrippedTextReply": "",
        "Tag": "",
        "Headers": [
            {"Name": "Return-Path", "Value": f"<bounces@{DOMAIN}>"},
            {"Name": "X-Spam-Status", "Value": spam},
            {"Name": "X-Spam-Score", "Value": "-0.1"},
            {
                "Name": "Received-SPF",
                "Value": f"Pass (sender SPF authorized) identity=mailfrom; envelope-from={DOMAIN}",
            },
            {"Name": "Message-ID", "Value": f"<{uuid.uuid4().hex}@{DOMAIN}>"},
        ],
        "Attachments": [],
    }
    if include_raw:
        payload["RawEmail"] = raw.decode("utf-8")
    return json.dumps(payload).encode()


def basic_auth(secret: str = WEBHOOK_SECRET) -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(secret.encode()).decode()}
