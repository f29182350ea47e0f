"""Forms of the portal's Settings → Webhooks pages (the same rules as the API, through the same services)."""

from __future__ import annotations

from django import forms

from config.api.errors import ApiError
from orders.models import Notification

from . import services

EVENT_TYPE_CHOICES = [("*", "Every type (*)")] + [(t, t) for t in Notification.Type.subscribable()]
GRACE_CHOICES = [
    (86400, "Keep signing with the old secret for 24 hours"),
    (3600, "Keep signing with the old secret for 1 hour"),
    (0, "Stop using the old secret now"),
]


class EndpointForm(forms.Form):
    url = forms.CharField(
        label="Endpoint URL",
        max_length=2048,
        widget=forms.URLInput(
            attrs={"placeholder": "https://hooks.example.com/buyback", "autocomplete": "off"}
        ),
    )
    event_types = forms.MultipleChoiceField(
        label="Notifications to send",
        choices=EVENT_TYPE_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        initial=["*"],
    )
    description = forms.CharField(label="Description (optional)", max_length=255, required=False)

    def clean_url(self) -> str:
        url = self.cleaned_data["url"].strip()
        try:
            services.endpoint_url_check(url=url)
        except ApiError as exc:
            raise forms.ValidationError(exc.message, code="not_allowed") from exc
        return url

    def clean_event_types(self) -> list[str]:
        values = self.cleaned_data["event_types"]
        if "*" in values and len(values) > 1:
            raise forms.ValidationError("“Every type” already includes the others: choose it alone.")
        return values


class RotateSecretForm(forms.Form):
    expire_previous_in_seconds = forms.TypedChoiceField(
        label="The old secret", choices=GRACE_CHOICES, coerce=int, initial=86400
    )


class ResendForm(forms.Form):
    notification_id = forms.CharField(max_length=64)


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=[("enabled", "enabled"), ("disabled", "disabled")])
