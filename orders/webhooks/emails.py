"""The e-mail that tells a partner's contact address that the service disabled one of its endpoints."""

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from .models import WebhookEndpoint


def endpoint_disabled_email(*, endpoint_pk: int) -> bool:
    endpoint = WebhookEndpoint.objects.select_related("partner").filter(pk=endpoint_pk).first()
    if endpoint is None or not endpoint.partner.contact_email:
        return False
    context = {
        "endpoint": endpoint,
        "partner_name": endpoint.partner.name,
        "reason": endpoint.get_disabled_reason_display(),
        "portal_url": f"{settings.PUBLIC_BASE_URL}/portal/settings/webhooks/{endpoint.endpoint_id}",
        "support_email": settings.DEFAULT_FROM_EMAIL,
    }
    subject = f"{'' if endpoint.livemode else '[TEST] '}Webhook endpoint disabled: {endpoint.url}"
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string("emails/webhook_endpoint_disabled.txt", context),
        to=[endpoint.partner.contact_email],
    )
    message.attach_alternative(
        render_to_string("emails/webhook_endpoint_disabled.html", context), "text/html"
    )
    message.send()
    return True
