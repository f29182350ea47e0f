"""``make soak``: load without loss. About two minutes of mixed traffic from 32 partners at once against
the production shape, then the database is checked.

    .venv/bin/python -m bench.soak [--seconds 75] [--partners 32]

Each partner is a thread with its own token that browses (events, sections, rows), quotes, orders
(sometimes sending the same quote twice at once), cancels and reads its orders. A few "hot" rows
have little stock so that orders compete for the last tickets. Afterwards (bench/soak_check.py): every
order answered 201 exists exactly once, every quote is consumed at most once, no row is oversold,
every order was confirmed exactly once (one charge, one e-mail), and no request got a 5xx.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

from bench.client import PartnerClient, Target, discover_targets
from bench.stack import RESULTS, Stack, flush_redis

HOT_ROWS = 6
HOT_STOCK = 8


def log(message: str) -> None:
    print(f"[soak {datetime.now():%H:%M:%S}] {message}", flush=True)


@dataclass
class Tally:
    """What the clients saw, shared by all partner threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter = field(default_factory=Counter)  # (endpoint, status) → n
    codes: Counter = field(default_factory=Counter)
    server_errors: list = field(default_factory=list)
    created_orders: list = field(default_factory=list)
    double_submits: list = field(default_factory=list)

    def record(self, endpoint: str, response) -> None:
        with self.lock:
            self.statuses[(endpoint, response.status_code)] += 1
            if response.status_code >= 400:
                try:
                    self.codes[response.json()["error"]["code"]] += 1
                except Exception:
                    self.codes["<not an envelope>"] += 1
            if response.status_code >= 500:
                self.server_errors.append(
                    (
                        endpoint,
                        response.status_code,
                        response.headers.get("X-Request-ID"),
                        response.text[:200],
                    )
                )


