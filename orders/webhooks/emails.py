"""The e-mail that tells a partner's contact address that the service disabled one of its endpoints."""

from django.conf import settings

from config.core.mail import send_templated_mail

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
    send_templated_mail(
        template="webhook_endpoint_disabled",
        subject=f"Webhook endpoint disabled: {endpoint.url}",
        to=endpoint.partner.contact_email,
        context=context,
        livemode=endpoint.livemode,
    )
    return True
