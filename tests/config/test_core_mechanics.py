"""The shared mechanics in config/core: backoff, batched deletes, templated e-mail, publishing tasks by name."""

import logging
from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.core import mail
from django.db import connection, transaction
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.core import publish as publishing
from config.core.backoff import backoff_seconds, task_retry_seconds
from config.core.mail import send_templated_mail
from config.core.purge import delete_in_batches


def test_backoff_doubles_from_its_first_delay_up_to_its_cap():
    assert [backoff_seconds(n, first=0.1, cap=2.0) for n in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert backoff_seconds(3, first=60) == 480


def test_backoff_follows_a_schedule_and_stays_on_its_last_entry():
    schedule = (5, 300, 1800)
    assert [backoff_seconds(n, schedule=schedule) for n in range(5)] == [5, 300, 1800, 1800, 1800]


def test_backoff_jitter_adds_at_most_its_share_and_spreads_the_retries():
    delays = [backoff_seconds(2, first=10, jitter=0.2) for _ in range(200)]
    assert all(40 <= d <= 48 for d in delays)
    assert len(set(delays)) > 1


def test_retried_tasks_wait_ten_seconds_doubling_up_to_ten_minutes():
    assert 10 <= task_retry_seconds(0) <= 12
    assert 600 <= task_retry_seconds(20) <= 720


def _sessions(count: int, *, expired: bool = True) -> None:
    at = timezone.now() + timedelta(days=-1 if expired else 1)
    Session.objects.bulk_create(
        Session(session_key=f"{'old' if expired else 'new'}{i:05d}", session_data="x", expire_date=at)
        for i in range(count)
    )


@pytest.mark.django_db
def test_batched_delete_removes_every_matching_row_in_batches_and_counts_them():
    _sessions(7)
    _sessions(2, expired=False)
    seen: list[int] = []
    deleted = delete_in_batches(
        Session.objects.filter(expire_date__lt=timezone.now()).order_by("session_key"),
        batch_size=3,
        before_delete=lambda pks: seen.append(len(pks)),
    )
    assert deleted == 7 and seen == [3, 3, 1]
    assert Session.objects.count() == 2


@pytest.mark.django_db
def test_batched_delete_keeps_a_row_that_no_longer_matches_its_recheck():
    _sessions(3)
    Session.objects.filter(session_key="old00001").update(session_data="kept")
    deleted = delete_in_batches(
        Session.objects.filter(expire_date__lt=timezone.now()), batch_size=10, recheck=~Q(session_data="kept")
    )
    assert deleted == 2
    assert list(Session.objects.values_list("session_key", flat=True)) == ["old00001"]


@pytest.mark.django_db
def test_batched_delete_stops_after_max_batches():
    _sessions(5)
    assert delete_in_batches(Session.objects.all(), batch_size=2, max_batches=2) == 4
    assert Session.objects.count() == 1


@pytest.mark.django_db
def test_batched_delete_of_nothing_runs_one_select():
    with CaptureQueriesContext(connection) as queries:
        assert delete_in_batches(Session.objects.all()) == 0
    assert len(queries) == 1


def test_templated_mail_sends_text_and_html_and_marks_test_mode(settings, caplog):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    context = {
        "partner": type("P", (), {"name": "Acme"})(),
        "email": "ops@acme.example",
        "set_password_url": "https://x.example/welcome/SECRET-TOKEN",
        "login_url": "https://x.example/login",
        "valid_days": 3,
    }
    with caplog.at_level(logging.INFO, logger="config.core.mail"):
        send_templated_mail(template="portal_invite", subject="Hello", to="ops@acme.example", context=context)
        send_templated_mail(
            template="portal_invite", subject="Hello", to="ops@acme.example", context=context, livemode=False
        )
    live, test = mail.outbox
    assert live.subject == "Hello" and test.subject == "[TEST] Hello"
    assert live.to == ["ops@acme.example"]
    assert "SECRET-TOKEN" in live.body
    assert live.alternatives[0][1] == "text/html" and "SECRET-TOKEN" in live.alternatives[0][0]
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "portal_invite" in logged and "acme.example" in logged
    assert "SECRET-TOKEN" not in logged and "ops@" not in logged


@pytest.fixture
def sent(monkeypatch):
    """What the registered ``orders.tasks.notifications_purge`` task is asked to publish."""
    calls: list[tuple] = []
    task = publishing.task_named("orders.tasks.notifications_purge")
    monkeypatch.setattr(task, "delay", lambda *a, **kw: calls.append(("delay", a, kw)))
    monkeypatch.setattr(task, "apply_async", lambda args=(), kwargs=None, **opts: calls.append((args, opts)))
    return calls


@pytest.mark.django_db(transaction=True)
def test_publish_on_commit_publishes_the_named_task_once_the_transaction_commits(sent):
    with transaction.atomic():
        publishing.publish_on_commit("orders.tasks.notifications_purge", 7, countdown=30)
        assert sent == []
    assert sent == [((7,), {"countdown": 30})]


@pytest.mark.django_db(transaction=True)
def test_publish_on_commit_publishes_nothing_when_the_transaction_rolls_back(sent):
    with pytest.raises(RuntimeError), transaction.atomic():
        publishing.publish_on_commit("orders.tasks.notifications_purge", 7)
        raise RuntimeError
    assert sent == []


def test_publish_at_once_reports_a_broker_outage_instead_of_raising(monkeypatch):
    task = publishing.task_named("orders.tasks.notifications_purge")

    def down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(task, "delay", down)
    assert publishing.publish("orders.tasks.notifications_purge") is False


def test_a_task_is_found_by_name_before_its_module_is_imported_elsewhere():
    assert (
        publishing.task_named("orders.webhooks.tasks.delivery_attempt").name
        == "orders.webhooks.tasks.delivery_attempt"
    )
