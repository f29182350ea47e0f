"""Publishing Celery tasks from request and service code: a broker outage is logged, never raised.

Every caller has a periodic sweep that finds the work again from the database (the outbox sweep, the
confirmation sweep, the refund sweep, the expiry run), so a message that never reached the broker is late,
never lost. A web request must not fail, nor wait long, because the broker is down.

Services name the task they enqueue (``publish_on_commit("payouts.tasks.order_confirm", pk)``) rather than
import its module: the tasks modules import the services to run them, never the other way round.
"""

import importlib
import logging
from typing import Any

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)


def task_named(name: str) -> Any:
    """The task registered under ``name``, its module imported when no one has imported it yet.

    Publishing through the registered task (rather than ``send_task``) keeps what the app configures for it:
    routes and options apply (and a test that runs tasks in-process still runs it). The app is the process's
    default one, which config/celery.py sets as it is made (``config`` imports it first)."""
    try:
        return current_app.tasks[name]
    except KeyError:
        importlib.import_module(name.rpartition(".")[0])
        return current_app.tasks[name]


def publish(task: Any, *args: Any, countdown: float | None = None, **kwargs: Any) -> bool:
    """Publish ``task`` (a task, or a registered task's name) with these arguments, after ``countdown``
    seconds when it is more than 0 (``None`` or 0: at once); returns whether the broker took the message."""
    try:
        if isinstance(task, str):
            task = task_named(task)
        if not countdown:
            task.delay(*args, **kwargs)
        else:
            task.apply_async(args=args, kwargs=kwargs, countdown=countdown)
    except Exception:
        logger.warning(
            "Could not publish %s%s; its periodic sweep will publish it again",
            getattr(task, "name", task),
            args,
            exc_info=True,
        )
        return False
    return True


def publish_on_commit(name: str, *args: Any, countdown: float | None = None, **kwargs: Any) -> None:
    """Publish the task registered as ``name`` once the current transaction commits (at once outside one);
    nothing if it rolls back."""
    transaction.on_commit(lambda: publish(name, *args, countdown=countdown, **kwargs))
