"""The e-mail providers' inbound webhooks (django-anymail's ``inbound`` signal): each hands the raw MIME to
``orders.transfers.intake.services.message_receive`` (docs/operations/receiving-mail.md "Provider channels").

DKIM is verified over the bytes the sender signed, so the message anymail parsed (``message.as_bytes()``
re-serialises it) is never what is stored. The original bytes come from what each provider sends:

- Amazon SES: the S3 action's object (the webhook view keeps the bytes it downloaded; fetched again from
  S3 when it did not), or the SNS action's ``content`` (base64 when the action's encoding is ``BASE64``);
- Mailgun: the raw MIME route's ``body-mime`` field, read from the request body itself (the webhook view
  keeps the multipart fields as bytes);
- Postmark: ``RawEmail`` ("Include raw email content in JSON payload" on).

A payload without them (Mailgun's parsed route, Postmark without RawEmail) is stored without raw bytes and
its processing opens an ``unverifiable`` case. ``verdicts["provider"]`` records what the provider said:
``spam`` and ``virus`` (``True`` flagged, ``False`` clean, ``None`` not said), ``spam_score``, ``spf``,
``dkim``, ``dmarc`` (the provider's words, lower case), and the message's own identifiers.

Only the channels in ``settings.INBOUND_CHANNELS`` are taken: the webhook views answer 404 for the others,
and this receiver ignores an event of a provider that is not enabled (anymail's own URLs, if mounted).
"""

from __future__ import annotations

import base64
import contextlib
import logging
from email.utils import getaddresses

from anymail.signals import inbound
from django.conf import settings
from django.dispatch import receiver

from orders.transfers.intake.providers import multipart_fields, s3_object_read
from orders.transfers.intake.services import message_receive

logger = logging.getLogger(__name__)

# anymail's esp_name → the InboundMessage channel.
CHANNEL_BY_ESP = {"Amazon SES": "amazon_ses", "Mailgun": "mailgun", "Postmark": "postmark"}


def channel_enabled(channel: str) -> bool:
    return channel in settings.INBOUND_CHANNELS


@receiver(inbound, dispatch_uid="orders.transfers.intake.channels.provider_inbound")
def provider_inbound(sender, event, esp_name: str, **kwargs) -> None:
    channel = CHANNEL_BY_ESP.get(esp_name)
    if channel is None or not channel_enabled(channel):
        logger.warning("Inbound mail from %s ignored: its channel is not in INBOUND_CHANNELS", esp_name)
        return
    message = event.message
    raw = raw_mime(channel, event)
    verdicts = provider_verdicts(channel, event)
    recipients = envelope_recipients(channel, event)
    if raw is None:
        logger.warning("Inbound mail from %s without its raw message: stored as unverifiable", esp_name)
    received = message_receive(
        raw,
        recipients=recipients,
        channel=channel,
        mail_from=message.envelope_sender or "",
        peer=esp_name,
        verdicts={"provider": verdicts},
    )
    if not received:
        # The provider accepted it already (no 550 to give): dropped, as the SMTP receiver refuses it at RCPT.
        logger.info(
            "Inbound mail from %s for no order taking mail (%d recipient(s)): dropped",
            esp_name,
            len(recipients),
        )


# --- The raw bytes ---------------------------------------------------------------------------------------


def raw_mime(channel: str, event) -> bytes | None:
    """The message's original bytes as the provider handed them over, or ``None`` if it did not."""
    kept = getattr(event.message, "raw_mime", None)
    if kept is not None:
        return kept
    esp_event = event.esp_event
    if channel == "amazon_ses":
        return _ses_raw(esp_event)
    if channel == "mailgun":
        return _mailgun_raw(esp_event)
    if channel == "postmark":
        raw = esp_event.get("RawEmail")
        return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) and raw else None
    return None


def _ses_raw(ses_event: dict) -> bytes | None:
    action = ses_event.get("receipt", {}).get("action", {})
    if action.get("type") == "S3":
        return s3_object_read(action["bucketName"], action["objectKey"])
    content = ses_event.get("content")
    if action.get("type") != "SNS" or not content:
        return None
    if action.get("encoding") == "BASE64":
        return base64.b64decode(content)
    return content.encode("utf-8")


def _mailgun_raw(request) -> bytes | None:
    fields = getattr(request, "inbound_fields", None)
    if fields is None and hasattr(request, "_body"):
        fields = multipart_fields(request._body, request.META.get("CONTENT_TYPE", ""))
    if fields is not None:
        return fields.get("body-mime")
    raw = request.POST.get("body-mime")
    return raw.encode("utf-8") if raw else None


# --- The envelope ----------------------------------------------------------------------------------------


