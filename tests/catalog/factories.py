"""factory_boy factories for the catalog. ``EventFactory`` derives ``event_date`` the way the services do."""

from datetime import timedelta
from decimal import Decimal

import factory
from django.utils import timezone

from catalog.models import Event, Performer, Row, Section, Venue
from catalog.services import local_event_date


class VenueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Venue

    name = factory.Sequence(lambda n: f"Test Arena {n}")
    city = "New York"
    state = "NY"
    country = "US"
    timezone = "America/New_York"


class PerformerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Performer

    name = factory.Sequence(lambda n: f"Performer {n}")


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Event
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Test Event {n}")
    venue = factory.SubFactory(VenueFactory)
    starts_at = factory.LazyFunction(lambda: (timezone.now() + timedelta(days=30)).replace(microsecond=0))
    timezone = factory.LazyAttribute(lambda o: o.venue.timezone)
    event_date = factory.LazyAttribute(lambda o: local_event_date(starts_at=o.starts_at, tz_name=o.timezone))
    primary_site = "ticketmaster"
    status = Event.Status.SCHEDULED

    @factory.post_generation
    def performers(self, create, extracted, **kwargs):
        if create and extracted:
            # One at a time: the API lists performers in the order they were linked, and a single add() of
            # several writes them in the order of a set of primary keys (7 and 8 come out as 8, 7).
            for performer in extracted:
                self.performers.add(performer)


class SectionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Section

    event = factory.SubFactory(EventFactory)
    name = factory.Sequence(lambda n: f"Section {n}")
    name_display = factory.LazyAttribute(lambda o: f"{o.name} (display)")
    general_admission = False


class RowFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Row

    section = factory.SubFactory(SectionFactory)
    name = factory.Sequence(lambda n: f"R{n}")
    name_display = factory.LazyAttribute(lambda o: f"Row {o.name}")
    available_quantity = 10
    offer_price = Decimal("120.50")
    face_value = Decimal("150.00")
    restrictions = factory.LazyFunction(list)
    restriction_detail = None
