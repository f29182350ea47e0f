"""factory_boy factories for the catalog and quote rows an order is made from, and for orders."""

from datetime import timedelta
from decimal import Decimal

import factory
from django.utils import timezone

from quotes.codec import encode_quote_id
from quotes.models import Quote
from tests.catalog import factories as catalog_factories


class VenueFactory(catalog_factories.VenueFactory):
    name = factory.Sequence(lambda n: f"Harbor Arena {n}")
    city = "Boston"
    state = "MA"


class EventFactory(catalog_factories.EventFactory):
    name = factory.Sequence(lambda n: f"The Midnight Owls Tour {n}")
    venue = factory.SubFactory(VenueFactory)
    starts_at = factory.LazyFunction(lambda: (timezone.now() + timedelta(days=30)).replace(microsecond=0))


class SectionFactory(catalog_factories.SectionFactory):
    event = factory.SubFactory(EventFactory)
    name = factory.Sequence(lambda n: f"{100 + n}")
    name_display = factory.LazyAttribute(lambda o: f"Section {o.name}")


class RowFactory(catalog_factories.RowFactory):
    """A row priced at 85.00 with one restriction, as the order tests expect."""

    section = factory.SubFactory(SectionFactory)
    name = "F"
    name_display = "Row F"
    available_quantity = 20
    offer_price = Decimal("85.00")
    face_value = Decimal("85.00")
    restrictions = factory.LazyFunction(lambda: ["Obstructed view"])
    restriction_detail = "Partial view of the stage"


class QuoteFactory(factory.django.DjangoModelFactory):
    """A quote as quote creation makes it: a snapshot of ``row`` for ``partner``."""

    class Meta:
        model = Quote

    partner = None  # required
    row = factory.SubFactory(RowFactory)
    section = factory.SelfAttribute("row.section")
    event = factory.SelfAttribute("row.section.event")
    quantity = 2
    offer_price = factory.SelfAttribute("row.offer_price")
    total_price = factory.LazyAttribute(lambda o: o.offer_price * o.quantity)
    face_value = factory.SelfAttribute("row.face_value")
    event_name = factory.SelfAttribute("event.name")
    section_name = factory.SelfAttribute("section.name")
    section_name_display = factory.SelfAttribute("section.name_display")
    row_name = factory.SelfAttribute("row.name")
    row_name_display = factory.SelfAttribute("row.name_display")
    general_admission = factory.SelfAttribute("section.general_admission")
    restrictions = factory.SelfAttribute("row.restrictions")
    restriction_detail = factory.SelfAttribute("row.restriction_detail")
    primary_site = factory.SelfAttribute("event.primary_site")
    user_metadata = factory.LazyFunction(
        lambda: {
            "first_name": "Jane",
            "last_name": "Doe",
            "email": "jane.doe@example.com",
            "phone_number": "+16175550100",
        }
    )
    created_at = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyAttribute(lambda o: o.created_at + timedelta(seconds=900))


def quote_token(quote: Quote) -> str:
    return encode_quote_id(quote.pk)
