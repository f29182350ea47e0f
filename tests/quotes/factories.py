"""factory_boy factory for quotes: the snapshot is copied from the row, as ``quote_create`` does."""

from datetime import timedelta

import factory
from django.conf import settings
from django.utils import timezone

from quotes.codec import encode_quote_id
from quotes.models import Quote
from quotes.services import quotes_flush
from tests.catalog.factories import RowFactory
from tests.partners.factories import PartnerFactory


class QuoteFactory(factory.django.DjangoModelFactory):
    """A quote of ``row`` for ``partner``, with a seller in its ``user_metadata``."""

    class Meta:
        model = Quote

    partner = factory.SubFactory(PartnerFactory)
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
    restrictions = factory.LazyAttribute(lambda o: list(o.row.restrictions))
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
    expires_at = factory.LazyAttribute(lambda o: o.created_at + timedelta(seconds=settings.QUOTE_TTL_SECONDS))


def quote_token(quote: Quote) -> str:
    """The quote id a partner sends (``quote_id``)."""
    return encode_quote_id(quote)


def quotes_written() -> None:
    """Quotes made through the API are kept in Redis first, where Redis keeps them: the batched writer puts
    them in the table (it does nothing in the embedded default, which writes each quote when it is made)."""
    quotes_flush()
