"""factory_boy factory for partners. A partner with API credentials (and their secret) comes from
``tests.conftest.make_partner``, which goes through ``partner_create`` as the admin does."""

import factory

from partners.models import Partner


class PartnerFactory(factory.django.DjangoModelFactory):
    """An active partner without credentials or payment methods."""

    class Meta:
        model = Partner

    name = factory.Sequence(lambda n: f"Resale Partner {n}")
    contact_email = factory.Sequence(lambda n: f"ops@partner{n}.example")
    status = Partner.Status.ACTIVE
