"""Reading catalog import files (``manage.py import_catalog FILE``): CSV or JSON, one item per ticket row.

Each item carries its event's fields, its section and its row. Items are validated one by one, so a bad
line is reported (with its line number) and skipped while the good ones are applied. The writes live in
``catalog.services.catalog_import``.
"""

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from django.utils import timezone
from rest_framework import serializers

from .models import Event, validate_timezone_name

COLUMNS = [
    "external_id",
    "event_name",
    "starts_at",
    "timezone",
    "venue_name",
    "city",
    "state",
    "country",
    "primary_site",
    "performers",
    "status",
    "section_name",
    "section_name_display",
    "general_admission",
    "row_name",
    "row_name_display",
    "quantity",
    "offer_price",
    "face_value",
    "restrictions",
    "restriction_detail",
]
LIST_SEPARATOR = "|"


class FileError(Exception):
    """The file as a whole cannot be read (unknown format, not CSV/JSON, missing columns)."""


@dataclass
class Item:
    line: int  # CSV: line number in the file (the header is line 1); JSON: position, from 1
    data: dict[str, Any] | None  # None: the JSON item is not an object


class _ListField(serializers.Field):
    """A list of strings, given as a JSON array or as one ``|``-separated string."""

    def to_internal_value(self, data):
        if data in (None, ""):
            return []
        if isinstance(data, str):
            data = data.split(LIST_SEPARATOR)
        if not isinstance(data, list) or not all(isinstance(v, str) for v in data):
            raise serializers.ValidationError("Must be a list of strings or a '|'-separated string.")
        return [v.strip() for v in data if v.strip()]

    def to_representation(self, value):
        return value


class ImportLineSerializer(serializers.Serializer):
    external_id = serializers.CharField(max_length=100)
    event_name = serializers.CharField(max_length=255)
    starts_at = serializers.CharField(max_length=40)
    timezone = serializers.CharField(max_length=64)
    venue_name = serializers.CharField(max_length=200)
    city = serializers.CharField(max_length=120)
    state = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    country = serializers.RegexField(r"^[A-Za-z]{2}$", max_length=2)
    primary_site = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$", max_length=32)
    performers = _ListField(required=False, default=list)
    status = serializers.ChoiceField(
        choices=Event.Status.values, required=False, allow_blank=True, default=""
    )
    section_name = serializers.CharField(max_length=100)
    section_name_display = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    general_admission = serializers.BooleanField(required=False, default=False)
    row_name = serializers.CharField(max_length=50)
    row_name_display = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    quantity = serializers.IntegerField(min_value=0, max_value=1_000_000)
    offer_price = serializers.DecimalField(max_digits=10, decimal_places=2, min_value=0)
    face_value = serializers.DecimalField(max_digits=10, decimal_places=2, min_value=0)
    restrictions = _ListField(required=False, default=list)
    restriction_detail = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, default=None
    )

    def validate_timezone(self, value: str) -> str:
        try:
            validate_timezone_name(value)
        except Exception as exc:
            raise serializers.ValidationError(f"{value!r} is not an IANA time zone name.") from exc
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        raw = attrs["starts_at"].strip().replace("Z", "+00:00")
        try:
            starts_at = datetime.fromisoformat(raw)
        except ValueError:
            raise serializers.ValidationError(
                {"starts_at": "Use ISO 8601, e.g. 2026-12-01T19:30:00-05:00 (or local time without offset)."}
            )
        if timezone.is_naive(starts_at):
            # Without an offset the time is the venue's wall clock.
            starts_at = starts_at.replace(tzinfo=ZoneInfo(attrs["timezone"]))
        attrs["starts_at"] = starts_at
        attrs["country"] = attrs["country"].upper()
        attrs["primary_site"] = attrs["primary_site"].strip().lower()
        attrs["section_name_display"] = attrs["section_name_display"] or attrs["section_name"]
        if not attrs["row_name_display"]:
            attrs["row_name_display"] = (
                "General Admission" if attrs["general_admission"] else f"Row {attrs['row_name']}"
            )
        attrs["restriction_detail"] = attrs.get("restriction_detail") or None
        return attrs


def line_errors(serializer: ImportLineSerializer) -> str:
    parts = []
    for field, messages in serializer.errors.items():
        text = "; ".join(str(m) for m in (messages if isinstance(messages, list) else [messages]))
        parts.append(text if field == "non_field_errors" else f"{field}: {text}")
    return " | ".join(parts)


def _csv_items(text: str) -> Iterator[Item]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    required = {"external_id", "event_name", "starts_at", "section_name", "row_name", "offer_price"}
    if not required <= set(header):
        raise FileError(f"CSV header lacks: {', '.join(sorted(required - set(header)))}.")
    reader.fieldnames = header
    for record in reader:
        data = {k: (v.strip() if isinstance(v, str) else v) for k, v in record.items() if k is not None}
        data = {k: v for k, v in data.items() if v not in (None, "")}
        yield Item(line=reader.line_num, data=data)


def _json_items(text: str) -> Iterator[Item]:
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileError(f"Not valid JSON: {exc}.") from exc
    if isinstance(payload, dict):
        payload = payload.get("rows")
    if not isinstance(payload, list):
        raise FileError('JSON must be a list of row objects, or {"rows": [...]}.')
    for index, record in enumerate(payload, start=1):
        yield Item(line=index, data=record if isinstance(record, dict) else None)


def read_items(path: Path, *, fmt: str | None = None) -> list[Item]:
    """Items of a CSV or JSON file; the format comes from ``fmt`` or the file's extension."""
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in ("csv", "json"):
        raise FileError("Give a .csv or .json file (or --format csv|json).")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileError(f"Cannot read {path}: {exc}.") from exc
    return list(_csv_items(text) if fmt == "csv" else _json_items(text))
