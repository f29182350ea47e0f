"""Services publish tasks by name: the registered task runs in-process when tasks are eager, nothing is
published before the transaction commits, and a broker outage is logged, never raised."""

import logging

import pytest
from django.db import transaction

from config.core import publish as publishing
from orders import outbox


def test_a_task_published_by_name_runs_in_process_when_tasks_are_eager(monkeypatch):
    ran = []
    monkeypatch.setattr(outbox, "notifications_purge", lambda: ran.append("purged") or 0)
    assert publishing.publish("orders.tasks.notifications_purge") is True
    assert ran == ["purged"]


@pytest.mark.django_db
def test_a_task_published_on_commit_waits_for_the_commit_and_not_for_a_rollback(
    monkeypatch, django_capture_on_commit_callbacks
):
    ran = []
    monkeypatch.setattr(outbox, "notifications_purge", lambda: ran.append("purged") or 0)
    with pytest.raises(RuntimeError), transaction.atomic():
        publishing.publish_on_commit("orders.tasks.notifications_purge")
        raise RuntimeError("rolled back")
    with django_capture_on_commit_callbacks(execute=True):
        publishing.publish_on_commit("orders.tasks.notifications_purge")
        assert ran == []
    assert ran == ["purged"]


def test_a_countdown_reaches_the_broker_with_the_task(monkeypatch):
    sent = []
    task = publishing.task_named("orders.tasks.notifications_purge")
    monkeypatch.setattr(task, "apply_async", lambda **kwargs: sent.append(kwargs))
    assert publishing.publish("orders.tasks.notifications_purge", countdown=30) is True
    assert sent == [{"args": (), "kwargs": {}, "countdown": 30}]


def test_a_countdown_of_0_publishes_at_once(monkeypatch):
    sent = []
    task = publishing.task_named("orders.tasks.notifications_purge")
    monkeypatch.setattr(task, "apply_async", lambda **kwargs: sent.append(("later", kwargs)))
    monkeypatch.setattr(task, "delay", lambda *args, **kwargs: sent.append(("now", kwargs)))
    assert publishing.publish("orders.tasks.notifications_purge", countdown=0) is True
    assert sent == [("now", {})]


def test_a_broker_outage_is_logged_and_reported_not_raised(monkeypatch):
    task = publishing.task_named("orders.tasks.notifications_purge")

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    # The module's own logger, read directly: what other tests did to the root logger's handlers (a worker or
    # gunicorn set up in-process) does not decide what this one sees.
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level=logging.WARNING)
    handler.emit = records.append
    monkeypatch.setattr(publishing.logger, "disabled", False)
    level = publishing.logger.level
    publishing.logger.setLevel(logging.WARNING)
    publishing.logger.addHandler(handler)
    monkeypatch.setattr(task, "delay", broker_down)
    try:
        assert publishing.publish("orders.tasks.notifications_purge") is False
    finally:
        publishing.logger.removeHandler(handler)
        publishing.logger.setLevel(level)
    assert [r.levelno for r in records] == [logging.WARNING]
    assert "Could not publish" in records[0].getMessage()
