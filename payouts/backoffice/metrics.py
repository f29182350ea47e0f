"""The service's gauges, computed when ``/metrics`` is scraped (registered in ``BackofficeConfig.ready``).

``buyback_outbox_pending`` and ``buyback_outbox_oldest_age_seconds`` (notifications not yet handed to the
subscribers), ``buyback_task_queue_length{queue}`` (messages waiting in each Celery queue's Redis list),
``buyback_payouts{status}`` and ``buyback_staff_queue{queue}`` (the staff dashboard's queues). Each is one
indexed query (one Redis pipeline for the queues); the figures are kept in the cache for
``GAUGES_CACHE_SECONDS``, so scrapes from several Prometheus servers or processes cost one computation.
Labels are statuses and queue names, never an id.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from orders.models import Notification

from ..models import Payout
from .dashboard import _queues

logger = logging.getLogger(__name__)

GAUGES_CACHE_KEY = "metrics:gauges:v1"
GAUGES_CACHE_SECONDS = 5


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


_redis_client = None


def _broker_client():
    global _redis_client
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    if _redis_client is None:
        import redis

        _redis_client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    return _redis_client


def task_queue_lengths() -> dict[str, int]:
    """LLEN of each declared Celery queue (0 for each when the broker is not Redis, so dashboards and alerts
    read the same series)."""
    from config.celery import QUEUES

    client = _broker_client()
    if client is None:
        return dict.fromkeys(QUEUES, 0)
    pipe = client.pipeline(transaction=False)
    for name in QUEUES:
        pipe.llen(name)
    return {name: int(length) for name, length in zip(QUEUES, pipe.execute(), strict=True)}


def gauges_compute() -> dict:
    now = timezone.now()
    # The partial index ntf_undispatched holds exactly these rows.
    outbox = Notification.objects.filter(dispatched_at__isnull=True).aggregate(
        pending=Count("id"), oldest=Min("created_at")
    )
    payouts = dict(Payout.objects.order_by().values_list("status").annotate(n=Count("id")))
    figures = {
        "outbox_pending": outbox["pending"],
        "outbox_oldest_age_seconds": (now - outbox["oldest"]).total_seconds() if outbox["oldest"] else 0.0,
        "payouts": {status: payouts.get(status, 0) for status in Payout.Status.values},
        "staff_queue": {_slug(queue.label): queue.count for queue in _queues(today=now.date(), now=now)},
        "task_queue_length": {},
    }
    try:
        figures["task_queue_length"] = task_queue_lengths()
    except Exception:
        logger.warning("metrics: the broker did not answer the queue lengths", exc_info=True)
    return figures


def gauges() -> dict:
    """The figures, from the cache when a scrape computed them in the last few seconds. A cache that does
    not answer costs only the caching."""
    try:
        figures = cache.get(GAUGES_CACHE_KEY)
    except Exception:
        logger.warning("metrics: the cache did not answer", exc_info=True)
        return gauges_compute()
    if figures is None:
        figures = gauges_compute()
        try:
            cache.set(GAUGES_CACHE_KEY, figures, GAUGES_CACHE_SECONDS)
        except Exception:
            logger.warning("metrics: the cache did not answer", exc_info=True)
    return figures


class BuybackGauges:
    """A prometheus-client collector: the gauges above, from :func:`gauges`."""

    def describe(self):
        return []

    def collect(self):
        try:
            figures = gauges()
        except Exception:
            # The database is down: the scrape still answers with every other metric (and the alerts on
            # these gauges see them vanish rather than a failed scrape).
            logger.warning("metrics: the gauges could not be computed", exc_info=True)
            return
        yield GaugeMetricFamily(
            "buyback_outbox_pending", "Notifications not yet dispatched.", value=figures["outbox_pending"]
        )
        yield GaugeMetricFamily(
            "buyback_outbox_oldest_age_seconds",
            "Age of the oldest notification not yet dispatched (0 when none).",
            value=figures["outbox_oldest_age_seconds"],
        )
        queues = GaugeMetricFamily(
            "buyback_task_queue_length", "Messages waiting in each Celery queue.", labels=["queue"]
        )
        for name, length in figures["task_queue_length"].items():
            queues.add_metric([name], length)
        yield queues
        payouts = GaugeMetricFamily("buyback_payouts", "Payouts by status.", labels=["status"])
        for status, count in figures["payouts"].items():
            payouts.add_metric([status], count)
        yield payouts
        staff = GaugeMetricFamily(
            "buyback_staff_queue", "Items in each queue of the staff dashboard.", labels=["queue"]
        )
        for name, count in figures["staff_queue"].items():
            staff.add_metric([name], count)
        yield staff


COLLECTOR = BuybackGauges()
