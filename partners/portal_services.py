"""Writes of the partner portal: portal users and their invitations, the partner's preferences."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.tokens import default_token_generator
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from config.core.mail import send_templated_mail

from .models import Partner, PortalUser, validate_time_zone

logger = logging.getLogger(__name__)


class PortalUserExists(Exception):
    """A user with this e-mail address already exists."""


def portal_user_invite(*, partner: Partner, email: str, password: str | None = None) -> PortalUser:
    """Create a portal login for ``partner``.

    With a ``password`` the user can sign in at once; without one, the user gets an e-mail with a link to
    set a password (valid for ``PASSWORD_RESET_TIMEOUT``), sent after the transaction commits.
    """
    email = get_user_model().objects.normalize_email(email).strip().lower()
    user_model = get_user_model()
    if (
        user_model.objects.filter(username__iexact=email).exists()
        or user_model.objects.filter(email__iexact=email).exists()
    ):
        raise PortalUserExists(f"A user with the e-mail address {email} already exists.")
    try:
        with transaction.atomic():
            user = user_model(username=email, email=email)
            if password:
                password_validation.validate_password(password, user)
                user.set_password(password)
            else:
                user.set_unusable_password()
            user.save()
            portal_user = PortalUser.objects.create(user=user, partner=partner)
            if not password:
                transaction.on_commit(lambda: portal_invite_send(portal_user=portal_user))
    except IntegrityError as exc:  # a concurrent invitation of the same address won the unique username
        raise PortalUserExists(f"A user with the e-mail address {email} already exists.") from exc
    logger.info("portal user created", extra={"partner_id": partner.public_id, "user_id": user.pk})
    return portal_user


def portal_set_password_url(*, user) -> str:
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    return settings.PUBLIC_BASE_URL + reverse("portal:welcome", kwargs={"uidb64": uidb64, "token": token})


def portal_invite_send(*, portal_user: PortalUser) -> None:
    """E-mail the set-password link of an invited portal user (also used to resend an invitation)."""
    user = portal_user.user
    context = {
        "partner": portal_user.partner,
        "email": user.email,
        "set_password_url": portal_set_password_url(user=user),
        "login_url": settings.PUBLIC_BASE_URL + reverse("portal:login"),
        "valid_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
    }
    send_templated_mail(
        template="portal_invite",
        subject=f"Your partner portal access for {portal_user.partner.name}",
        to=user.email,
        context=context,
    )
    logger.info(
        "portal invitation sent", extra={"partner_id": portal_user.partner.public_id, "user_id": user.pk}
    )


def partner_time_zone_set(*, partner: Partner, time_zone: str) -> Partner:
    """Set the IANA time zone the portal shows ``partner``'s times in; an unknown name is refused."""
    validate_time_zone(time_zone)
    partner.time_zone = time_zone
    partner.save(update_fields=["time_zone", "updated_at"])
    logger.info("partner time zone set", extra={"partner_id": partner.public_id, "time_zone": time_zone})
    return partner
