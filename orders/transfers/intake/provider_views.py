"""The providers' inbound webhook URLs (``/inbound/…``, docs/operations/receiving-mail.md "Provider channels"): anymail's
inbound views, each answering 404 unless its channel is in ``INBOUND_CHANNELS``, and keeping the raw
message's bytes for ``orders.transfers.intake.channels``.

Every request is authenticated first: the shared basic-auth secret (``ANYMAIL["WEBHOOK_SECRET"]``) from the
headers alone, before any of the body is read (a refused request is 401 at once); then, once the body is read
(at most ``webhook_body_limit()``, 40 MiB), Mailgun's signature and SNS's (401 too). The message is stored and committed before the answer
(200); a message over ``INBOUND_MAX_BYTES`` is 413, and anything else failing is 500, which every provider
retries.
"""

from __future__ import annotations

import base64
import functools
import io
import logging

from anymail.exceptions import AnymailWebhookValidationFailure
from anymail.webhooks.amazon_ses import AmazonSESInboundWebhookView
from anymail.webhooks.base import AnymailBasicAuthMixin
from anymail.webhooks.mailgun import MailgunInboundWebhookView
from anymail.webhooks.postmark import PostmarkInboundWebhookView
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404, HttpResponse
from django.http.request import QueryDict
from django.utils.datastructures import MultiValueDict

from orders.transfers.intake.channels import channel_enabled
from orders.transfers.intake.providers import multipart_parts, webhook_body_limit
from orders.transfers.intake.services import MessageTooLarge
from orders.transfers.intake.sns import SNSSignatureError, sns_verify

logger = logging.getLogger(__name__)


class ProviderInboundMixin:
    """The channel gate, the body read as bytes (under the webhook bound instead of Django's form limit),
    and the answers: 401 refused, 413 too large."""

    channel = ""

    @classmethod
    def as_view(cls, **initkwargs):
        view = super().as_view(**initkwargs)

        # The gate comes before the view is built: a provider not enabled needs none of its settings.
        @functools.wraps(view)  # keeps anymail's csrf_exempt
        def gated(request, *args, **kwargs):
            if not channel_enabled(cls.channel):
                raise Http404("This inbound channel is not enabled.")
            return view(request, *args, **kwargs)

        return gated

    def post(self, request, *args, **kwargs):
        # Credentials first, from the headers alone: a request without them gets its 401 before a byte of its
        # body is read (or anything parsed, or a certificate fetched).
        try:
            AnymailBasicAuthMixin.validate_request(self, request)
        except AnymailWebhookValidationFailure as exc:
            return self.refused(exc)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > webhook_body_limit():
            return HttpResponse("Request body too large.", status=413, content_type="text/plain")
        body = request.read(webhook_body_limit() + 1)
        if len(body) > webhook_body_limit():
            return HttpResponse("Request body too large.", status=413, content_type="text/plain")
        # What HttpRequest.body does, without its DATA_UPLOAD_MAX_MEMORY_SIZE bound (a message is up to 10 MB).
        request._body = body
        request._stream = io.BytesIO(body)
        self.body_read(request)
        try:
            return super().post(request, *args, **kwargs)
        except AnymailWebhookValidationFailure as exc:
            return self.refused(exc)
        except MessageTooLarge as exc:
            logger.warning("Inbound %s message refused: %s", self.channel, exc)
            return HttpResponse("Message too large.", status=413, content_type="text/plain")

    def refused(self, exc: Exception) -> HttpResponse:
        logger.warning("Inbound %s webhook refused: %s", self.channel, exc)
        response = HttpResponse("Unauthorized.", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Basic realm="inbound"'
        return response

    def body_read(self, request) -> None:
        """Hook: parse what the provider posted before anymail reads it."""


class SESInboundView(ProviderInboundMixin, AmazonSESInboundWebhookView):
    """SNS notifications of SES receipt rules with an S3 action (the object downloaded once, its bytes kept)
    or an SNS action (the content in the notification)."""

    channel = "amazon_ses"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._s3_chunks: list[bytes] = []

    def validate_request(self, request):
        # anymail runs every validate_request of the class chain: its basic auth and SNS headers, and this.
        if settings.INBOUND_SES_VERIFY_SIGNATURE:
            try:
                sns_verify(self._parse_sns_message(request))
            except SNSSignatureError as exc:
                raise AnymailWebhookValidationFailure(str(exc)) from exc

    def fetch_s3_chunks(self, bucket_name, object_key):
        for chunk in super().fetch_s3_chunks(bucket_name, object_key):
            self._s3_chunks.append(chunk)
            yield chunk

    def esp_to_anymail_events(self, ses_event, sns_message):
        events = super().esp_to_anymail_events(ses_event, sns_message)
        action = ses_event.get("receipt", {}).get("action", {})
        for event in events:
            if action.get("type") == "S3":
                event.message.raw_mime = b"".join(self._s3_chunks)
            elif action.get("type") == "SNS" and ses_event.get("content"):
                content = ses_event["content"]
                event.message.raw_mime = (
                    base64.b64decode(content)
                    if action.get("encoding") == "BASE64"
                    else content.encode("utf-8")
                )
        return events


class MailgunInboundView(ProviderInboundMixin, MailgunInboundWebhookView):
    """Mailgun routes forwarding to the URL: ``…/inbound_mime/`` gets the raw MIME (``body-mime``)."""

    channel = "mailgun"

    def body_read(self, request) -> None:
        if not request.content_type.startswith("multipart/"):
            return
        parts = multipart_parts(request._body, request.META.get("CONTENT_TYPE", ""))
        post, files, fields = QueryDict(mutable=True), MultiValueDict(), {}
        for name, value, filename, content_type in parts:
            if filename is None:
                post.appendlist(name, value.decode("utf-8", "replace"))
                fields[name] = value
            else:
                files.appendlist(name, SimpleUploadedFile(filename, value, content_type=content_type))
        post._mutable = False
        # anymail reads request.POST and FILES; the raw bytes of each field stay for the channel.
        request._post, request._files = post, files
        request.inbound_fields = fields


class PostmarkInboundView(ProviderInboundMixin, PostmarkInboundWebhookView):
    """Postmark's inbound webhook with "Include raw email content in JSON payload" (``RawEmail``)."""

    channel = "postmark"
