"""The e-mail check of bodies judged by hand (config/api/validation.py): Django's ``validate_email`` with its
patterns compiled at import, which takes and refuses exactly what Django's own takes and refuses, and so what the
serializer's EmailField does."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator
from django.core.validators import validate_email as django_validate_email
from rest_framework import serializers

from config.api.validation import text_as_given, validate_email

ADDRESSES = [
    "ana@example.com",
    "ANA.SILVA@EXAMPLE.COM",
    "user@[IPV6:2001:DB8::1]",
    "Ana.Silva+tickets@sub.example.co.uk",
    '"quoted local"@example.com',
    "user@[127.0.0.1]",
    "user@[IPv6:2001:db8::1]",
    "user@[300.1.1.1]",
    "user@localhost",
    "user@example",
    "user@-example.com",
    "user@example..com",
    "user@xn--bcher-kva.example",
    "user@bücher.example",
    "üser@example.com",
    "a" * 64 + "@example.com",
    "a" * 65 + "@example.com",
    "user@" + "a" * 63 + ".com",
    "user@" + "a" * 64 + ".com",
    "user@" + ("a" * 60 + ".") * 5 + "com",
    "not-an-address",
    "@example.com",
    "user@",
    "user@@example.com",
    "user @example.com",
    "user@example.com\n",
    "user@example.com.",
    "user@.example.com",
    "user@exa_mple.com",
    "user@123.123.123.123",
    "",
]


def _takes(validator, address: str) -> bool:
    try:
        validator(address)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("address", ADDRESSES)
def test_takes_what_djangos_takes(address):
    assert _takes(validate_email, address) == _takes(django_validate_email, address)


def test_its_patterns_are_compiled_and_djangos_own():
    for name in ("user_regex", "domain_regex", "literal_regex"):
        pattern, lazy = getattr(validate_email, name), getattr(EmailValidator, name)
        assert isinstance(pattern, re.Pattern)
        assert (pattern.pattern, pattern.flags) == (lazy.pattern, lazy.flags)


@pytest.mark.parametrize("address", ADDRESSES)
def test_a_field_by_hand_agrees_with_the_serializer(address):
    field = serializers.EmailField(required=False, allow_blank=True, max_length=254)
    try:
        expected = field.run_validation(address)
    except serializers.ValidationError:
        expected = None
    assert text_as_given(address, field) == expected
