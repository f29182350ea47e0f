"""Forms of the partner portal's sign-in and account pages."""

from __future__ import annotations

import hashlib
from zoneinfo import available_timezones

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.core.cache import cache

from config.api.ratelimit import client_ip

from .models import PortalUser

# Failed logins per e-mail address from one client address before the form refuses further tries from there
# for LOGIN_LOCKOUT_SECONDS. Keyed on both: guessing from one address never locks the user out from another
# (django-axes counts the same pair, AXES_LOCKOUT_PARAMETERS).
LOGIN_MAX_FAILURES = 10
LOGIN_LOCKOUT_SECONDS = 15 * 60


def _failures_key(email: str, client_address: str) -> str:
    pair = f"{email.strip().lower()}\n{client_address}"
    return "portal-login-failures:" + hashlib.sha256(pair.encode()).hexdigest()[:32]


class PortalLoginForm(AuthenticationForm):
    """E-mail and password; only users linked to a partner may sign in; brute force is slowed down."""

    username = forms.EmailField(
        label="E-mail", widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"})
    )
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "The e-mail address or the password is not correct.",
        "no_portal": "This account has no access to the partner portal.",
        "locked": "Too many failed sign-ins. Wait 15 minutes or reset your password.",
    }

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip().lower()

    def clean(self):
        email = self.cleaned_data.get("username") or ""
        key = _failures_key(email, client_ip(self.request) if self.request is not None else "unknown")
        try:
            failures = cache.get(key, 0)
        except Exception:
            failures = 0  # the cache is down: sign-in still works, only unthrottled
        if failures >= LOGIN_MAX_FAILURES:
            raise forms.ValidationError(self.error_messages["locked"], code="locked")
        try:
            return super().clean()
        except forms.ValidationError:
            try:
                cache.add(key, 0, timeout=LOGIN_LOCKOUT_SECONDS)
                cache.incr(key)
            except Exception:  # noqa: S110 - throttling is best effort
                pass
            raise

    def confirm_login_allowed(self, user) -> None:
        super().confirm_login_allowed(user)
        if not PortalUser.objects.filter(user=user).exists():
            raise forms.ValidationError(self.error_messages["no_portal"], code="no_portal")


class PortalPasswordResetForm(PasswordResetForm):
    """Reset for portal users only; includes invited users who never set a password."""

    def get_users(self, email: str):
        users = get_user_model()._default_manager.filter(
            email__iexact=email, is_active=True, portal_profile__isnull=False
        )
        return iter(users)


class RotateSecretForm(forms.Form):
    password = forms.CharField(
        label="Your portal password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if self.user is None or not self.user.check_password(password):
            raise forms.ValidationError("The password is not correct.")
        return password


def _time_zone_choices() -> list[tuple[str, str]]:
    return [(name, name.replace("_", " ")) for name in sorted(available_timezones())]


class PreferencesForm(forms.Form):
    # The choices are exactly ``zoneinfo.available_timezones()``: anything else is refused by the field.
    time_zone = forms.ChoiceField(
        label="Time zone",
        choices=_time_zone_choices,
        help_text="The portal shows every time in this zone. The API always answers in UTC.",
    )
