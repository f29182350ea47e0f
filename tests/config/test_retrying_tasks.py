"""The retrying task (config/core/retrying.py): one list of transient errors, one backoff, for every task that
retries; the others are the sweeps beat runs again anyway."""

import inspect

import pytest
from django.conf import settings
from django.db import OperationalError

from config.celery import app as celery_app
from config.core.retrying import MAX_RETRIES, TRANSIENT_ERRORS, RetryingTask

APPS = ("partners", "catalog", "quotes", "orders", "payouts")


def _our_tasks() -> dict:
    celery_app.loader.import_default_modules()
    return {name: task for name, task in celery_app.tasks.items() if name.split(".")[0] in APPS}


class Flaky(Exception):
    """A task's own error that means "later" (as the payment platform's outage is for the payouts tasks)."""


calls: list[str] = []


@celery_app.task(base=RetryingTask, name="tests.config.flaky", transient=(Flaky,))
def flaky(failures: list[str]) -> int:
    calls.append("run")
    if len(calls) <= len(failures):
        raise {"database": OperationalError, "own": Flaky, "bug": ValueError}[failures[len(calls) - 1]]("no")
    return len(calls)


@pytest.fixture
def countdowns(monkeypatch) -> list[float]:
    calls.clear()
    seen: list[float] = []
    real_retry = flaky.retry

    def recording_retry(*args, **kwargs):
        seen.append(kwargs["countdown"])
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(flaky, "retry", recording_retry)
    return seen


def test_transient_errors_are_retried_with_the_house_backoff_until_the_run_succeeds(countdowns):
    result = flaky.apply(args=[["database", "own", "database"]])
    assert result.successful() and result.result == 4 and calls == ["run"] * 4
    # 10 s, 20 s, 40 s, plus up to 20 %.
    assert [low <= c <= low * 1.2 for c, low in zip(countdowns, (10, 20, 40), strict=True)] == [True] * 3


def test_another_error_fails_the_task_at_once(countdowns):
    result = flaky.apply(args=[["bug"]])
    assert isinstance(result.result, ValueError) and calls == ["run"] and countdowns == []


def test_a_transient_error_that_lasts_gives_up_after_the_retries(countdowns):
    result = flaky.apply(args=[["database"] * (MAX_RETRIES + 5)])
    assert isinstance(result.result, OperationalError)
    assert len(calls) == MAX_RETRIES + 1 and max(countdowns) <= 600 * 1.2


def test_every_task_either_retries_as_a_retrying_task_or_is_run_again_by_beat():
    repeated = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} | {
        "orders.transfers.tasks.ses_sweep",  # on the beat when the SES channel has a bucket
        "partners.tasks.token_sessions_flush",  # on the beat where token sessions are kept in Redis first
        "quotes.tasks.quotes_flush",  # on the beat where quotes are kept in Redis first
        "orders.tasks.orders_cancel_for_canceled_events",  # run by the expiry's beat too
        *celery_app.conf.task_routes,  # the webhook attempts: their delivery row schedules the next one
    }
    tasks = _our_tasks()
    retrying = {name for name, task in tasks.items() if isinstance(task, RetryingTask)}
    assert {"payouts.tasks.refund_for_order", "orders.tasks.notifications_deliver"} <= retrying
    for name, task in tasks.items():
        assert (name in retrying) != (name in repeated), name
        assert "self.retry" not in inspect.getsource(task.run), name  # no copied retry wrapper
    assert all(issubclass(error, Exception) for error in TRANSIENT_ERRORS)
