"""``make bench``: the service against the framework's ceiling, in two modes measured in one run.

    .venv/bin/python -m bench.run [--mode both|direct|production] [--quick] [--duration 10] [--rounds 3] ...

The modes (bench/README.md):

- **direct**: the service as ``gunicorn config.wsgi --workers 3 --threads 1`` (sync workers, bound directly, no
  proxy), one Celery worker as the Procfile's ``worker`` line runs it (``--queues celery --concurrency 4``), and
  as the ceiling a separate minimal Django project (bench/bare_project) under the same gunicorn flags. wrk
  ``-t2 -c16``, 8 s runs, 2 interleaved rounds; after each flow run the Celery backlog, and 15 s later; the events
  list on a big catalog against the small one.
- **production**: ``gunicorn config.wsgi`` with gthread workers behind nginx (bench/stack.py), one Celery worker,
  the ceiling a bare view inside the service's own project (bench/baseline.py); the 10 MB PDF's memory and the
  metrics middleware's cost.

In each mode, on loopback:
1. a fresh PostgreSQL database (``BENCH_DATABASE_URL``, default ``ps_bench``; ``ps_bench_direct`` for the direct
   mode), Redis (``BENCH_REDIS_URL``, default db 6, flushed), ``migrate``, ``seed_catalog --events 200``,
   a few partners with payment methods (``create_partner --with-payment-methods``);
2. rounds of wrk runs, interleaved so that drift on a shared machine hits every scenario alike:
   the token endpoint, the events list, the rows endpoint, quote creation, order creation and the whole
   quote→order flow, with the ceiling run before the first and again after each (``--ceiling-once``: once a
   round, before the first); each ratio is taken against the mean of the two ceiling runs around it;
3. a counting pass against a server of its own (``BENCH_COUNT=1``, bench/counting.py; the timed servers run
   without it): each scenario once more, summing the SQL statements, transactions and Redis round trips every
   response reports, per request;
4. one table with both modes side by side on stdout, and the full figures as JSON in bench/results/.
Rate limits are set out of reach (see bench/stack.py); the limiter still counts every request.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import requests

from bench.client import PartnerClient, Target, discover_targets, make_pdf
from bench.stack import (
    DEFAULT_GUNICORN_EXTRA,
    RESULTS,
    ROOT,
    PeakRss,
    Stack,
    children,
    cpu_seconds,
    flush_redis,
    rss_kib,
    services_cpu,
)
from bench.wrk import WrkResult, median, run_wrk

# name → (what the ratio is taken of, target ratio to the bare view's requests per second)
TARGETS = {
    "events": ("rps", 0.75),
    "events304": ("rps", 0.85),
    "rows": ("rps", 0.70),
    "token": ("rps", 0.45),
    "quotes": ("rps", 0.45),
    "orders": ("rps", 0.06),
    "flow": ("orders_per_s", 0.07),
}
LIST_LATENCY_TARGET = 1.2
# The direct mode: the service as `gunicorn config.wsgi --workers 3` (sync workers, bound directly), a Celery
# worker as the Procfile's `worker` line runs it, a bare Django project (bench/bare_project) as the ceiling.
DIRECT_WORKERS = 3
DIRECT_CELERY_CONCURRENCY = 4  # the Procfile's default CELERY_CONCURRENCY
BARE_PROJECT_PATH = "/events"
# After each flow run of the direct mode the Celery backlog is read again this much later: it must have drained.
BACKLOG_WAIT_SECONDS = 15
# The broker's queues (config/celery.py QUEUES): kombu's Redis transport keeps each as a list named after it, and
# one more per priority step (``name\x06\x16N``); the messages a worker took and has not acknowledged yet (reserved
# or running: CELERY_TASK_ACKS_LATE) are in the ``unacked`` hash.
BROKER_QUEUES = (
    "celery",
    os.environ.get("WEBHOOK_QUEUE", "webhooks"),
    os.environ.get("WEBHOOK_SLOW_QUEUE", "webhooks_slow"),
)
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
MEMORY_TARGET_MIB = 5.0
# The HTTP metrics middleware (config/core/metrics.py) may cost the events list at most this share.
METRICS_COST_TARGET = 0.05
EVENTS_PATH = "/v1/events?limit=20"


def autovacuum_off(database_url: str) -> bool:
    """The server of ``database_url`` runs without autovacuum (a CI machine's setting, never production's)."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute("SHOW autovacuum").fetchone()[0] == "off"


def log(message: str) -> None:
    print(f"[bench {datetime.now():%H:%M:%S}] {message}", flush=True)


def machine_info(stack: Stack) -> dict:
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    import psycopg
    import redis

    with psycopg.connect(stack.database_url) as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
    redis_version = redis.Redis.from_url(stack.redis_url).info("server")["redis_version"]
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    import gunicorn

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "os": platform.freedesktop_os_release().get("PRETTY_NAME", platform.system()),
        "python": platform.python_version(),
        "postgresql": pg,
        "redis": redis_version,
        "gunicorn": gunicorn.__version__,
        "wrk": wrk.strip(),
        "commit": commit,
        "load_average_at_start": os.getloadavg(),
    }


