"""Runs wrk (Debian's package) with bench/lua/bench.lua and returns what its done() reported."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "lua" / "bench.lua"


def wrk_binary() -> str:
    path = shutil.which("wrk")
    if not path:
        raise SystemExit(
            "wrk is not installed: run `make bench` (installs Debian's wrk) or apt-get install wrk"
        )
    return path


@dataclass
class WrkResult:
    scenario: str
    duration_s: float
    requests: int
    errors: dict[str, int]
    latency_us: dict[str, float]
    statuses: dict[str, int]
    codes: dict[str, int]
    orders_created: int
    quotes_created: int
    quote_ids: list[str] = field(default_factory=list, repr=False)
    # CPU time the web workers spent, per request (ms), and the busiest worker's share of it: the
    # first does not depend on what else the machine runs, the second shows an unbalanced server.
    cpu_ms_per_request: float | None = None
    busiest_worker_share: float | None = None
    # The rest of the machine per request (ms of CPU): the Celery worker, PostgreSQL and Redis over the run.
    others_ms_per_request: dict[str, float] = field(default_factory=dict)
    # The counting pass (count=1): summed X-Bench-* headers of the responses (bench/counting.py).
    counted: dict[str, int] = field(default_factory=dict)

    def per_request(self) -> dict[str, float] | None:
        """SQL statements, database round trips and Redis round trips per counted response."""
        n = self.counted.get("responses", 0)
        if not n:
            return None
        queries, transactions = self.counted.get("queries", 0), self.counted.get("transactions", 0)
        return {
            "responses": n,
            "queries": round(queries / n, 2),
            "transactions": round(transactions / n, 2),
            "db_round_trips": round((queries + 2 * transactions) / n, 2),
            "redis_round_trips": round(self.counted.get("redis", 0) / n, 2),
        }

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    @property
    def orders_per_s(self) -> float:
        return self.orders_created / self.duration_s if self.duration_s else 0.0

    @property
    def failed(self) -> int:
        e = self.errors
        return e["connect"] + e["read"] + e["write"] + e["status"] + e["timeout"]

    def as_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "duration_s": round(self.duration_s, 3),
            "requests": self.requests,
            "rps": round(self.rps, 1),
            "orders_created": self.orders_created,
            "orders_per_s": round(self.orders_per_s, 2),
            "quotes_created": self.quotes_created,
            "latency_ms": {k: round(v / 1000, 2) for k, v in self.latency_us.items()},
            "web_cpu_ms_per_request": self.cpu_ms_per_request,
            "busiest_worker_share": self.busiest_worker_share,
            "others_cpu_ms_per_request": self.others_ms_per_request,
            "errors": self.errors,
            "statuses": self.statuses,
            "codes": self.codes,
        }


def run_wrk(
    scenario: str,
    url: str,
    *,
    duration: float,
    connections: int,
    threads: int = 1,
    timeout: float = 10,
    **script_args: str | Path | int,
) -> WrkResult:
    args = [
        wrk_binary(),
        "-t",
        str(threads),
        "-c",
        str(connections),
        "-d",
        f"{max(1, round(duration))}s",
        "--timeout",
        f"{timeout}s",
        "--latency",
        "-s",
        str(SCRIPT),
        url,
        "--",
        f"threads={threads}",
        *(f"{k}={v}" for k, v in script_args.items()),
    ]
    proc = subprocess.run(args, capture_output=True, text=True, check=False, timeout=duration + 120)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BENCHJSON ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stderr or proc.stdout}")
    data = json.loads(line[len("BENCHJSON ") :])
    return WrkResult(
        scenario=scenario,
        duration_s=data["duration_us"] / 1e6,
        requests=data["requests"],
        errors=data["errors"],
        latency_us=data["latency_us"],
        statuses=data["statuses"],
        codes=data["codes"],
        orders_created=data["orders_created"],
        quotes_created=data["quotes_created"],
        quote_ids=data["quote_ids"],
        counted=data.get("counted") or {},
    )


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
