"""Fixtures of the operator's tests: a database of the test's own (a fresh deploy, a restore target)."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.db import connection


def _admin_dsn() -> str:
    db = connection.settings_dict
    return f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} user={db['USER'] or 'postgres'} dbname=postgres"


@contextmanager
def scratch_database(tag: str):
    """An empty PostgreSQL database named after the tests' own, dropped afterwards; yields its URL."""
    name = f"{connection.settings_dict['NAME']}_{tag}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_admin_dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    db = connection.settings_dict
    url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"
    try:
        yield url
    finally:
        with psycopg.connect(_admin_dsn(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture
def row(transactional_db):
    from datetime import timedelta

    from django.utils import timezone

    from tests.catalog.factories import EventFactory, RowFactory, SectionFactory

    event = EventFactory(name="Operators Live", starts_at=timezone.now() + timedelta(days=30))
    section = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    return RowFactory(section=section, name="A", available_quantity=50)


@pytest.fixture
def creds(transactional_db):
    from tests.conftest import make_partner

    return make_partner(name="Operated Resale", email="ops@operated.example")
