"""The periodic work of the embedded default, run inside the web process.

Production runs ``celery -A config beat`` against the broker. The embedded default (``make run``: no
``REDIS_URL``, tasks run eagerly in-process) has no broker for beat to publish to, so the one web process runs
the same schedule itself: every entry of ``CELERY_BEAT_SCHEDULE`` is applied in-process on its interval by a
daemon thread. Payouts progress, overdue orders expire and lost messages are swept exactly as in production,
only without a separate process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)


@dataclass
class Entry:
    name: str
    task: str
    interval: float
    due: float


def _interval_seconds(schedule) -> float | None:
    if isinstance(schedule, int | float):
        return float(schedule)
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    run_every = getattr(schedule, "run_every", None)  # celery.schedules.schedule
    if isinstance(run_every, timedelta):
        return run_every.total_seconds()
    return None


def entries_from_settings(*, now: float) -> list[Entry]:
    # The first round runs shortly after start, so a fresh `make run` shows progress without waiting a full
    # interval (and the web process has finished booting first).
    first_delay = settings.EMBEDDED_SCHEDULER_FIRST_DELAY_SECONDS
    entries = []
    for name, spec in settings.CELERY_BEAT_SCHEDULE.items():
        interval = _interval_seconds(spec.get("schedule"))
        if interval is None or interval <= 0:
            logger.warning(
                "Periodic entry %s has a schedule the embedded scheduler cannot run; skipped", name
            )
            continue
        entries.append(Entry(name=name, task=spec["task"], interval=interval, due=now + first_delay))
    return entries


def _apply(task_name: str) -> None:
    from config.celery import app

    app.tasks[task_name].apply(throw=True)


class EmbeddedScheduler:
    """Runs due entries one after another on a single daemon thread; a failing task is logged, never fatal."""

    def __init__(
        self,
        entries: list[Entry],
        *,
        run: Callable[[str], None] = _apply,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.entries = entries
        self._run = run
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_due(self) -> list[str]:
        """Run every entry that is due now; returns the names that ran."""
        ran = []
        for entry in self.entries:
            now = self._clock()
            if entry.due > now:
                continue
            close_old_connections()
            try:
                self._run(entry.task)
            except Exception:
                logger.exception(
                    "Periodic task %s failed; it runs again in %.0f s", entry.task, entry.interval
                )
            finally:
                close_old_connections()
            entry.due = self._clock() + entry.interval
            ran.append(entry.name)
        return ran

    def seconds_to_next(self) -> float:
        if not self.entries:
            return 60.0
        return max(0.0, min(entry.due for entry in self.entries) - self._clock())

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_due()
            self._stop.wait(min(self.seconds_to_next(), 60.0))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="embedded-scheduler", daemon=True)
        self._thread.start()
        logger.info("Embedded scheduler started: %s", ", ".join(e.name for e in self.entries))

    def stop(self) -> None:
        self._stop.set()


def should_run_embedded() -> bool:
    """Only where no broker takes beat's messages: tasks run eagerly in this process."""
    from config.celery import app

    return bool(app.conf.task_always_eager)


def start_embedded_scheduler() -> EmbeddedScheduler | None:
    if not should_run_embedded():
        logger.info("A broker is configured: periodic work is celery beat's, not the web process's")
        return None
    from config.celery import app

    app.loader.import_default_modules()  # the apps' tasks modules (autodiscovery is lazy otherwise)
    scheduler = EmbeddedScheduler(entries_from_settings(now=time.monotonic()))
    scheduler.start()
    return scheduler
