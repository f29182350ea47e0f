"""Publishing Celery tasks from request and service code: a broker outage is logged, never raised.

Every caller has a periodic sweep that finds the work again from the database (the outbox sweep, the
confirmation sweep, the refund sweep, the expiry run), so a message that never reached the broker is late,
never lost. A web request must not fail, nor wait long, because the broker is down.
"""

import logging
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)


def publish(task: Any, *args: Any, **kwargs: Any) -> bool:
    """``task.delay(*args, **kwargs)``; returns whether the broker took the message."""
    try:
        task.delay(*args, **kwargs)
    except Exception:
        logger.warning(
            "Could not publish %s%s; its periodic sweep will publish it again",
            getattr(task, "name", task),
            args,
            exc_info=True,
        )
        return False
    return True


def publish_after_commit(task: Any, *args: Any, **kwargs: Any) -> None:
    """Publish once the current transaction commits (at once outside one); nothing if it rolls back."""
    transaction.on_commit(lambda: publish(task, *args, **kwargs))
