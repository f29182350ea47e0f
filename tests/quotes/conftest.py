import pytest

from tests.catalog.factories import EventFactory, RowFactory, SectionFactory, VenueFactory


@pytest.fixture
def event(db):
    """An upcoming event: "Lower 101" with rows A (142.25 × 8), B (120.50 × 16), C (99.00 × 30, restricted);
    "Floor GA" with one row GA (95.00 × 40)."""
    venue = VenueFactory(name="Madison Square Garden", city="New York")
    event = EventFactory(name="Harbor Lights Tour", venue=venue, primary_site="ticketmaster")
    lower = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    RowFactory(
        section=lower,
        name="A",
        name_display="Row A",
        offer_price="142.25",
        face_value="165.00",
        available_quantity=8,
    )
    RowFactory(
        section=lower,
        name="B",
        name_display="Row B",
        offer_price="120.50",
        face_value="165.00",
        available_quantity=16,
    )
    RowFactory(
        section=lower,
        name="C",
        name_display="Row C",
        offer_price="99.00",
        face_value="150.00",
        available_quantity=30,
        restrictions=["Obstructed view"],
        restriction_detail="Pillar at seats 1-4.",
    )
    floor = SectionFactory(
        event=event, name="Floor GA", name_display="Floor General Admission", general_admission=True
    )
    RowFactory(
        section=floor,
        name="GA",
        name_display="General Admission",
        offer_price="95.00",
        face_value="89.50",
        available_quantity=40,
    )
    return event


@pytest.fixture
def quote_body(event):
    def make(**overrides):
        body = {"event_id": event.event_id, "section_name": "Lower 101", "row_name": "B", "quantity": 2}
        body.update(overrides)
        return {k: v for k, v in body.items() if v is not ...}

    return make
