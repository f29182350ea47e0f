"""The service starts only in one of its two shapes, and the production shape only fully configured: checked
on fresh processes (``django.setup()`` and ``manage.py check``), as an operator would start them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = [
    "SECRET_KEY",
    "TOKEN_SIGNING_KEY",
    "QUOTE_ENCRYPTION_KEY",
    "ALLOWED_HOSTS",
    "PAYMENT_PLATFORM",
    "DATABASE_URL",
    "REDIS_URL",
]
SHAPE_VARIABLES = {"DJANGO_ENV", "SECRET_KEY_FALLBACKS", "DEBUG", "MEDIA_SHARED", *REQUIRED}


def _production(tmp_path, **overrides) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SHAPE_VARIABLES}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_ENV": "production",
            "SECRET_KEY": "a production key of fifty or more random-looking characters 7Hq2",
            "TOKEN_SIGNING_KEY": "production token signing key",
            "QUOTE_ENCRYPTION_KEY": "production quote key",
            "ALLOWED_HOSTS": "api.example.com",
            "PAYMENT_PLATFORM": "sandbox",
            # Named, never reached: settings and the deployment checks open no connection.
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/check",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "MEDIA_SHARED": "true",
        }
    )
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


def _setup(env: dict[str, str], probe: str = "") -> subprocess.CompletedProcess:
    code = "import django; django.setup(); from django.conf import settings; " + (probe or "pass")
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("value", ["prod", "staging", "Production", "production ", "dev", ""])
def test_a_django_env_other_than_the_two_stops_the_service(tmp_path, value):
    env = _production(tmp_path, DJANGO_ENV=value)
    for result in (_setup(env), _manage(env, "check")):
        assert result.returncode != 0, result.stdout
        assert "DJANGO_ENV must be 'development' or 'production'" in result.stderr
        assert repr(value) in result.stderr


@pytest.mark.parametrize("missing", REQUIRED)
@pytest.mark.parametrize("how", ["unset", "empty"])
def test_production_stops_without_each_required_setting(tmp_path, missing, how):
    env = _production(tmp_path, **{missing: None if how == "unset" else ""})
    result = _manage(env, "check")
    assert result.returncode != 0, result.stdout
    assert f"{missing} must be set when DJANGO_ENV=production" in result.stderr


def test_an_unknown_payment_platform_stops_the_service(tmp_path):
    result = _setup(_production(tmp_path, PAYMENT_PLATFORM="stripe-live"))
    assert result.returncode != 0
    assert "Unknown PAYMENT_PLATFORM 'stripe-live': use 'sandbox' or 'stripe'." in result.stderr


def test_development_is_the_default_and_needs_only_the_database_and_redis(tmp_path):
    env = _production(tmp_path, **dict.fromkeys(["DJANGO_ENV", *REQUIRED[:-2]]))
    result = _setup(env, "print(settings.DJANGO_ENV, settings.PAYMENT_PLATFORM, settings.PRODUCTION)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["development", "sandbox", "False"]


@pytest.mark.parametrize("missing", ["DATABASE_URL", "REDIS_URL"])
def test_development_without_the_database_or_redis_points_at_make_run(tmp_path, missing):
    """One program: no shape runs without PostgreSQL and Redis (no SQLite file, no local-memory cache)."""
    env = _production(tmp_path, DJANGO_ENV=None, DATA_DIR=str(tmp_path), **{missing: None})
    result = _setup(env)
    assert result.returncode != 0
    assert f"{missing} must be set: `make run` starts a PostgreSQL and a Redis of its own" in result.stderr


def test_development_reaches_the_services_of_a_running_make_run_through_data_dir(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "services.env").write_text(
        "DATABASE_URL=postgres://postgres@127.0.0.1:1/partner_service\nREDIS_URL=redis://127.0.0.1:2/0\n"
    )
    env = _production(tmp_path, DJANGO_ENV=None, DATA_DIR=str(tmp_path), DATABASE_URL=None, REDIS_URL=None)
    result = _setup(env, "print(settings.DATABASES['default']['PORT'], settings.REDIS_URL)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "redis://127.0.0.1:2/0"]


def test_sqlite_is_refused(tmp_path):
    result = _setup(_production(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3"))
    assert result.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in result.stderr


def test_production_fully_configured_passes_the_deployment_checks(tmp_path):
    result = _manage(_production(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_secret_key_fallbacks_come_from_the_environment(tmp_path):
    env = _production(tmp_path, SECRET_KEY_FALLBACKS="an older key that signed things, the one before it")
    result = _setup(env, "print(repr(settings.SECRET_KEY_FALLBACKS))")
    assert result.returncode == 0, result.stderr
    assert eval(result.stdout) == ["an older key that signed things", "the one before it"]  # noqa: S307
    # The deployment checks accept long fallbacks too.
    fallbacks = "an older key of fifty or more random-looking characters 9Zx4Kp1Lm"
    checked = _manage(
        _production(tmp_path, SECRET_KEY_FALLBACKS=fallbacks), "check", "--deploy", "--fail-level", "WARNING"
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_production_refuses_local_disk_media_unless_declared_shared(tmp_path):
    refused = _manage(_production(tmp_path, MEDIA_SHARED=None), "check")
    assert refused.returncode != 0, refused.stdout
    assert "MEDIA_SHARED=true" in refused.stderr and "AWS_STORAGE_BUCKET_NAME" in refused.stderr
    probe = "print(settings.STORAGES['default']['BACKEND'])"
    shared = _setup(_production(tmp_path, MEDIA_SHARED="true"), probe)
    assert shared.returncode == 0, shared.stderr
    assert shared.stdout.strip() == "django.core.files.storage.FileSystemStorage"
    s3 = _setup(_production(tmp_path, MEDIA_SHARED=None, AWS_STORAGE_BUCKET_NAME="tickets"), probe)
    assert s3.returncode == 0, s3.stderr
    assert s3.stdout.strip() == "storages.backends.s3.S3Storage"
    # The embedded default keeps its files on disk without being asked.
    local = _setup(_production(tmp_path, DJANGO_ENV=None, MEDIA_SHARED=None), probe)
    assert local.stdout.strip() == "django.core.files.storage.FileSystemStorage", local.stderr


def test_no_shape_runs_tasks_in_process(tmp_path):
    """Every task goes to the broker, for the workers; beat, not the web process, runs the periodic work."""
    probe = (
        "from config.celery import app; "
        "print(app.conf.task_always_eager, settings.CELERY_BEAT_SCHEDULER, settings.CACHES['default']['BACKEND'])"
    )
    for shape in ({}, {"DJANGO_ENV": None}):
        result = _setup(_production(tmp_path, **shape), probe)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == [
            "False",
            "config.deploy.beat_leader:LeaderScheduler",
            "config.deploy.cache.ReusingRedisCache",
        ]
