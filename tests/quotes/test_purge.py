"""quotes.tasks.quote_purge_expired: long-expired unused quotes go, in batches; nothing else does."""

from datetime import timedelta

import pytest
from django.utils import timezone

from quotes.models import Quote
from quotes.tasks import quote_purge_expired
from tests.conftest import make_partner

from .factories import QuoteFactory

pytestmark = pytest.mark.django_db


def _quote(partner, *, expired_days_ago: float, consumed: bool = False) -> Quote:
    expires_at = timezone.now() - timedelta(days=expired_days_ago)
    return QuoteFactory(
        partner=partner,
        created_at=expires_at - timedelta(minutes=15),
        expires_at=expires_at,
        consumed_at=expires_at - timedelta(minutes=1) if consumed else None,
    )


def test_purge_deletes_only_unused_quotes_past_the_retention_period(settings):
    settings.QUOTE_RETENTION_DAYS = 30
    partner = make_partner().partner
    old = [_quote(partner, expired_days_ago=31) for _ in range(5)]
    recent = _quote(partner, expired_days_ago=29)
    consumed = _quote(partner, expired_days_ago=90, consumed=True)
    active = _quote(partner, expired_days_ago=-0.01)
    assert quote_purge_expired.delay(batch_size=2).get() == 5
    remaining = set(Quote.objects.values_list("pk", flat=True))
    assert remaining == {recent.pk, consumed.pk, active.pk}
    assert not remaining & {q.pk for q in old}


def test_purge_retention_follows_the_setting(settings):
    partner = make_partner().partner
    _quote(partner, expired_days_ago=3)
    settings.QUOTE_RETENTION_DAYS = 7
    assert quote_purge_expired() == 0
    settings.QUOTE_RETENTION_DAYS = 2
    assert quote_purge_expired() == 1
    assert not Quote.objects.exists()
