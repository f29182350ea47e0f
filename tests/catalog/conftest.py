from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from partners import tokens

from .factories import EventFactory, PerformerFactory, RowFactory, SectionFactory, VenueFactory


@pytest.fixture
def event(db):
    """An upcoming event with a reserved section of two rows and a general-admission section of one."""
    venue = VenueFactory(name="Madison Square Garden", city="New York")
    event = EventFactory(name="Harbor Lights Tour", venue=venue, performers=[PerformerFactory(name="Harbor")])
    lower = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    RowFactory(section=lower, name="A", offer_price="142.25", available_quantity=8)
    RowFactory(section=lower, name="B", offer_price="120.50", available_quantity=16)
    floor = SectionFactory(event=event, name="Floor GA", general_admission=True)
    RowFactory(section=floor, name="GA", offer_price="95.00", available_quantity=40)
    return event


@pytest.fixture
def no_catalog_cache(settings):
    settings.CATALOG_CACHE_SECONDS = 0


def client_with_scope(partner, scope: str) -> APIClient:
    """A client whose token carries only ``scope``."""
    expires_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    session = partner.token_sessions.create(scope=scope, expires_at=expires_at)
    token = tokens.sign(
        partner_id=partner.public_id, session_id=session.session_id, expires_at=expires_at, scope=scope
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def section_change_form(section) -> dict:
    """The admin's section change form as its page shows it: the section and its rows, ordered by name."""
    rows = list(section.rows.order_by("name"))
    data = {
        "name": section.name,
        "name_display": section.name_display,
        "event": section.event_id,
        "rows-TOTAL_FORMS": str(len(rows)),
        "rows-INITIAL_FORMS": str(len(rows)),
    }
    for i, row in enumerate(rows):
        data.update(
            {
                f"rows-{i}-id": row.pk,
                f"rows-{i}-section": section.pk,
                f"rows-{i}-name": row.name,
                f"rows-{i}-name_display": row.name_display,
                f"rows-{i}-available_quantity": row.available_quantity,
                f"rows-{i}-offer_price": row.offer_price,
                f"rows-{i}-face_value": row.face_value,
                f"rows-{i}-restrictions": "[]",
                f"rows-{i}-restriction_detail": "",
            }
        )
    return data
