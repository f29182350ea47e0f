"""A prefork Celery worker, as the Procfile runs it, keeps its database connections between tasks: each task
gives them back to the process's pool, and the next one borrows the same server processes (Celery's Django
fixup alone closes the pool after every task, so every task connected again). Its pool ends with it."""

import signal
import uuid

import pytest
from django.db import connection

from config.celery import app as celery_app

from .live import production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "orders.tasks.notifications_dispatch_pending"  # a beat sweep: reads the database, changes nothing here


def _backends(application_name: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [application_name])
        return {pid for (pid,) in cursor.fetchall()}


def test_a_prefork_worker_keeps_its_connections_between_tasks(processes, worker_queue):
    name = f"worker-db-{uuid.uuid4().hex[:8]}"
    env = production_env(TASK_QUEUE=worker_queue)
    # The worker's connections, told apart from everyone else's.
    env["DATABASE_URL"] += f"?application_name={name}"
    worker = processes.celery_worker(env, queue=worker_queue, name=name, pool="prefork")

    def run(count: int) -> None:
        done = worker.output().count("succeeded in")
        for _ in range(count):
            celery_app.send_task(TASK, queue=worker_queue)
        assert wait_for(lambda: worker.output().count("succeeded in") >= done + count, timeout=60), (
            worker.output()[-3000:]
        )

    run(1)
    after_one = _backends(name)
    assert after_one, "no connection left open after a task: the pool was closed"
    run(5)
    # The same server processes: no task connected again.
    assert _backends(name) == after_one
    assert "fixup not found" not in worker.output()

    worker.kill(signal.SIGTERM)  # a warm shutdown: the child closes its pool as it ends
    assert wait_for(lambda: not _backends(name), timeout=30)
