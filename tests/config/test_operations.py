import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[2]


def test_healthz_needs_no_dependency(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["data"] == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_database_and_redis(client, settings):
    response = client.get("/readyz")
    assert response.status_code == 200
    checks = response.json()["data"]["checks"]
    assert checks["database"] == "ok"
    if settings.REDIS_URL:
        assert checks["redis"] == "ok"


@pytest.mark.django_db
def test_readyz_names_a_dead_redis(client, settings):
    dead = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    with override_settings(CACHES=dead):
        from django.core.cache import caches

        caches._settings = None  # rebuild the handler's view of CACHES
        response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503
    assert body["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert body["error"]["details"]["failing"] == ["redis"]


def _run_settings(env_overrides: dict) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "SECRET_KEY",
            "TOKEN_SIGNING_KEY",
            "QUOTE_ENCRYPTION_KEY",
            "ALLOWED_HOSTS",
            "PAYMENT_PLATFORM",
            "DATABASE_URL",
            "REDIS_URL",
        }
    }
    env.update(env_overrides)
    code = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY[:3])"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "missing",
    [
        "SECRET_KEY",
        "TOKEN_SIGNING_KEY",
        "QUOTE_ENCRYPTION_KEY",
        "ALLOWED_HOSTS",
        "PAYMENT_PLATFORM",
        "DATABASE_URL",
        "REDIS_URL",
    ],
)
def test_production_refuses_to_start_without_keys(missing):
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_ENV": "production",
        "SECRET_KEY": "s" * 50,
        "TOKEN_SIGNING_KEY": "t",
        "QUOTE_ENCRYPTION_KEY": "q",
        "ALLOWED_HOSTS": "api.example.com",
        "PAYMENT_PLATFORM": "sandbox",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/unused",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "MEDIA_SHARED": "true",
    }
    del env[missing]
    result = _run_settings(env)
    assert result.returncode != 0
    assert f"{missing} must be set" in result.stderr


def test_production_settings_start_with_keys():
    result = _run_settings(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_ENV": "production",
            "SECRET_KEY": "s" * 50,
            "TOKEN_SIGNING_KEY": "t",
            "QUOTE_ENCRYPTION_KEY": "q",
            "ALLOWED_HOSTS": "api.example.com",
            "PAYMENT_PLATFORM": "sandbox",
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/unused",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "MEDIA_SHARED": "true",
        }
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "sss"


def test_make_test_creates_the_database_fresh_and_test_fast_reuses_it():
    makefile = (ROOT / "Makefile").read_text()
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert test.startswith(" install\n")  # make test installs, then runs the suite once (make test-dates too)
    assert "tests.suite" in test and "with_services" in test
    fast = makefile.split("\ntest-fast:", 1)[1].split("\n\n", 1)[0]
    assert "--create-db" in test and "--reuse-db" not in test
    assert "--reuse-db" in fast
    assert "make test\n" in (ROOT / ".ci" / "run").read_text()
