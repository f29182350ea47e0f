"""Every task is named like the service it runs, so a task name found in the beat schedule, a route or a
``send_task`` call leads straight to its code: ``<app>.tasks.<service>`` runs ``<service>``."""

import importlib
import inspect
import pkgutil

from django.conf import settings

from config.celery import app as celery_app

# The shared mechanics' own tasks (config.core) and the apps'.
APPS = ("config.core", "partners", "catalog", "quotes", "orders", "payouts")


def _app_of(name: str) -> str | None:
    return next((app for app in APPS if name.startswith(f"{app}.")), None)


def _our_tasks() -> dict:
    celery_app.loader.import_default_modules()
    return {name: task for name, task in celery_app.tasks.items() if _app_of(name)}


def _functions_outside_tasks(app: str) -> set[str]:
    names = set()
    package = importlib.import_module(app)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{app}."):
        if info.name.endswith(".tasks") or ".migrations" in info.name or ".management" in info.name:
            continue
        module = importlib.import_module(info.name)
        names.update(
            n for n, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == info.name
        )
    return names


def test_each_task_is_registered_under_its_module_and_function_name():
    tasks = _our_tasks()
    assert "orders.tasks.notifications_purge" in tasks
    for name, task in tasks.items():
        assert name == f"{task.run.__module__}.{task.run.__name__}"


# Task names kept for the messages already in queues when their service became another's batch of one or many:
# the name, and the service it runs now.
KEPT_NAMES = {"orders.tasks.notifications_deliver_many": "notifications_deliver"}


def test_each_task_bears_the_name_of_a_service_of_its_app():
    for name in _our_tasks():
        app, function = _app_of(name), KEPT_NAMES.get(name) or name.rsplit(".", 1)[1]
        # The slow lane runs the same attempt as its fast twin, on a queue of its own.
        assert function.removesuffix("_slow") in _functions_outside_tasks(app), name


def test_the_beat_schedule_names_only_registered_tasks():
    tasks = _our_tasks()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in tasks


def test_the_webhook_routes_name_registered_tasks():
    tasks = _our_tasks()
    assert set(celery_app.conf.task_routes) <= set(tasks)
