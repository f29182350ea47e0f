"""Validating request bodies: JSON types taken as sent, and a serializer built once per thread.

``JSONBodySerializer`` is the base of every JSON body's serializer: a field of the wrong JSON type is
VALIDATION_ERROR with ``issue: "invalid_type"``, never coerced (DRF would read ``"1"`` as the integer 1 and
``0`` as the text ``"0"``; docs/partners/conventions.md "Strict input"). A form (multipart or urlencoded,
a ``QueryDict``) carries only strings, so its fields keep DRF's reading of text.

``ReusedValidator``: building a DRF serializer deep-copies every declared field (nested serializers
included); on the quote, order and token endpoints that cost more CPU than validating the body.
``run_validation`` keeps no state on the serializer (``is_valid`` is what stores the data and the errors),
so one bound instance per thread validates every request alike: the same fields, checks and error details
as ``is_valid``. It takes the parsed body alone, so a view without DRF's request can call it too.
"""

import re
import threading
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator
from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

_STRING_FIELDS = (
    serializers.CharField,
    serializers.ChoiceField,
    serializers.DateField,
    serializers.DateTimeField,
    serializers.TimeField,
    serializers.UUIDField,
)


def json_type(field: serializers.Field) -> str | None:
    """The JSON type ``field`` takes (``None``: any, or judged by the field itself)."""
    if isinstance(field, serializers.BooleanField):
        return "boolean"
    if isinstance(field, serializers.IntegerField):
        return "integer"
    if isinstance(field, serializers.FloatField | serializers.DecimalField):
        return "number"
    if isinstance(
        field, serializers.ListField | serializers.ListSerializer | serializers.MultipleChoiceField
    ):
        return "array"
    if isinstance(field, serializers.Serializer | serializers.DictField):
        return "object"
    if isinstance(field, _STRING_FIELDS):
        return "string"
    return None


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python = {"boolean": bool, "array": list, "object": dict, "string": str}[kind]
    return isinstance(value, python)


def type_error(field: serializers.Field, value: Any) -> str | None:
    """The message when ``value`` (parsed JSON, not null) is not of the type ``field`` takes."""
    kind = json_type(field)
    if kind is None or value is None:
        return None
    if not _is(value, kind):
        return f"Must be a JSON {kind}."
    child = getattr(field, "child", None)
    if kind == "array" and child is not None and not isinstance(field, serializers.ListSerializer):
        item = json_type(child)
        if item is not None and not all(_is(v, item) for v in value):
            return f"Must be a JSON array of {item}s."
    return None


# A JSON body: an object whose fields hold the JSON types the schema names. (A comment, not a docstring: the
# schema would show a docstring as the description of every body.)
class JSONBodySerializer(serializers.Serializer):
    def to_internal_value(self, data):
        if isinstance(data, QueryDict):
            return super().to_internal_value(data)
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                [ErrorDetail("Must be a JSON object.", code="invalid_type")], code="invalid_type"
            )
        wrong = {}
        for name, field in self.fields.items():
            if field.read_only or name not in data:
                continue
            message = type_error(field, data[name])
            if message:
                wrong[name] = [ErrorDetail(message, code="invalid_type")]
        if wrong:
            raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


class ReusedValidator(threading.local):
    def __init__(self, serializer_class: type[serializers.Serializer]) -> None:
        self.serializer = serializer_class()

    def validate(self, data: Any) -> dict:
        """The validated data, or DRF's ``ValidationError`` with the details ``is_valid`` would give."""
        return self.serializer.run_validation(data)


# --- Bodies judged by hand --------------------------------------------------------------------------------
# A busy endpoint with a few fields reads a body the serializer would take as it is without building the
# serializer's answer: each function below returns what the serializer's field makes of the value, or
# ``None`` when the field could refuse it. Then the serializer judges the body (its errors are the answer).
_SURROGATES = re.compile("[\ud800-\udfff]")


def _eager(validator: EmailValidator) -> EmailValidator:
    """Django's ``validate_email`` with its patterns compiled now: Django compiles them lazily, behind a
    ``SimpleLazyObject`` whose Python attribute lookup every match passes through (about 3.5 µs a valid
    address against 0.9). The same patterns and flags, so the same judgement as the serializer's EmailField."""
    for name in ("user_regex", "domain_regex", "literal_regex"):
        lazy = getattr(type(validator), name)
        setattr(validator, name, re.compile(lazy.pattern, lazy.flags))
    return validator


validate_email = _eager(EmailValidator())


def text_as_given(value: Any, field: serializers.CharField) -> str | None:
    """What ``field`` (a CharField, trimming whitespace) makes of a JSON string it takes: the text stripped;
    ``None`` for anything it could refuse (another type, blank where not allowed, too long or too short,
    NUL or surrogate characters, an e-mail address it would not take)."""
    if type(value) is not str:
        return None
    text = value.strip()
    if not text:
        return "" if field.allow_blank else None
    if (
        (field.max_length is not None and len(text) > field.max_length)
        or (field.min_length is not None and len(text) < field.min_length)
        or "\x00" in text
        or (not text.isascii() and _SURROGATES.search(text))
    ):
        return None
    if isinstance(field, serializers.EmailField):
        try:
            validate_email(text)
        except DjangoValidationError:
            return None
    return text


def integer_as_given(value: Any, field: serializers.IntegerField) -> int | None:
    """``value`` when it is a JSON integer ``field`` takes (within its bounds); ``None`` otherwise."""
    if type(value) is not int:
        return None
    if (field.min_value is not None and value < field.min_value) or (
        field.max_value is not None and value > field.max_value
    ):
        return None
    return value