class Partner(threading.Thread):
    def __init__(self, n: int, client: PartnerClient, targets: list[Target], hot: list[Target], tally: Tally,
                 deadline: float) -> None:  # fmt: skip
        super().__init__(name=f"partner-{n}", daemon=True)
        self.client = client
        self.targets = targets
        self.hot = hot
        self.tally = tally
        self.deadline = deadline
        self.random = random.Random(n)
        self.orders: list[str] = []
        self.quotes: list[str] = []

    def call(self, endpoint: str, method: str, path: str, **kwargs):
        response = self.client.request(method, path, **kwargs)
        self.tally.record(endpoint, response)
        return response

    def run(self) -> None:
        while time.monotonic() < self.deadline:
            roll = self.random.random()
            try:
                if roll < 0.35:
                    self.browse()
                elif roll < 0.70:
                    self.quote_and_order()
                elif roll < 0.80:
                    self.cancel()
                else:
                    self.read()
            except Exception as exc:  # a client-side failure (timeout, reset) is a finding too
                with self.tally.lock:
                    self.tally.server_errors.append(("client", type(exc).__name__, None, str(exc)[:200]))

    def browse(self) -> None:
        target = self.random.choice(self.targets)
        params = self.random.choice([{}, {"limit": 50}, {"q": "a"}, {"date_from": "2020-01-01"}])
        page = self.call("events", "GET", "/v1/events", params=params)
        if page.status_code == 200 and page.json()["data"]["next_cursor"]:
            self.call(
                "events", "GET", "/v1/events", params={**params, "cursor": page.json()["data"]["next_cursor"]}
            )
        self.call("sections", "GET", f"/v1/events/{target.event_id}/sections")
        self.call("rows", "GET", target.rows_path)

    def quote_and_order(self) -> None:
        target = self.random.choice(self.hot if self.random.random() < 0.3 else self.targets)
        response = self.call(
            "quotes", "POST", "/v1/quotes", json=target.quote_body(self.random.randint(1, 3))
        )
        if response.status_code != 201:
            return
        quote_id = response.json()["data"]["quote_id"]
        self.quotes.append(quote_id)
        if self.random.random() < 0.2:
            return  # a quote left to expire
        if self.random.random() < 0.1:
            self.double_submit(quote_id)
            return
        self.order(quote_id)

    def order(self, quote_id: str):
        form = {"quote_id": (None, quote_id), "delivery_type": (None, "mobile_transfer"),
                "is_ready_to_deliver": (None, "true")}  # fmt: skip
        response = self.call("orders", "POST", "/v1/orders", files=form)
        if response.status_code == 201:
            order_id = response.json()["data"]["order_id"]
            self.orders.append(order_id)
            with self.tally.lock:
                self.tally.created_orders.append(order_id)
        return response

    def double_submit(self, quote_id: str) -> None:
        """The same quote sent twice at once (a partner's retry racing its first attempt)."""
        twin = PartnerClient(self.client.base_url, client_id=self.client.client_id,
                             client_secret=self.client.client_secret)  # fmt: skip
        twin.token = self.client.token
        other = Partner(0, twin, self.targets, self.hot, self.tally, self.deadline)
        results: list = []
        barrier = threading.Barrier(2)

        def go(partner: Partner) -> None:
            barrier.wait()
            results.append(partner.order(quote_id))

        threads = [threading.Thread(target=go, args=(p,)) for p in (self, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.orders.extend(other.orders)
        with self.tally.lock:
            self.tally.double_submits.append(
                {
                    "quote": quote_id[:16],
                    "answers": sorted(f"{r.status_code} {_code(r)}".strip() for r in results),
                }
            )

    def cancel(self) -> None:
        if not self.orders:
            return
        order_id = self.random.choice(self.orders)
        self.call("cancel", "POST", f"/v1/orders/{order_id}/cancel")

    def read(self) -> None:
        choice = self.random.random()
        if choice < 0.4 or not self.orders:
            self.call("orders_list", "GET", "/v1/orders", params={"limit": 20})
        elif choice < 0.8:
            self.call("order", "GET", f"/v1/orders/{self.random.choice(self.orders)}")
        elif self.quotes:
            self.call("quote", "GET", f"/v1/quotes/{self.random.choice(self.quotes)}")


def _code(response) -> str:
    try:
        return response.json()["error"]["code"]
    except Exception:
        return ""


def create_partners(stack: Stack, n: int) -> list[dict]:
    with ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda i: stack.create_partner(f"Soak partner {i:02d}"), range(n)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=75, help="seconds of traffic")
    parser.add_argument("--partners", type=int, default=32)
    parser.add_argument("--drain", type=int, default=25, help="seconds allowed for confirmations to finish")
    args = parser.parse_args(argv)

    base_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ps_bench")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")
    name = (urlsplit(base_url).path.lstrip("/") or "ps_bench") + "_soak"
    run_dir = RESULTS / f"soak-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    flush_redis(redis_url)
    stack = Stack(database=name, base_database_url=base_url, redis_url=redis_url, run_dir=run_dir,
                  cache_prefix="soak")  # fmt: skip
    started = time.monotonic()
    with stack:
        log(f"fresh database {name}, migrate, seed")
        stack.prepare()
        if not stack.seed(200, seed=7):
            raise SystemExit("seed_catalog is not available: nothing to soak")
        creds = create_partners(stack, args.partners)
        web = stack.start_web()
        stack.start_worker(beat=True)
        log(f"{args.partners} partners; gunicorn {web.url}; one Celery worker with beat")

        clients = [
            PartnerClient(web.url, client_id=c["client_id"], client_secret=c["client_secret"]) for c in creds
        ]
        for client in clients:
            client.authenticate()
        targets = discover_targets(clients[0], want=60)
        hot = targets[:HOT_ROWS]
        events = sorted({t.event_id for t in hot})
        # A few rows with little stock, so that orders compete for the last tickets.
        stack.shell(
            "from catalog.models import Row; from django.core.cache import cache; "
            f"Row.objects.filter(section__event__event_id__in={events!r}).update(available_quantity={HOT_STOCK}); "
            "cache.clear()"
        )
        quantities = json.loads(
            stack.shell(
                "import json; from catalog.models import Row; "
                "print(json.dumps(dict(Row.objects.values_list('pk', 'available_quantity'))))"
            )
            .strip()
            .splitlines()[-1]
        )
        tally = Tally()
        deadline = time.monotonic() + args.seconds
        log(
            f"traffic for {args.seconds} s over {len(targets)} rows ({HOT_ROWS} hot rows of {HOT_STOCK} tickets)"
        )
        partners = [Partner(i, c, targets, hot, tally, deadline) for i, c in enumerate(clients, 1)]
        for p in partners:
            p.start()
        for p in partners:
            p.join()
        requests_made = sum(tally.statuses.values())
        log(f"{requests_made} requests, {requests_made / args.seconds:.0f}/s; waiting for confirmations")

        drain_until = time.monotonic() + args.drain
        while time.monotonic() < drain_until:
            pending = sum(
                len(
                    c.request("GET", "/v1/orders", params={"status": "accepted", "limit": 1}).json()["data"][
                        "results"
                    ]
                )
                for c in clients
            )
            if not pending:
                break
            time.sleep(1)

        (run_dir / "expected.json").write_text(
            json.dumps(
                {
                    "created_orders": tally.created_orders,
                    "double_submits": tally.double_submits,
                    "initial_quantities": quantities,
                }
            )
        )
        out = stack.shell(f"from bench.soak_check import main; main({str(run_dir)!r})")
        check = json.loads(
            next(ln for ln in out.splitlines() if ln.startswith("SOAKCHECK "))[len("SOAKCHECK ") :]
        )

    by_endpoint: dict[str, dict[str, int]] = {}
    for (endpoint, status), n in sorted(tally.statuses.items()):
        by_endpoint.setdefault(endpoint, {})[str(status)] = n
    server_errors = [e for e in tally.server_errors]
    problems = list(check["problems"])
    if server_errors:
        problems.append(f"{len(server_errors)} server errors or client failures: {server_errors[:5]}")
    report = {
        "seconds": args.seconds,
        "partners": args.partners,
        "total_seconds": round(time.monotonic() - started, 1),
        "requests": requests_made,
        "requests_per_second": round(requests_made / args.seconds, 1),
        "statuses": by_endpoint,
        "error_codes": dict(tally.codes),
        "server_errors": len(server_errors),
        **{k: v for k, v in check.items() if k != "problems"},
        "problems": problems,
    }
    (run_dir / "soak.json").write_text(json.dumps(report, indent=2))
    (RESULTS / "soak-latest.json").write_text(json.dumps(report, indent=2))

    print()
    print(f"soak: {args.partners} partners, {args.seconds} s of traffic, {report['total_seconds']} s in all")
    print(
        f"  requests                  {requests_made} ({report['requests_per_second']}/s), 5xx or failures: {len(server_errors)}"
    )
    for endpoint, statuses in by_endpoint.items():
        print(f"    {endpoint:<12} {statuses}")
    print(f"  error codes               {dict(tally.codes)}")
    for key in ("orders_answered_201", "orders_in_database", "quotes_created", "quotes_consumed", "double_submits",
                "rows_checked", "rows_sold_out", "orders_confirmed", "orders_canceled", "charges",
                "confirmation_emails", "orders_still_accepted"):  # fmt: skip
        print(f"  {key.replace('_', ' '):<25} {check[key]}")
    print("  result                    " + ("OK" if not problems else "FAILED"))
    for problem in problems:
        print(f"    - {problem}")
    print(f"full report: {run_dir / 'soak.json'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