class Bench:
    """One mode's run: ``production`` (nginx in front of gthread workers, the ceiling a bare view of the
    service's own project) or ``direct`` (sync workers bound directly, the ceiling a separate bare project)."""

    def __init__(self, args: argparse.Namespace, mode: str = "production", stamp: str | None = None) -> None:
        self.args = args
        self.mode = mode
        stamp = stamp or datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.run_dir = RESULTS / f"run-{stamp}" / mode
        self.stamp = stamp
        if mode == "direct":
            self.duration, self.rounds = args.direct_duration, args.direct_rounds
            self.wrk_threads = args.direct_wrk_threads
        else:
            self.duration, self.rounds, self.wrk_threads = args.duration, args.rounds, args.wrk_threads
        # As long as a timed run, so that the counted requests meet the caches in their steady state.
        self.count_duration = args.count_duration or self.duration
        self.backlog: list[dict] = []  # direct mode: the Celery backlog after each flow run
        self.celery_pid: int | None = (
            None  # direct mode: the Celery worker's main process (its pool: children)
        )
        self.notes: list[str] = []
        self.results: dict[str, list[WrkResult]] = {}
        self.available: dict[str, bool] = {}
        self.worker_pids: dict[str, list[int]] = {}  # server URL → its gunicorn worker pids
        self.counts: dict[str, dict] = {}  # scenario → statements and round trips per request
        # scenario → for each of its runs, the ceiling's requests per second it is measured against
        self.ceilings: dict[str, list[float]] = {}

    # --- set-up -------------------------------------------------------------------------------------
    def setup_stack(self, stack: Stack, *, events: int, partners: int, label: str) -> dict:
        log(f"{label}: fresh database {stack.database}, migrate")
        stack.prepare()
        if autovacuum_off(stack.database_url):
            note = (
                "this PostgreSQL runs with autovacuum off: nothing vacuums or analyzes the bench's tables during "
                "the run, so the writes (orders, the flow) meet dead rows and plans without statistics, which a "
                "production server's autovacuum clears"
            )
            self.notes.append(note)
            log(f"{label}: {note}")
        seeded = stack.seed(events, seed=1)
        if not seeded:
            self.notes.append("seed_catalog is not available in this build: catalog scenarios skipped.")
        log(f"{label}: seeded {events} events" if seeded else f"{label}: no seed_catalog command")
        creds = [stack.create_partner(f"Bench partner {i}") for i in range(partners)]
        return {"seeded": seeded, "creds": creds}

    def write_lines(self, name: str, lines: list[str]) -> Path:
        path = self.run_dir / name
        path.write_text("\n".join(lines) + "\n")
        return path

    def probe(self, name: str, response: requests.Response, expected: int) -> bool:
        ok = response.status_code == expected
        if not ok:
            try:
                code = response.json().get("error", {}).get("code")
            except ValueError:
                code = None
            self.notes.append(
                f"{name}: skipped, probe answered {response.status_code} {code or ''} (expected {expected})."
            )
            log(f"{name}: probe answered {response.status_code} {code}; scenario skipped")
        self.available[name] = ok
        return ok

    def count_events(self, stack: Stack) -> int | None:
        try:
            out = stack.shell("from catalog.models import Event; print(Event.objects.count())")
            return int(out.strip().splitlines()[-1])
        except Exception:
            return None

    def deepen_stock(self, stack: Stack, targets: list[Target]) -> None:
        """The bench's rows get deep stock so that thousands of quantity-1 orders never run them dry."""
        events = sorted({t.event_id for t in targets})
        stack.shell(
            "from catalog.models import Row; "
            f"print(Row.objects.filter(section__event__event_id__in={events!r})"
            ".update(available_quantity=10_000_000))"
        )

    # --- runs ---------------------------------------------------------------------------------------
    def wrk(self, scenario: str, url: str, **kwargs) -> WrkResult:
        pids = self.worker_pids.get(url, [])
        cpu_before = [cpu_seconds(pid) for pid in pids]
        others_before = {**services_cpu(), "celery": self.celery_cpu_by_pid()}
        result = run_wrk(
            scenario,
            url,
            duration=kwargs.pop("duration", self.duration),
            connections=kwargs.pop("connections", self.args.connections),
            threads=self.wrk_threads,
            **kwargs,
        )
        used = [cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
        if pids and result.requests and sum(used) > 0:
            result.cpu_ms_per_request = round(1000 * sum(used) / result.requests, 3)
            result.busiest_worker_share = round(max(used) / sum(used), 2)
        if result.requests:
            others_after = {**services_cpu(), "celery": self.celery_cpu_by_pid()}
            # A process that started during the run counts from nothing; one that ended is left out.
            result.others_ms_per_request = {
                group: round(
                    1000
                    * sum(cpu - others_before[group].get(pid, 0.0) for pid, cpu in now.items())
                    / result.requests,
                    3,
                )
                for group, now in others_after.items()
                if now
            }
        self.results.setdefault(scenario, []).append(result)
        extra = f", {result.orders_per_s:.1f} orders/s" if result.orders_created else ""
        bad = f", {result.failed} failed {result.codes or ''}" if result.failed else ""
        cpu = f"  cpu {result.cpu_ms_per_request:.2f} ms/req" if result.cpu_ms_per_request else ""
        if result.others_ms_per_request:
            cpu += " (" + ", ".join(f"{k} {v:.2f}" for k, v in result.others_ms_per_request.items()) + ")"
        log(
            f"  {scenario:<12} {result.rps:8.1f} req/s  p50 {result.latency_us['p50'] / 1000:6.2f} ms  "
            f"p99 {result.latency_us['p99'] / 1000:7.2f} ms{cpu}{extra}{bad}"
        )
        return result

    def run(self) -> dict:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return self.run_direct() if self.mode == "direct" else self.run_production()

    def run_direct(self) -> dict:
        """The service as ``gunicorn config.wsgi --workers 3`` (sync, no proxy), a Celery worker as the Procfile's
        ``worker`` line runs it, and a bare Django project under the same gunicorn flags as the ceiling."""
        args = self.args
        base_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ps_bench")
        redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")
        name = (urlsplit(base_url).path.lstrip("/") or "ps_bench") + "_direct"
        flush_redis(redis_url)
        shape = {
            "workers": DIRECT_WORKERS,
            "threads": 1,
            "worker_class": "sync",
            "gunicorn_extra": [],
            "through_nginx": False,
        }
        stack = Stack(
            database=name,
            base_database_url=base_url,
            redis_url=redis_url,
            run_dir=self.run_dir / "main",
            cache_prefix="benchdirect",
            **shape,
        )
        big = Stack(
            database=f"{name}_big",
            base_database_url=base_url,
            redis_url=redis_url,
            run_dir=self.run_dir / "big",
            cache_prefix="benchdirectbig",
            **shape,
        )
        report: dict = {
            "mode": "direct",
            "started_at": self.stamp,
            "settings": {
                "duration_s": self.duration,
                "rounds": self.rounds,
                "connections": args.connections,
                "wrk_threads": self.wrk_threads,
                "gunicorn": f"gunicorn config.wsgi --workers {DIRECT_WORKERS} --threads 1 (sync, no proxy)",
                "ceiling": f"gunicorn bench.bare_project.wsgi --workers {DIRECT_WORKERS} --threads 1: "
                f"a bare Django project, GET {BARE_PROJECT_PATH}",
                "celery": f"celery -A config worker --queues celery --loglevel=WARNING "
                f"--concurrency {DIRECT_CELERY_CONCURRENCY}",
                "rate_limits": "RATE_LIMIT_PER_MINUTE and TOKEN_RATE_LIMIT_PER_MINUTE = 1e9 (limiter on, never trips)",
            },
        }
        try:
            with stack:
                info = self.setup_stack(stack, events=args.small_events, partners=4, label="direct")
                report["machine"] = machine_info(stack)
                web = stack.start_web()
                self.worker_pids[web.url] = web.worker_pids()
                bare = stack.start_bare()
                self.worker_pids[bare.url] = bare.worker_pids()
                celery = stack.start_worker(
                    concurrency=DIRECT_CELERY_CONCURRENCY, queues="celery", as_procfile=True
                )
                self.celery_pid = celery.pid
                log(
                    f"direct: gunicorn on {web.url}, the bare project on {bare.url} ({DIRECT_WORKERS} sync workers "
                    f"each), celery --concurrency {DIRECT_CELERY_CONCURRENCY}"
                )
                self.measure_main(stack, web.url, info, bare_url=bare.url)
                report["events_in_small_catalog"] = self.count_events(stack)
                if args.scale_mode == "direct" and not args.skip_scale and info["seeded"]:
                    with big:
                        report["scale"] = self.measure_scale(stack, web.url, info, big)
        finally:
            stack.stop()
            big.stop()
        report["load_average_at_end"] = os.getloadavg()
        report["scenarios"] = self.summarise()
        report["backlog"] = self.backlog
        report["notes"] = self.notes
        return report

    def run_production(self) -> dict:
        args = self.args
        base_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ps_bench")
        redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")
        name = urlsplit(base_url).path.lstrip("/") or "ps_bench"
        flush_redis(redis_url)
        main = Stack(
            database=name,
            base_database_url=base_url,
            redis_url=redis_url,
            run_dir=self.run_dir / "main",
            cache_prefix="bench",
            workers=args.workers,
            threads=args.threads,
            worker_class=args.worker_class,
            gunicorn_extra=args.gunicorn_extra.split(),
        )
        big = Stack(
            database=f"{name}_big",
            base_database_url=base_url,
            redis_url=redis_url,
            run_dir=self.run_dir / "big",
            cache_prefix="benchbig",
            workers=args.workers,
            threads=args.threads,
            worker_class=args.worker_class,
            gunicorn_extra=args.gunicorn_extra.split(),
        )
        report: dict = {
            "mode": "production",
            "started_at": self.stamp,
            "settings": {
                "duration_s": self.duration,
                "rounds": self.rounds,
                "connections": args.connections,
                "wrk_threads": self.wrk_threads,
                "gunicorn": f"gunicorn config.wsgi --workers {args.workers} --worker-class {args.worker_class} "
                f"--threads {args.threads}"
                + (f" {args.gunicorn_extra}" if args.gunicorn_extra else "")
                + " behind nginx",
                "ceiling": "a bare view of the service's own project (bench/baseline.py, GET /bench/bare)",
                "celery": "one worker, --concurrency 1",
                "rate_limits": "RATE_LIMIT_PER_MINUTE and TOKEN_RATE_LIMIT_PER_MINUTE = 1e9 (limiter on, never trips)",
            },
        }
        try:
            with main:
                info = self.setup_stack(main, events=args.small_events, partners=4, label="main")
                report["machine"] = machine_info(main)
                web = main.start_web()
                self.worker_pids[web.url] = web.worker_pids()
                main.start_worker()
                log(
                    f"gunicorn on {web.url} ({args.workers} x {args.worker_class} x {args.threads}), celery up"
                )
                self.measure_main(main, web.url, info)
                report["events_in_small_catalog"] = self.count_events(main)
                if not args.skip_metrics_cost:
                    report["metrics_cost"] = self.measure_metrics_cost(main, web.url)
                if not args.skip_memory:
                    report["memory"] = self.measure_memory(main, info)
                if args.scale_mode == "production" and not args.skip_scale and info["seeded"]:
                    with big:
                        report["scale"] = self.measure_scale(main, web.url, info, big)
        finally:
            main.stop()
            big.stop()
        report["load_average_at_end"] = os.getloadavg()
        report["scenarios"] = self.summarise()
        report["notes"] = self.notes
        return report

    def measure_main(self, stack: Stack, url: str, info: dict, *, bare_url: str | None = None) -> None:
        creds = info["creds"]
        clients = [
            PartnerClient(url, client_id=c["client_id"], client_secret=c["client_secret"]) for c in creds
        ]
        tokens = [c.authenticate() for c in clients]
        tokens_file = self.write_lines("tokens.txt", tokens)
        creds_file = self.write_lines("creds.txt", [f"{c['client_id']}\t{c['client_secret']}" for c in creds])
        # The ceiling: the bare view of our own project, or (bare_url) the bare project on a server of its own.
        bare_path = BARE_PROJECT_PATH if bare_url else "/bench/bare"
        bare_file = self.write_lines("bare.txt", [bare_path])
        events_file = self.write_lines("events.txt", [EVENTS_PATH])

        self.probe("bare", requests.get((bare_url or url) + bare_path, timeout=10), 200)
        self.probe("token", requests.post(url + "/v1/auth/token", json={
            "client_id": creds[0]["client_id"], "client_secret": creds[0]["client_secret"],
            "grant_type": "client_credentials"}, timeout=10), 200)  # fmt: skip
        client = clients[0]
        targets: list[Target] = []
        etag = None
        if info["seeded"] and self.probe("events", client.request("GET", EVENTS_PATH), 200):
            etag = client.request("GET", EVENTS_PATH).headers.get("ETag")
            if etag is not None:
                conditional = client.request("GET", EVENTS_PATH, headers={"If-None-Match": etag})
                self.probe("events304", conditional, 304)
            else:
                self.available["events304"] = False
            targets = discover_targets(client, want=self.args.targets)
            log(
                f"{len(targets)} rows over {len({t.event_id for t in targets})} events for rows/quotes/orders"
            )
        rows_file = quotes_file = None
        if targets:
            self.deepen_stock(stack, targets)
            if self.probe("rows", client.request("GET", targets[0].rows_path), 200):
                rows_file = self.write_lines("rows.txt", [t.rows_path for t in targets])
            if self.probe("quotes", client.quote(targets[0]), 201):
                quotes_file = self.write_lines(
                    "quote_bodies.txt", [json.dumps(t.quote_body(), separators=(",", ":")) for t in targets]
                )
                quote_id = client.quote(targets[0]).json()["data"]["quote_id"]
                self.probe("orders", client.order(quote_id), 201)
                self.available["flow"] = self.available["orders"]
        else:
            for name in ("rows", "quotes", "orders", "flow"):
                self.available.setdefault(name, False)

        # A scenario with "url" runs against another server than the service's (the bare project).
        plan: list[tuple[str, dict]] = [
            ("bare", {"mode": "get", "paths": bare_file, **({"url": bare_url} if bare_url else {})}),
            ("token", {"mode": "token", "creds": creds_file}),
            ("events", {"mode": "get", "paths": events_file, "tokens": tokens_file}),
            ("events304", {"mode": "get", "paths": events_file, "tokens": tokens_file, "inm": etag}),
        ]
        if rows_file:
            plan.append(("rows", {"mode": "get", "paths": rows_file, "tokens": tokens_file}))
        if quotes_file:
            plan.append(("quotes", {"mode": "quote", "bodies": quotes_file, "tokens": tokens_file}))
            if self.available.get("orders"):
                plan.append(("orders", {"mode": "order", "tokens": tokens_file}))
                plan.append(("flow", {"mode": "flow", "bodies": quotes_file, "tokens": tokens_file}))
        plan = [(name, kw) for name, kw in plan if self.available.get(name)]

        if self.args.profile:
            self.profile(url, plan, stack)
            return
        log(f"{self.mode}: warm-up ({', '.join(n for n, _ in plan)})")
        quote_ids: list[str] = []
        for name, kw in plan:
            kw = dict(kw)
            target = kw.pop("url", url)
            if name == "orders":
                kw["quotes"] = self.write_lines("quote_ids.txt", quote_ids or ["none"])
            r = run_wrk(
                name, target, duration=2, connections=self.args.connections, threads=self.wrk_threads, **kw
            )
            if name == "quotes":
                quote_ids = r.quote_ids
        direct = self.mode == "direct"
        # The warm-up's orders leave the worker busy for a while: the first ceiling run must not share the CPU.
        self.wait_for_idle_worker(stack)
        for round_no in range(1, self.rounds + 1):
            if round_no > 1:
                # The last round's orders leave the worker confirming them: the next ceiling run must not share
                # the CPU with it, or every ratio of the round comes out too high.
                self.wait_for_idle_worker(stack)
            log(f"{self.mode}: round {round_no}/{self.rounds}")
            ceiling = [entry for entry in plan if entry[0] == "bare"][:1]
            before = self.run_ceiling(ceiling, url)
            for name, kw in plan:
                if name == "bare":
                    continue
                kw = dict(kw)
                target = kw.pop("url", url)
                if name == "orders":
                    # Orders consume the quotes the quote run of this round has just made.
                    kw["quotes"] = self.write_lines("quote_ids.txt", quote_ids or ["none"])
                if name == "flow" and direct:
                    # The backlog after the flow run is the flow's own: what earlier runs queued is done first.
                    self.wait_for_idle_worker(stack)
                started, celery_cpu = time.time(), self.celery_cpu()
                result = self.wrk(name, target, **kw)
                if name == "quotes":
                    quote_ids = result.quote_ids
                if name == "orders" and result.orders_created >= len(quote_ids) > 0:
                    self.notes.append(
                        f"round {round_no}: the order run used up all {len(quote_ids)} quotes of the quote run."
                    )
                if name == "flow" and direct:
                    self.backlog.append(
                        self.measure_backlog(stack, since=started, run=result, celery_cpu=celery_cpu)
                    )
                if before is None:
                    continue
                if self.args.ceiling_once:
                    self.ceilings.setdefault(name, []).append(before)
                    continue
                if name in ("orders", "flow"):
                    # Their confirmations keep the Celery worker busy: the ceiling must not share the CPU with it.
                    self.wait_for_idle_worker(stack)
                after = self.run_ceiling(ceiling, url)
                self.ceilings.setdefault(name, []).append((before + after) / 2)
                before = after
        # The counting pass runs against a server of its own (one worker): the timed ones carry no counting
        # middleware. Same database and Redis; the other project's ceiling has nothing of ours to count.
        counting = stack.start_web("web-count", workers=1, env={"BENCH_COUNT": "1"})
        self.count(counting.url, [(n, kw) for n, kw in plan if "url" not in kw])

    def run_ceiling(self, ceiling: list[tuple[str, dict]], url: str) -> float | None:
        """One run of the ceiling (``ceiling``: its plan entry, or none); its requests per second."""
        if not ceiling:
            return None
        kw = dict(ceiling[0][1])
        return self.wrk("bare", kw.pop("url", url), **kw).rps

    def broker_backlog(self, stack: Stack) -> dict[str, int]:
        """Messages waiting in the broker's queues, and those a worker took and has not acknowledged yet."""
        import redis

        client = redis.Redis.from_url(stack.redis_url)
        with client.pipeline(transaction=False) as pipe:
            for queue in BROKER_QUEUES:
                for suffix in PRIORITY_SUFFIXES:
                    pipe.llen(f"{queue}{suffix}")
            pipe.hlen("unacked")
            *lengths, unacked = pipe.execute()
        waiting = {
            queue: sum(lengths[i * len(PRIORITY_SUFFIXES) : (i + 1) * len(PRIORITY_SUFFIXES)])
            for i, queue in enumerate(BROKER_QUEUES)
        }
        return {**waiting, "unacked": unacked, "total": sum(waiting.values()) + unacked}

    def wait_for_idle_worker(self, stack: Stack, timeout: float = 180) -> None:
        started = time.monotonic()
        while self.broker_backlog(stack)["total"] and time.monotonic() - started < timeout:
            time.sleep(0.5)
        waited = time.monotonic() - started
        if waited >= 1:
            log(f"  (waited {waited:.0f} s for the Celery worker to finish the earlier runs' tasks)")

    def celery_cpu(self) -> float:
        """CPU seconds of the Celery worker so far, its pool processes included."""
        return sum(self.celery_cpu_by_pid().values())

    def celery_cpu_by_pid(self) -> dict[int, float]:
        """CPU seconds of the Celery worker and each of its pool processes so far."""
        if self.celery_pid is None:
            return {}
        return {pid: cpu_seconds(pid) for pid in (self.celery_pid, *children(self.celery_pid))}

    def measure_backlog(self, stack: Stack, *, since: float, run: WrkResult, celery_cpu: float) -> dict:
        """The broker's backlog as the flow run ends and 15 s later, and the confirmation latency of the orders
        the run created (their creation history row to the row of their move out of ``accepted``) by then."""
        at_end = self.broker_backlog(stack)
        drained_after = 0.0 if at_end["total"] == 0 else None
        started = time.monotonic()
        later = at_end
        while time.monotonic() - started < BACKLOG_WAIT_SECONDS:
            time.sleep(0.25)
            later = self.broker_backlog(stack)
            if later["total"] == 0 and drained_after is None:
                drained_after = round(time.monotonic() - started, 1)
        import psycopg

        with psycopg.connect(stack.database_url) as conn:
            rows = conn.execute(
                """
                SELECT EXTRACT(EPOCH FROM (moved.at - created.at))
                FROM orders_orderstatushistory created
                LEFT JOIN orders_orderstatushistory moved
                  ON moved.order_id = created.order_id AND moved.from_status = 'accepted'
                WHERE created.from_status = '' AND created.at >= to_timestamp(%s)
                """,
                [since],
            ).fetchall()
        # Orders still unconfirmed count as slower than any confirmed one: a p95 they reach is "not measured".
        latencies = sorted(float(r[0]) if r[0] is not None else float("inf") for r in rows)
        unconfirmed = sum(1 for r in rows if r[0] is None)

        def percentile(q: float) -> float | None:
            if not latencies:
                return None
            value = latencies[max(0, math.ceil(q * len(latencies)) - 1)]
            return round(value, 3) if math.isfinite(value) else None

        result = {
            "orders": run.orders_created,
            "orders_per_s": round(run.orders_per_s, 2),
            "backlog_at_end": at_end["total"],
            "backlog_at_end_detail": at_end,
            "backlog_later": later["total"],
            "backlog_later_detail": later,
            "later_s": BACKLOG_WAIT_SECONDS,
            "drained_after_s": drained_after,
            "drained": drained_after is not None,
            "orders_in_database": len(rows),
            "unconfirmed": unconfirmed,
            "confirmation_p50_s": percentile(0.50),
            "confirmation_p95_s": percentile(0.95),
            # From the flow run's start until the wait ends: the work the flow's orders gave the worker.
            "celery_cpu_ms_per_order": round(1000 * (self.celery_cpu() - celery_cpu) / len(rows), 2)
            if rows
            else None,
        }
        log(
            f"  Celery backlog {at_end['total']} messages at the end of the flow run ({at_end['unacked']} taken), "
            f"{later['total']} {BACKLOG_WAIT_SECONDS} s later (drained after {drained_after} s); confirmation "
            f"p50 {result['confirmation_p50_s']} s, p95 {result['confirmation_p95_s']} s, {unconfirmed} of "
            f"{len(rows)} orders not confirmed"
        )
        return result

    def count(self, url: str, plan: list[tuple[str, dict]]) -> None:
        """Each scenario once more, briefly, summing what every response reports it cost."""
        log("counting pass (statements and round trips per request)")
        quote_ids: list[str] = []
        for name, kw in plan:
            kw = dict(kw)
            if name == "orders":
                kw["quotes"] = self.write_lines("quote_ids.txt", quote_ids or ["none"])
            r = run_wrk(name, url, duration=self.count_duration, connections=self.args.connections,
                        threads=self.wrk_threads, count=1, **kw)  # fmt: skip
            if name == "quotes":
                quote_ids = r.quote_ids
            per_request = r.per_request()
            if per_request:
                self.counts[name] = per_request
                log(
                    f"  {name:<12} {per_request['queries']:5.2f} SQL statements, "
                    f"{per_request['transactions']:4.2f} transactions, {per_request['db_round_trips']:5.2f} "
                    f"database and {per_request['redis_round_trips']:5.2f} Redis round trips per request"
                )

    def profile(self, url: str, plan: list[tuple[str, dict]], stack: Stack) -> None:
        """Run one scenario under load while py-spy samples every web worker; print the hot spots."""
        from bench.profiling import record, summarise

        wanted = dict(plan)
        name = self.args.profile
        if name not in wanted:
            raise SystemExit(f"scenario {name!r} is not available: {sorted(wanted)}")
        kw = dict(wanted[name])
        url = kw.pop("url", url)
        if name == "orders":
            quotes = run_wrk("quotes", url, duration=self.duration + 2, connections=self.args.connections,
                             threads=self.wrk_threads, **wanted["quotes"])  # fmt: skip
            kw["quotes"] = self.write_lines("quote_ids.txt", quotes.quote_ids)
        else:
            run_wrk(name, url, duration=2, connections=self.args.connections, threads=self.wrk_threads, **kw)
        out = self.run_dir / f"profile-{name}{'-celery' if self.args.profile_worker else ''}.txt"
        if self.args.profile_worker:
            # The Celery worker's pool processes (the confirmations, the deliveries), not the web workers.
            if self.celery_pid is None:
                raise SystemExit("--profile-worker needs the direct mode, whose stack runs a Celery worker")
            pids = [self.celery_pid, *children(self.celery_pid)]
        else:
            pids = stack.servers[0].worker_pids()
        with record(pids, out, duration=self.duration, gil=self.args.gil):
            self.wrk(name, url, **kw)
        print(summarise(out))
        log(f"raw stacks: {out.relative_to(ROOT)}")

    def measure_scale(self, main: Stack, small_url: str, info: dict, big: Stack) -> dict:
        """The events list on the small catalog and on the big one (``--big-events``, 20,000), interleaved.

        Three variants: the first page as deployed (the catalog cache answers most requests), the
        first page with the catalog caches off (every request runs the database query), and a page
        from the middle of the catalog (a cursor half-way through), caches off.
        """
        args = self.args
        big_info = self.setup_stack(
            big, events=args.big_events, partners=1, label=f"{args.big_events} events"
        )
        events_big = self.count_events(big)
        events_small = self.count_events(main)
        no_cache = {"CATALOG_CACHE_SECONDS": "0", "CATALOG_LOCAL_CACHE_SECONDS": "0"}
        servers = {
            ("small", "cached"): small_url,
            ("big", "cached"): big.start_web("web-big").url,
            ("small", "uncached"): main.start_web("web-nocache", env=no_cache).url,
            ("big", "uncached"): big.start_web("web-big-nocache", env=no_cache).url,
        }
        for stack, name in ((big, "web-big"), (main, "web-nocache"), (big, "web-big-nocache")):
            server = next(s for s in stack.servers if s.name == name)
            self.worker_pids[server.url] = server.worker_pids()
        c = big_info["creds"][0]
        big_client = PartnerClient(
            servers[("big", "uncached")], client_id=c["client_id"], client_secret=c["client_secret"]
        )
        small_client = PartnerClient(servers[("small", "uncached")], client_id=info["creds"][0]["client_id"],
                                     client_secret=info["creds"][0]["client_secret"])  # fmt: skip
        tokens = {
            "small": self.write_lines("tokens_small.txt", [small_client.authenticate()]),
            "big": self.write_lines("tokens_big.txt", [big_client.authenticate()]),
        }
        first = self.write_lines("events.txt", [EVENTS_PATH])
        middle = {
            size: self.write_lines(
                f"events_middle_{size}.txt", [f"{EVENTS_PATH}&cursor={_middle_cursor(client)}"]
            )
            for size, client in (("small", small_client), ("big", big_client))
        }
        variants = [
            ("first page, cache as deployed", "cached", {"small": first, "big": first}),
            ("first page, no cache", "uncached", {"small": first, "big": first}),
            ("middle page, no cache", "uncached", middle),
        ]
        log(f"list latency: {events_small} events vs {events_big} events")
        for _, cache, paths in variants:
            for size in ("small", "big"):
                run_wrk("warm", servers[(size, cache)], duration=2, connections=args.connections,
                        threads=self.wrk_threads, mode="get",
                        paths=paths[size], tokens=tokens[size])  # fmt: skip
        for round_no in range(1, self.rounds + 1):
            log(f"scale round {round_no}/{self.rounds}")
            for label, cache, paths in variants:
                for size in ("small", "big"):
                    self.wrk(f"list {size}: {label}", servers[(size, cache)], mode="get", paths=paths[size],
                             tokens=tokens[size])  # fmt: skip
        out = {
            "events_small": events_small,
            "events_big": events_big,
            "target": LIST_LATENCY_TARGET,
            "variants": [],
        }
        for label, _, _ in variants:
            small_p50 = median([r.latency_us["p50"] for r in self.results[f"list small: {label}"]])
            big_p50 = median([r.latency_us["p50"] for r in self.results[f"list big: {label}"]])
            ratio = round(big_p50 / small_p50, 3) if small_p50 else None
            out["variants"].append(
                {
                    "variant": label,
                    "p50_ms_small": round(small_p50 / 1000, 2),
                    "p50_ms_big": round(big_p50 / 1000, 2),
                    "ratio": ratio,
                    "met": ratio is not None and ratio <= LIST_LATENCY_TARGET,
                }
            )
        out["met"] = all(v["met"] for v in out["variants"])
        return out

    def measure_metrics_cost(self, stack: Stack, url: str) -> dict:
        """The events list with the HTTP metrics middleware (the main web) and without it (a second web
        with ``METRICS_HTTP=False``, same shape), interleaved; cost = 1 - req/s with / req/s without."""
        events, tokens = self.run_dir / "events.txt", self.run_dir / "tokens.txt"
        if not self.available.get("events") or not events.exists() or not tokens.exists():
            return {"skipped": "events endpoint not available"}
        off = stack.start_web("web-no-metrics", env={"METRICS_HTTP": "False"})
        self.worker_pids[off.url] = off.worker_pids()
        kw = {"mode": "get", "paths": events, "tokens": tokens}
        run_wrk("events", off.url, duration=2, connections=self.args.connections, **kw)  # warm-up
        log("metrics middleware cost on the events list (interleaved: on, off)")
        on_runs, off_runs = [], []
        for _ in range(self.rounds):
            on_runs.append(self.wrk("events, metrics on", url, **kw))
            off_runs.append(self.wrk("events, metrics off", off.url, **kw))
        rps_on, rps_off = median([r.rps for r in on_runs]), median([r.rps for r in off_runs])
        cpu_on = median([r.cpu_ms_per_request for r in on_runs if r.cpu_ms_per_request] or [0])
        cpu_off = median([r.cpu_ms_per_request for r in off_runs if r.cpu_ms_per_request] or [0])
        cost = round(1 - rps_on / rps_off, 3) if rps_off else None
        return {
            "rps_on": round(rps_on, 1),
            "rps_off": round(rps_off, 1),
            "ratio": round(rps_on / rps_off, 3) if rps_off else None,
            "cost": cost,
            "cpu_ms_on": cpu_on,
            "cpu_ms_off": cpu_off,
            "target": METRICS_COST_TARGET,
            "met": cost is not None and cost <= METRICS_COST_TARGET,
        }

    def measure_memory(self, stack: Stack, info: dict) -> dict:
        """RSS of one web worker (same worker class) before, during and after a 10 MB PDF order."""
        if not self.available.get("orders"):
            return {"skipped": "orders endpoint not available"}
        web = stack.start_web("web-memory", workers=1)
        pid = web.worker_pids()[0]
        c = info["creds"][1]
        client = PartnerClient(web.url, client_id=c["client_id"], client_secret=c["client_secret"])
        targets = discover_targets(client, want=4)
        small = make_pdf(64 * 1024)
        for i in range(5):  # warm the code paths (parsers, storage, templates) with small PDFs
            quote_id = client.quote(targets[i % len(targets)]).json()["data"]["quote_id"]
            response = client.order(quote_id, pdf=small)
            if response.status_code != 201:
                return {"skipped": f"warm-up order answered {response.status_code}: {response.text[:200]}"}
        big = make_pdf(10 * 1024 * 1024)
        runs = []
        for i in range(3):
            quote_id = client.quote(targets[i % len(targets)]).json()["data"]["quote_id"]
            time.sleep(0.5)
            before_hwm = rss_kib(pid)[1]
            with PeakRss(pid) as rss:
                response = client.order(quote_id, pdf=big)
            after_rss, after_hwm = rss_kib(pid)
            before_rss, peak = rss.before, rss.peak
            runs.append(
                {
                    "status": response.status_code,
                    "rss_before_mib": round(before_rss / 1024, 2),
                    "rss_peak_mib": round(peak / 1024, 2),
                    "rss_after_mib": round(after_rss / 1024, 2),
                    "growth_mib": round((max(peak, after_rss) - before_rss) / 1024, 2),
                    "hwm_growth_mib": round((after_hwm - before_hwm) / 1024, 2),
                }
            )
        growth = max(max(r["growth_mib"], r["hwm_growth_mib"]) for r in runs)
        ok = all(r["status"] == 201 for r in runs)
        log(f"memory: 10 MB PDF, worker RSS growth {growth} MiB (statuses {[r['status'] for r in runs]})")
        return {
            "file_bytes": len(big),
            "runs": runs,
            "growth_mib": growth,
            "target_mib": MEMORY_TARGET_MIB,
            "met": ok and growth < MEMORY_TARGET_MIB,
        }

    # --- summary ------------------------------------------------------------------------------------
    def summarise(self) -> dict:
        bare_rounds = self.results.get("bare", [])
        out: dict = {}
        for name, runs in self.results.items():
            entry: dict = {
                "rps": round(median([r.rps for r in runs]), 1),
                "p50_ms": round(median([r.latency_us["p50"] for r in runs]) / 1000, 2),
                "p99_ms": round(median([r.latency_us["p99"] for r in runs]) / 1000, 2),
                "failed_requests": sum(r.failed for r in runs),
                "codes": _merge([r.codes for r in runs]),
                "rounds": [r.as_dict() for r in runs],
            }
            cpu = [r.cpu_ms_per_request for r in runs if r.cpu_ms_per_request]
            if cpu:
                entry["web_cpu_ms_per_request"] = round(median(cpu), 3)
                entry["busiest_worker_share"] = max(r.busiest_worker_share or 0 for r in runs)
            others = {group for r in runs for group in r.others_ms_per_request}
            if others:
                entry["others_cpu_ms_per_request"] = {
                    group: round(median([r.others_ms_per_request.get(group, 0.0) for r in runs]), 3)
                    for group in sorted(others)
                }
            if name in self.counts:
                entry["per_request"] = self.counts[name]
            if any(r.orders_created for r in runs):
                entry["orders_per_s"] = round(median([r.orders_per_s for r in runs]), 2)
            # Each run against the ceiling measured around it (the mean of the runs before and after it).
            ceilings = self.ceilings.get(name) or (
                [b.rps for b in bare_rounds] if len(bare_rounds) == len(runs) else []
            )
            if name in TARGETS and len(ceilings) == len(runs):
                measure, target = TARGETS[name]
                ratios = [getattr(r, measure) / c for r, c in zip(runs, ceilings, strict=True) if c]
                entry["ratio_to_bare"] = round(median(ratios), 3)
                entry["ceilings_rps"] = [round(c, 1) for c in ceilings]
                entry["ratio_of"] = measure
                entry["target"] = target
                entry["met"] = entry["ratio_to_bare"] >= target and entry["failed_requests"] == 0
            out[name] = entry
        for name in TARGETS:
            if name not in out:
                out[name] = {"skipped": True, "met": False}
        return out


def _middle_cursor(client: PartnerClient) -> str:
    """The cursor of the page half-way through the upcoming events (walked with pages of 100)."""
    pages = []
    params: dict = {"limit": 100}
    while True:
        page = client.events(**params)
        if not page["has_more"]:
            break
        pages.append(page["next_cursor"])
        params["cursor"] = page["next_cursor"]
    return pages[len(pages) // 2] if pages else ""


def _merge(dicts: list[dict[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            merged[k] = merged.get(k, 0) + v
    return merged


LABELS = {
    "bare": "bare Django view (ceiling)",
    "token": "POST /v1/auth/token",
    "events": "GET /v1/events?limit=20",
    "events304": "the same with If-None-Match (304)",
    "rows": "GET …/sections/{name}/rows",
    "quotes": "POST /v1/quotes",
    "orders": "POST /v1/orders (pre-made quotes)",
    "flow": "quote → order flow",
}


FOOTNOTES = (
    "cpu ms: CPU time of the web workers per request (independent of other load on the machine)",
    "SQL / db rt / Redis: per request, counted in the counting pass on a server of its own (bench/counting.py): SQL "
    "statements, database round trips (statements + BEGIN and COMMIT), Redis round trips (a pipeline is one)",
)


def _rate(name: str, entry: dict) -> str:
    return f"{entry.get('orders_per_s', 0):.1f}o/s" if name == "flow" else f"{entry['rps']:.0f}"


def _counted(entry: dict) -> str:
    per = entry.get("per_request")
    if not per:
        return ""
    return f"{per['queries']:.2f} / {per['db_round_trips']:.2f} / {per['redis_round_trips']:.2f}"


def render_table(report: dict) -> str:
    """One mode's table, with latencies (kept in the JSON of the run)."""
    lines = []
    header = (
        f"{'scenario':<36} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu ms':>7} {'SQL':>5} {'db rt':>5} "
        f"{'redis':>5} {'ratio':>7} {'target':>8}  result"
    )
    lines.append(header)
    lines.append("-" * len(header))
    for name, label in LABELS.items():
        entry = report["scenarios"].get(name)
        if entry is None:
            continue
        if entry.get("skipped"):
            lines.append(f"{label:<36} {'not measured (endpoint missing)':>48}")
            continue
        ratio = entry.get("ratio_to_bare")
        target = entry.get("target")
        result = "" if target is None else ("met" if entry["met"] else "MISSED")
        if entry["failed_requests"]:
            result += f" ({entry['failed_requests']} failed: {entry['codes']})"
        cpu = entry.get("web_cpu_ms_per_request")
        counted = entry.get("per_request") or {}
        trips = " ".join(
            f"{counted[k]:>5.2f}" if k in counted else f"{'':>5}"
            for k in ("queries", "db_round_trips", "redis_round_trips")
        )
        lines.append(
            f"{label:<36} {_rate(name, entry):>9} {entry['p50_ms']:>8.2f} {entry['p99_ms']:>8.2f} "
            f"{(f'{cpu:.2f}' if cpu else ''):>7} {trips} "
            f"{(f'{ratio:.3f}' if ratio is not None else ''):>7} {(f'≥ {target}' if target else ''):>8}  {result}"
        )
    lines += render_extras(report)
    lines += FOOTNOTES
    return "\n".join(lines)


def render_extras(report: dict) -> list[str]:
    """What a mode measured besides the scenarios: the list latency at scale, the metrics middleware's cost,
    the memory of a 10 MB PDF, the Celery backlog after the flow runs, the machine's load."""
    mode = report.get("mode", "production")
    lines = []
    scale = report.get("scale")
    if scale:
        lines.append(
            f"{mode}: events list p50, {scale['events_big']} vs {scale['events_small']} events "
            f"(target ≤ {scale['target']}×):"
        )
        for v in scale["variants"]:
            lines.append(
                f"  {v['variant']:<34} {v['p50_ms_big']:>7.2f} / {v['p50_ms_small']:<7.2f} ms = {v['ratio']}×  "
                f"{'met' if v['met'] else 'MISSED'}"
            )
    metrics_cost = report.get("metrics_cost")
    if metrics_cost and "cost" in metrics_cost:
        lines.append(
            f"{mode}: events list with / without the metrics middleware: {metrics_cost['rps_on']} / "
            f"{metrics_cost['rps_off']} req/s = {metrics_cost['ratio']} (cost {metrics_cost['cost']:.1%}, "
            f"target ≤ {metrics_cost['target']:.0%}; cpu {metrics_cost['cpu_ms_on']} / "
            f"{metrics_cost['cpu_ms_off']} ms/req) {'met' if metrics_cost['met'] else 'MISSED'}"
        )
    elif metrics_cost:
        lines.append(f"{mode}: metrics cost: {metrics_cost.get('skipped')}")
    memory = report.get("memory")
    if memory and "growth_mib" in memory:
        lines.append(
            f"{mode}: web worker RSS growth while receiving a 10 MB PDF: {memory['growth_mib']} MiB "
            f"(target < {memory['target_mib']} MiB) {'met' if memory['met'] else 'MISSED'}"
        )
    elif memory:
        lines.append(f"{mode}: memory: {memory.get('skipped')}")
    machine = [
        (LABELS.get(name, name), entry)
        for name, entry in report["scenarios"].items()
        if entry.get("others_cpu_ms_per_request") and name != "bare"
    ]
    if machine:
        lines.append(
            f"{mode}: the machine's CPU per request (ms, median of the rounds): the web workers / the Celery worker"
            " / PostgreSQL / Redis"
        )
        for label, entry in machine:
            others = entry["others_cpu_ms_per_request"]
            lines.append(
                f"  {label:<36} {entry.get('web_cpu_ms_per_request') or 0:>6.2f} / {others.get('celery', 0):>5.2f} / "
                f"{others.get('postgres', 0):>5.2f} / {others.get('redis', 0):>5.2f}"
            )
    for i, b in enumerate(report.get("backlog") or [], 1):
        detail = b["backlog_at_end_detail"]
        waiting = ", ".join(f"{q} {n}" for q, n in detail.items() if q not in ("total", "unacked") and n)
        confirmation = (
            f"confirmation p50 {b['confirmation_p50_s']} s, p95 "
            + (
                f"{b['confirmation_p95_s']} s"
                if b["confirmation_p95_s"] is not None
                else f"> {b['later_s']} s"
            )
            + f" ({b['orders_in_database'] - b['unconfirmed']} of {b['orders_in_database']} confirmed); "
            f"Celery CPU {b['celery_cpu_ms_per_order']} ms per order"
        )
        lines.append(
            f"{mode}: flow run {i} ({b['orders']} orders, {b['orders_per_s']} orders/s): Celery backlog at its "
            f"end {b['backlog_at_end']} (waiting: {waiting or 'none'}; taken by the worker: {detail['unacked']}), "
            f"{b['later_s']} s later {b['backlog_later']}: "
            + (
                f"drained after {b['drained_after_s']} s, met"
                if b["drained"]
                else f"not drained within {b['later_s']} s, MISSED"
            )
            + f"; {confirmation}"
        )
    if "machine" in report and "load_average_at_end" in report:
        lines.append(
            f"{mode}: load average (1 min) at start {report['machine']['load_average_at_start'][0]:.1f}, "
            f"at end {report['load_average_at_end'][0]:.1f} on {report['machine']['cores']} cores"
        )
    return lines


def render_side_by_side(reports: dict[str, dict]) -> str:
    """The scenarios of every mode run, side by side: requests per second, the ratio to the mode's ceiling in
    the same rounds, the web CPU per request and the counted statements and round trips. The targets are
    judged on the direct mode when it ran (on the production mode otherwise)."""
    modes = list(reports)
    judged = "direct" if "direct" in reports else modes[0]
    cell = f"{'req/s':>9} {'ratio':>6} {'cpu ms':>6} {'SQL / db rt / Redis':>19}"
    width = len(cell)
    title = f"{'':<36}  " + "   ".join(f"{m + ' mode':^{width}}" for m in modes)
    header = f"{'scenario':<36}  " + "   ".join(cell for _ in modes) + f"  {'target':>7}  {judged}"
    lines = [title, header, "-" * len(header)]
    failures = []
    for name, label in LABELS.items():
        cells = []
        for mode in modes:
            entry = reports[mode]["scenarios"].get(name)
            if not entry or entry.get("skipped"):
                cells.append(f"{'not measured':>{width}}")
                continue
            ratio, cpu = entry.get("ratio_to_bare"), entry.get("web_cpu_ms_per_request")
            cells.append(
                f"{_rate(name, entry):>9} {(f'{ratio:.3f}' if ratio is not None else ''):>6} "
                f"{(f'{cpu:.2f}' if cpu else ''):>6} {_counted(entry):>19}"
            )
            if entry.get("failed_requests"):
                failures.append(
                    f"{mode}: {label}: {entry['failed_requests']} failed requests {entry['codes']}"
                )
        target = TARGETS.get(name, (None, None))[1]
        judged_entry = reports[judged]["scenarios"].get(name) or {}
        result = ""
        if target is not None and not judged_entry.get("skipped"):
            result = "met" if judged_entry.get("met") else "MISSED"
        lines.append(
            f"{label:<36}  " + "   ".join(cells) + f"  {(f'≥ {target}' if target else ''):>7}  {result}"
        )
    lines.append(
        "ratio: req/s (flow: orders/s) over the ceiling's req/s around it (the mean of its runs just before and "
        "after; with --ceiling-once, the round's one run), median of the rounds; the ceiling's row: the median of "
        "its runs; ceilings: " + "; ".join(f"{m}: {reports[m]['settings'].get('ceiling', '')}" for m in modes)
    )
    for mode in modes:
        lines.append(
            f"{mode}: {reports[mode]['settings']['gunicorn']}; {reports[mode]['settings']['celery']}"
        )
    lines += failures
    for mode in modes:
        lines += render_extras(reports[mode])
    lines += FOOTNOTES
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--mode",
        choices=("both", "direct", "production"),
        default="both",
        help="direct: sync workers bound directly, a separate bare project as the ceiling; production: gthread "
        "workers behind nginx, a bare view of the project as the ceiling; both (default): direct, then production",
    )
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (production mode)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (production mode)")
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk threads (production mode)")
    parser.add_argument("--direct-duration", type=int, default=8, help="seconds per wrk run (direct mode)")
    parser.add_argument("--direct-rounds", type=int, default=2, help="interleaved rounds (direct mode)")
    parser.add_argument("--direct-wrk-threads", type=int, default=2, help="wrk threads (direct mode)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (both modes)")
    parser.add_argument(
        "--ceiling-once",
        action="store_true",
        help="run the ceiling once a round, before the first scenario, as entries before 2026-11-29's did "
        "(default: before the first and after each, every ratio against the two runs around it)",
    )
    # The production mode's gunicorn (the direct mode's is fixed: 3 sync workers, no options).
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", 4)))
    parser.add_argument("--threads", type=int, default=int(os.environ.get("THREADS", 4)))
    parser.add_argument("--worker-class", default=os.environ.get("WORKER_CLASS", "gthread"))
    parser.add_argument(
        "--gunicorn-extra", default=os.environ.get("GUNICORN_EXTRA", " ".join(DEFAULT_GUNICORN_EXTRA))
    )
    parser.add_argument("--small-events", type=int, default=200)
    parser.add_argument(
        "--big-events", type=int, default=20_000, help="the big catalog of the list latency at scale"
    )
    parser.add_argument("--targets", type=int, default=200, help="rows used by rows/quotes/orders")
    parser.add_argument(
        "--count-duration", type=int, help="seconds per counting run (default: the mode's timed run)"
    )
    parser.add_argument(
        "--skip-scale", action="store_true", help="skip the list latency at scale (direct mode, if it runs)"
    )
    parser.add_argument(
        "--skip-memory", action="store_true", help="skip the 10 MB PDF's memory (production mode)"
    )
    parser.add_argument(
        "--skip-metrics-cost",
        action="store_true",
        help="skip the metrics middleware's on/off comparison (production mode)",
    )
    parser.add_argument("--profile", metavar="SCENARIO", help="profile one scenario with py-spy instead")
    parser.add_argument("--gil", action="store_true", help="with --profile: sample only GIL holders (CPU)")
    parser.add_argument(
        "--profile-worker",
        action="store_true",
        help="with --profile: sample the Celery worker's processes instead of the web workers (direct mode)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 round of 3 s in each mode, no list latency at scale"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.rounds, args.skip_scale = 3, 1, True
        args.direct_duration, args.direct_rounds = 3, 1
    if args.profile:
        args.skip_scale = args.skip_memory = args.skip_metrics_cost = True
    modes = ("direct", "production") if args.mode == "both" else (args.mode,)
    # The list latency at scale is measured once: in the direct mode when it runs.
    args.scale_mode = modes[0]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    reports = {mode: Bench(args, mode, stamp).run() for mode in modes}
    for report in reports.values():
        report["table"] = render_table(report)
    table = render_side_by_side(reports)
    print()
    print(table)
    for mode, report in reports.items():
        for note in report["notes"]:
            print(f"note ({mode}): {note}")
    combined = {"started_at": stamp, "modes": reports, "table": table}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"run-{stamp}" / "bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(combined, indent=2, default=str))
    (RESULTS / "latest.json").write_text(json.dumps(combined, indent=2, default=str))
    print(f"\nfull figures: {out.relative_to(ROOT)} (and bench/results/latest.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
