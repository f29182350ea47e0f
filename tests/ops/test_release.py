"""The Procfile's ``release`` step, as written, makes a fresh database and an empty static folder ready for
the production shape: every migration applied and the static files collected, so the admin's sign-in page
answers (without collectstatic it is a 500 under DJANGO_ENV=production)."""

from __future__ import annotations

import os
import subprocess

import psycopg
import pytest

from tests.faults.live import BIN, ROOT, Processes, http, production_env

from .conftest import scratch_database

pytestmark = pytest.mark.django_db(transaction=True)


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def test_the_release_line_migrates_and_collects_static_files_for_the_admin(tmp_path):
    with scratch_database("release") as url:
        env = production_env(
            DATABASE_URL=url,
            STATIC_ROOT=str(tmp_path / "static"),
            MEDIA_SHARED="true",
            # What a process manager gives the line: the virtualenv's python first on PATH.
            PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        env.pop("SECURE_SSL_REDIRECT")  # the admin is asked for over HTTPS below, as behind the TLS proxy
        processes = Processes(tmp_path)
        try:
            # Before the release the admin is a 500: no tables, no static files.
            released = subprocess.run(  # noqa: S603 - the Procfile's own line
                ["/bin/sh", "-c", f"exec {procfile()['release']}"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert released.returncode == 0, released.stdout[-3000:] + released.stderr[-3000:]
            assert "static files copied" in released.stdout, released.stdout[-2000:]
            with psycopg.connect(url.replace("postgres://", "postgresql://")) as conn:
                applied = conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
            unapplied = subprocess.run(  # noqa: S603
                [str(BIN / "python"), "manage.py", "migrate", "--check"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert applied > 0 and unapplied.returncode == 0, unapplied.stdout + unapplied.stderr
            assert (tmp_path / "static" / "staticfiles.json").exists()

            web = processes.web(env)
            page = http("GET", web + "/admin/login/", headers={"X-Forwarded-Proto": "https"})
            assert page.status == 200, page.body
            assert "csrfmiddlewaretoken" in page.body["_text"]
            # Its stylesheet is one of the collected files, served by the web process itself.
            sheet = next(
                line.split('href="', 1)[1].split('"', 1)[0]
                for line in page.body["_text"].splitlines()
                if 'rel="stylesheet"' in line and "/static/" in line
            )
            assert http("GET", web + sheet, headers={"X-Forwarded-Proto": "https"}).status == 200
        finally:
            processes.stop_all()
