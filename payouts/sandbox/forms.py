"""Forms of the sandbox platform's own pages (bank authorization, card entry)."""

import re

from django import forms
from django.utils import timezone

from .services import TEST_CARDS, luhn_valid, routing_number_valid

_NON_DIGITS = re.compile(r"[\s\-]")


class BankAuthorizeForm(forms.Form):
    method = forms.ChoiceField(
        choices=[("ach", "ACH bank transfer (recommended)"), ("wire", "Wire transfer")],
        initial="ach",
        widget=forms.RadioSelect,
    )
    holder_name = forms.CharField(label="Account holder", max_length=120)
    routing_number = forms.CharField(label="Routing number", max_length=20)
    account_number = forms.CharField(label="Account number", max_length=30)
    account_number_confirm = forms.CharField(label="Confirm account number", max_length=30)

    def clean_routing_number(self) -> str:
        routing = _NON_DIGITS.sub("", self.cleaned_data["routing_number"])
        if not routing_number_valid(routing):
            raise forms.ValidationError("Enter a valid 9-digit ABA routing number (try 110000000).")
        return routing

    def clean_account_number(self) -> str:
        number = _NON_DIGITS.sub("", self.cleaned_data["account_number"])
        if not number.isdigit() or not 4 <= len(number) <= 17:
            raise forms.ValidationError("An account number has 4 to 17 digits.")
        return number

    def clean(self):
        cleaned = super().clean()
        number = cleaned.get("account_number")
        confirm = _NON_DIGITS.sub("", cleaned.get("account_number_confirm", ""))
        if number and confirm != number:
            self.add_error("account_number_confirm", "The account numbers do not match.")
        return cleaned


class CardForm(forms.Form):
    holder_name = forms.CharField(label="Name on card", max_length=120)
    number = forms.CharField(label="Card number", max_length=30)
    expiry = forms.CharField(label="Expiry (MM / YY)", max_length=7)
    cvc = forms.CharField(label="CVC", max_length=4, min_length=3)

    def clean_number(self) -> str:
        number = _NON_DIGITS.sub("", self.cleaned_data["number"])
        if not luhn_valid(number):
            raise forms.ValidationError("This card number is not valid.")
        if number not in TEST_CARDS:
            raise forms.ValidationError(
                "The sandbox accepts test card numbers only, for example 4242 4242 4242 4242."
            )
        return number

    def clean_expiry(self) -> tuple[int, int]:
        match = re.fullmatch(r"\s*(\d{1,2})\s*/\s*(\d{2}|\d{4})\s*", self.cleaned_data["expiry"])
        if not match:
            raise forms.ValidationError("Enter the expiry as MM / YY.")
        month, year = int(match.group(1)), int(match.group(2))
        if year < 100:
            year += 2000
        if not 1 <= month <= 12:
            raise forms.ValidationError("The month must be between 01 and 12.")
        today = timezone.now().date()
        if (year, month) < (today.year, today.month):
            raise forms.ValidationError("This card has expired.")
        return month, year

    def clean_cvc(self) -> str:
        cvc = self.cleaned_data["cvc"].strip()
        if not cvc.isdigit():
            raise forms.ValidationError("The CVC is 3 or 4 digits.")
        return cvc
