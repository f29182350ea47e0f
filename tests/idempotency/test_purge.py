"""Keys older than 24 hours are purged by beat, in batches; younger ones stay."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from partners.idempotency.models import IdempotencyKey
from partners.idempotency.tasks import idempotency_key_purge_expired
from tests.conftest import make_partner

pytestmark = pytest.mark.django_db


def _key(partner, name: str, *, age: timedelta) -> IdempotencyKey:
    created = timezone.now() - age
    return IdempotencyKey.objects.create(
        partner=partner,
        livemode=True,
        key=name,
        fingerprint="a" * 64,
        method="POST",
        path="/v1/quotes",
        claim_token=name,
        created_at=created,
        response_status=201,
        response_body={"data": {}},
        completed_at=created,
    )


def test_purge_removes_keys_older_than_24_hours_in_batches():
    partner = make_partner().partner
    old = [_key(partner, f"old-{i}", age=timedelta(hours=24, minutes=i + 1)) for i in range(5)]
    young = _key(partner, "young", age=timedelta(hours=23, minutes=59))
    fresh = _key(partner, "fresh", age=timedelta(0))

    assert idempotency_key_purge_expired.delay(batch_size=2).get() == 5

    remaining = set(IdempotencyKey.objects.values_list("pk", flat=True))
    assert remaining == {young.pk, fresh.pk}
    assert not remaining & {k.pk for k in old}
    assert idempotency_key_purge_expired.delay().get() == 0


def test_purge_runs_on_the_beat_schedule():
    entries = [
        e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == idempotency_key_purge_expired.name
    ]
    assert len(entries) == 1 and entries[0]["schedule"] <= 3600
