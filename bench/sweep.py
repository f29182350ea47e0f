"""How the gunicorn settings of the production shape were chosen: the same scenarios against several
worker settings, interleaved round by round on one database.

    .venv/bin/python -m bench.sweep [--duration 5] [--rounds 2]

Prints requests per second per setting and scenario (median over rounds), and the ratio to the bare view
measured under the same setting.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from urllib.parse import urlsplit

from bench.client import PartnerClient, discover_targets
from bench.stack import RESULTS, Stack, flush_redis
from bench.wrk import median, run_wrk

# (label, worker class, workers, threads, extra gunicorn arguments)
SETTINGS = [
    ("sync x4", "sync", 4, 1, []),
    ("sync x6", "sync", 6, 1, []),
    ("gthread 4x4 keep-alive", "gthread", 4, 4, []),
    ("gthread 4x4 no keep-alive", "gthread", 4, 4, ["--keep-alive", "0"]),
    ("gthread 2x8 no keep-alive", "gthread", 2, 8, ["--keep-alive", "0"]),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args(argv)

    base_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ps_bench")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")
    name = urlsplit(base_url).path.lstrip("/") or "ps_bench"
    run_dir = RESULTS / f"sweep-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    flush_redis(redis_url)
    stack = Stack(database=name, base_database_url=base_url, redis_url=redis_url, run_dir=run_dir)
    results: dict[tuple[str, str], list[float]] = {}
    with stack:
        stack.prepare()
        stack.seed(200, seed=1)
        creds = stack.create_partner("Sweep partner")
        run_dir.joinpath("bare.txt").write_text("/bench/bare\n")
        run_dir.joinpath("events.txt").write_text("/v1/events?limit=20\n")
        run_dir.joinpath("creds.txt").write_text(f"{creds['client_id']}\t{creds['client_secret']}\n")
        for round_no in range(args.rounds):
            for label, worker_class, workers, threads, extra in SETTINGS:
                stack.gunicorn_extra = extra
                server = stack.start_web(
                    f"web-{round_no}", workers=workers, threads=threads, worker_class=worker_class
                )
                client = PartnerClient(
                    server.url, client_id=creds["client_id"], client_secret=creds["client_secret"]
                )
                run_dir.joinpath("tokens.txt").write_text(client.authenticate() + "\n")
                if not run_dir.joinpath("rows.txt").exists():
                    targets = discover_targets(client, want=50)
                    run_dir.joinpath("rows.txt").write_text("".join(t.rows_path + "\n" for t in targets))
                scenarios = {
                    "bare": {"mode": "get", "paths": run_dir / "bare.txt"},
                    "events": {
                        "mode": "get",
                        "paths": run_dir / "events.txt",
                        "tokens": run_dir / "tokens.txt",
                    },
                    "rows": {"mode": "get", "paths": run_dir / "rows.txt", "tokens": run_dir / "tokens.txt"},
                    "token": {"mode": "token", "creds": run_dir / "creds.txt"},
                }
                for scenario, kw in scenarios.items():
                    run_wrk(scenario, server.url, duration=1, connections=args.connections, **kw)  # warm-up
                    r = run_wrk(
                        scenario, server.url, duration=args.duration, connections=args.connections, **kw
                    )
                    results.setdefault((label, scenario), []).append(r.rps)
                    print(
                        f"[sweep] round {round_no + 1} {label:<28} {scenario:<7} {r.rps:8.0f} req/s",
                        flush=True,
                    )
                server.process.terminate()
                server.process.wait(timeout=30)
                stack.processes.remove(server.process)
                stack.servers.remove(server)
    print()
    print(f"{'gunicorn setting':<28} {'bare':>7} {'events':>7} {'rows':>7} {'token':>7}   ratios to bare")
    for label, *_ in SETTINGS:
        rps = {s: median(results[(label, s)]) for s in ("bare", "events", "rows", "token")}
        ratios = " ".join(f"{s} {rps[s] / rps['bare']:.2f}" for s in ("events", "rows", "token"))
        print(
            f"{label:<28} {rps['bare']:7.0f} {rps['events']:7.0f} {rps['rows']:7.0f} {rps['token']:7.0f}   {ratios}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
