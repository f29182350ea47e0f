"""factory_boy factory for quotes: the snapshot is copied from the row, as ``quote_create`` does."""

from datetime import timedelta

import factory
from django.conf import settings
from django.utils import timezone

from quotes.models import Quote
from tests.catalog.factories import RowFactory


class QuoteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Quote

    row = factory.SubFactory(RowFactory)
    section = factory.LazyAttribute(lambda o: o.row.section)
    event = factory.LazyAttribute(lambda o: o.row.section.event)
    quantity = 2
    offer_price = factory.LazyAttribute(lambda o: o.row.offer_price)
    total_price = factory.LazyAttribute(lambda o: o.offer_price * o.quantity)
    face_value = factory.LazyAttribute(lambda o: o.row.face_value)
    event_name = factory.LazyAttribute(lambda o: o.event.name)
    section_name = factory.LazyAttribute(lambda o: o.section.name)
    section_name_display = factory.LazyAttribute(lambda o: o.section.name_display)
    row_name = factory.LazyAttribute(lambda o: o.row.name)
    row_name_display = factory.LazyAttribute(lambda o: o.row.name_display)
    general_admission = factory.LazyAttribute(lambda o: o.section.general_admission)
    restrictions = factory.LazyAttribute(lambda o: list(o.row.restrictions))
    restriction_detail = factory.LazyAttribute(lambda o: o.row.restriction_detail)
    primary_site = factory.LazyAttribute(lambda o: o.event.primary_site)
    user_metadata = factory.LazyFunction(dict)
    created_at = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyAttribute(lambda o: o.created_at + timedelta(seconds=settings.QUOTE_TTL_SECONDS))
