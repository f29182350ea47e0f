"""How long to wait before trying again: the one backoff of the house.

Every retry computes its delay here: the webhook retry schedule, the endpoint left alone after timeouts,
retried tasks (notification deliveries, the confirmation e-mail, refunds, payouts, alerts) and a database
step tried again after a lost connection. Jitter spreads the retries of one outage so they do not all come
back at the same moment.
"""

import random
from collections.abc import Sequence


def backoff_seconds(
    attempt: int,
    *,
    first: float = 0.0,
    cap: float | None = None,
    schedule: Sequence[float] | None = None,
    jitter: float = 0.0,
) -> float:
    """The delay before retry ``attempt`` (0 for the first retry).

    Either the ``schedule``'s entry (its last one beyond its end) or ``first`` doubling at each attempt, at
    most ``cap``; plus a random share of it, up to ``jitter`` (0.2 adds up to 20 %).
    """
    attempt = max(attempt, 0)
    if schedule is not None:
        base = float(schedule[min(attempt, len(schedule) - 1)])
    else:
        base = first * 2**attempt
        if cap is not None:
            base = min(base, cap)
    if jitter:
        base += random.uniform(0, jitter * base)
    return base


# Retried tasks: 10 s, 20 s, 40 s … at most 10 minutes, plus up to 20 %.
TASK_RETRY_FIRST_SECONDS = 10
TASK_RETRY_MAX_SECONDS = 600
TASK_RETRY_JITTER = 0.2


def task_retry_seconds(retries: int) -> float:
    """The countdown of a task's retry after ``retries`` earlier ones (Celery's ``self.request.retries``)."""
    return backoff_seconds(
        retries, first=TASK_RETRY_FIRST_SECONDS, cap=TASK_RETRY_MAX_SECONDS, jitter=TASK_RETRY_JITTER
    )
