"""The database connections of a Celery worker: back to the process's pool after each task, the pool kept.

Celery's Django fixup (``celery.fixups.django.DjangoWorkerFixup``, Celery 5.7) closes every connection before
and after each task and, in a prefork child with Django's connection pool, closes the pool itself each time
(celery/celery#10554). The next task then builds a new pool and opens ``min_size`` new PostgreSQL connections:
a server process started and authenticated for every task, about a third of a worker's time on a busy flow.

:func:`install` (``config/celery.py``) keeps what the fixup's task hooks are for and drops the pool's closing:

- before and after each task, Django's own cleanup of a request's end (``close_old_connections``): a
  connection that failed or outlived ``CONN_MAX_AGE`` is closed, and with the pool (``CONN_MAX_AGE`` 0) every
  connection goes back to the pool, which checks it before lending it again
  (``config/deploy/postgresql/base.py``); after the task, Django's caches are closed too, as the fixup does;
- the fixup's other hooks stay: a forked child still closes the connections and pools inherited from its
  parent (``worker_process_init``) before it opens its own;
- a child that ends (``worker_process_shutdown``) closes its pool, so its connections end with it.

If the fixup's hooks are not found (a Celery whose fixup changed), the fixup is left as it is and a warning
says so: slower, never wrong.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from celery import Celery, signals

logger = logging.getLogger(__name__)


def _worker_fixup(app: Celery):
    """The Django fixup's worker part, once the worker made it (``None``: no such fixup)."""
    for fixup in getattr(app, "_fixups", None) or ():
        worker_fixup = getattr(fixup, "_worker_fixup", None)
        if worker_fixup is not None and hasattr(worker_fixup, "on_task_prerun"):
            return worker_fixup
    return None


def connections_released(**_: Any) -> None:
    """Every connection of this thread back to its pool (closed, without a pool), as at a request's end."""
    from django.db import close_old_connections

    close_old_connections()


def task_finished(**kwargs: Any) -> None:
    """After a task: its connections released, and Django's caches closed, as the fixup does."""
    from django.core.cache import close_caches

    connections_released(**kwargs)
    close_caches()


def pools_closed(**_: Any) -> None:
    """The pools of this process closed (a child that ends)."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        with contextlib.suppress(Exception):
            conn.close()
            conn.close_pool_if_made()  # config/deploy/postgresql: never a pool made to be closed


def _replace_task_hooks(app: Celery) -> bool:
    worker_fixup = _worker_fixup(app)
    if worker_fixup is None:
        return False
    signals.task_prerun.disconnect(worker_fixup.on_task_prerun)
    signals.task_postrun.disconnect(worker_fixup.on_task_postrun)
    signals.task_prerun.connect(connections_released, weak=False, dispatch_uid=f"{__name__}.prerun")
    signals.task_postrun.connect(task_finished, weak=False, dispatch_uid=f"{__name__}.postrun")
    return True


def install(app: Celery) -> None:
    """Replace the fixup's task hooks once the worker installed them (``worker_init``, which the fixup's own
    receiver, connected when the app was made, handles first); checked again in each forked child."""

    def on_worker_init(**_: Any) -> None:
        if not _replace_task_hooks(app):
            logger.warning("Celery's Django fixup not found: connections are handled as Celery does")

    def on_worker_process_init(**_: Any) -> None:
        _replace_task_hooks(app)  # idempotent; in case the fixup's hooks were connected after worker_init

    signals.worker_init.connect(on_worker_init, weak=False, dispatch_uid=f"{__name__}.worker_init")
    signals.worker_process_init.connect(
        on_worker_process_init, weak=False, dispatch_uid=f"{__name__}.worker_process_init"
    )
    signals.worker_process_shutdown.connect(pools_closed, weak=False, dispatch_uid=f"{__name__}.shutdown")