def envelope_recipients(channel: str, event) -> list[str]:
    """Every envelope recipient the provider names (a message to two orders' addresses reaches both)."""
    esp_event = event.esp_event
    found: list[str] = []
    if channel == "amazon_ses":
        found = list(esp_event.get("receipt", {}).get("recipients") or [])
    elif channel == "mailgun":
        found = [a for _, a in getaddresses([esp_event.POST.get("recipient", "")]) if a]
    elif channel == "postmark":
        found = [esp_event.get("OriginalRecipient") or ""]
    if not any(found) and event.message.envelope_recipient:
        found = [event.message.envelope_recipient]
    return [a for a in found if a]


# --- What the provider said ------------------------------------------------------------------------------

_SES_STATUS = {"PASS": "pass", "FAIL": "fail", "GRAY": "gray", "PROCESSING_FAILED": "processing_failed"}


def provider_verdicts(channel: str, event) -> dict:
    message = event.message
    verdicts: dict = {
        "esp": channel,
        "event_id": event.event_id or "",
        # The message's own identity: what tells two payloads without raw bytes apart (intake hashes them).
        "message_id": message.get("Message-ID", ""),
        "from": message.get("From", ""),
        "to": message.get("To", ""),
        "subject": message.get("Subject", ""),
        "date": message.get("Date", ""),
        "spam": message.spam_detected,
        "spam_score": message.spam_score,
        "virus": None,
        "spf": "",
        "dkim": "",
        "dmarc": "",
    }
    if channel == "amazon_ses":
        verdicts.update(_ses_verdicts(event.esp_event))
    elif channel == "mailgun":
        verdicts.update(_header_verdicts(message))
    elif channel == "postmark":
        verdicts.update(_postmark_verdicts(event.esp_event, message))
    for key, value in verdicts.items():
        if value is not None and not isinstance(value, (str, bool, int, float)):
            verdicts[key] = str(value)
    return verdicts


def _ses_verdicts(ses_event: dict) -> dict:
    receipt = ses_event.get("receipt", {})
    action = receipt.get("action", {})

    def status(name: str) -> str:
        value = (receipt.get(name) or {}).get("status", "")
        return _SES_STATUS.get(value.upper(), value.lower())

    spam, virus = status("spamVerdict"), status("virusVerdict")
    verdicts = {
        "spam": {"fail": True, "pass": False}.get(spam),
        "virus": {"fail": True, "pass": False}.get(virus),
        "spam_status": spam,
        "virus_status": virus,
        "spf": status("spfVerdict"),
        "dkim": status("dkimVerdict"),
        "dmarc": status("dmarcVerdict"),
        "ses_message_id": ses_event.get("mail", {}).get("messageId", ""),
        "action": action.get("type", ""),
    }
    if action.get("type") == "S3":
        verdicts["s3_bucket"] = action.get("bucketName", "")
        verdicts["s3_key"] = action.get("objectKey", "")
    return verdicts


def _header_verdicts(message) -> dict:
    """Mailgun and Postmark say it in headers they add on top of the message (X-Mailgun-Sflag, X-Spam-Status
    were read by anymail already); SPF and DKIM from their Authentication-Results or Received-SPF."""
    results = message.get("Authentication-Results", "") or ""
    verdicts = {"authentication_results": results[:1000]}
    for method in ("spf", "dkim", "dmarc"):
        verdicts[method] = _method_result(results, method)
    if message.get("X-Mailgun-Spf"):
        verdicts["spf"] = message["X-Mailgun-Spf"].strip().lower()
    if message.get("X-Mailgun-Dkim-Check-Result"):
        verdicts["dkim"] = message["X-Mailgun-Dkim-Check-Result"].strip().lower()
    return verdicts


def _postmark_verdicts(esp_event: dict, message) -> dict:
    """Postmark lists its spam check and SPF result in ``Headers`` (not always in RawEmail)."""
    verdicts = _header_verdicts(message)
    listed = {h.get("Name", "").lower(): h.get("Value", "") for h in esp_event.get("Headers") or []}
    if "x-spam-status" in listed:
        verdicts["spam"] = listed["x-spam-status"].strip().lower().startswith("yes")
    with contextlib.suppress(KeyError, TypeError, ValueError):
        verdicts["spam_score"] = float(listed["x-spam-score"])
    spf = listed.get("received-spf") or message.get("Received-SPF", "") or ""
    verdicts["spf"] = verdicts["spf"] or _first_word(spf)
    return verdicts


def _method_result(results: str, method: str) -> str:
    for clause in results.replace("\n", " ").split(";"):
        clause = clause.strip()
        if clause.lower().startswith(method + "="):
            return _first_word(clause[len(method) + 1 :])
    return ""


def _first_word(text: str) -> str:
    words = text.strip().split()
    return words[0].strip("();").lower() if words else ""
