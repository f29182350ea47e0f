"""Forms of the orders pages of the partner portal."""

from __future__ import annotations

from django import forms

from .models import Order
from .selectors import OrderFilters


class OrderFilterForm(forms.Form):
    STATUS_CHOICES = [("", "All statuses"), *Order.Status.choices]

    q = forms.CharField(
        required=False,
        label="Search",
        widget=forms.TextInput(attrs={"placeholder": "Order id, your reference or event"}),
    )
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
    created_from = forms.DateField(
        required=False, label="Created from", widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        required=False, label="Created to", widget=forms.DateInput(attrs={"type": "date"})
    )

    def filters(self) -> OrderFilters:
        """The selector's filters of a valid form."""
        data = self.cleaned_data
        return OrderFilters(
            status=data["status"] or None,
            search=data["q"],
            created_on_or_after=data["created_from"],
            created_on_or_before=data["created_to"],
        )
