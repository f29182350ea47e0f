"""The retrying task: the one list of errors worth another try, and the one way a task tries again.

Every task whose work may fail for now is declared on ``RetryingTask``
(``@shared_task(base=RetryingTask, name=...)``): its body is the service call alone, and an error of
``TRANSIENT_ERRORS`` (or of the task's own ``transient``) retries the task after ``task_retry_seconds`` (10 s,
20 s, 40 s … at most 10 minutes, plus up to 20 %), ``MAX_RETRIES`` times unless the task says otherwise; any
other error is a bug or a permanent refusal and fails the task at once. The services a task runs are
idempotent, so running one again is always safe.

The other tasks are the sweeps beat runs (and a webhook attempt, whose delivery row schedules the next one):
they never retry, their next run is the retry.
"""

from __future__ import annotations

import functools
import logging
import smtplib

from celery import Task
from celery.exceptions import Ignore, Retry
from django.db import InterfaceError, OperationalError

from .backoff import task_retry_seconds

logger = logging.getLogger(__name__)

# The database's connection failed (a reset, a failover, a restart): the next connection may work.
DB_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
# Worth another try for every task and every subscriber: the database, the network or the mail server did not
# answer.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    *DB_ERRORS,
    ConnectionError,
    TimeoutError,
    smtplib.SMTPException,
)
MAX_RETRIES = 8


class RetryingTask(Task):
    """The base of every task that retries (see the module's docstring).

    ``transient``: the task's own errors that mean "try again later", on top of ``TRANSIENT_ERRORS`` (the
    payment platform's outage for the payouts tasks). A task whose errors depend on its arguments overrides
    ``transient_for``.
    """

    max_retries = MAX_RETRIES
    transient: tuple[type[BaseException], ...] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        # Celery makes one subclass per task, with the decorated function as ``run``: wrap it once there.
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is None:
            return
        bound = not isinstance(run, staticmethod)
        function = run if bound else run.__func__

        @functools.wraps(function)
        def retrying_run(self, *args, **kwargs):
            try:
                return function(self, *args, **kwargs) if bound else function(*args, **kwargs)
            except (Ignore, Retry):
                raise
            except self.transient_for(*args, **kwargs) as exc:
                logger.warning(
                    "%s%r failed for now (%r); retrying", self.name, args, exc, extra={"task": self.name}
                )
                raise self.retry(exc=exc, countdown=task_retry_seconds(self.request.retries))

        cls.run = retrying_run

    def transient_for(self, *args, **kwargs) -> tuple[type[BaseException], ...]:
        """The errors after which this run is tried again."""
        return TRANSIENT_ERRORS + tuple(self.transient)
