"""CPU per request of the service's hot paths against the bare project's view, in-process, without a server.

``python -m bench.request_cpu --creds creds.json [--n 2000] [--rounds 5] [--against DIR]`` (the service's
environment: ``DATABASE_URL``, ``REDIS_URL``, a database migrated and seeded with ``seed_catalog`` and a partner
made by ``create_partner --with-payment-methods --json``, whose JSON line ``creds.json`` holds). Two child processes,
one with the service's production settings (``bench.settings``, as ``make bench`` runs them) and one with the
bare project's (bench/bare_project), each call the WSGI application gunicorn runs (``config.wsgi``,
``bench.bare_project.wsgi``) ``--n`` times per scenario with an environ as gunicorn prepares it and time it
with ``time.process_time``; the scenarios run interleaved, round after round, and the table gives the median
of the rounds in ms of CPU per request. No network, no gunicorn: the floor of what a request costs the
worker's own code. ``--against`` names another checkout of the service (the tree before a
change), measured by a third child in the same rounds; the two trees take turns to go first in a round.
``roundtrip`` is not a request: the one Redis round trip of ``events304`` (authentication, rate count, catalog
versions), replayed alone, so that the 304's figure splits into that round trip and the rest of its path.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote

SCENARIOS = ("bare", "token", "events", "events304", "roundtrip", "rows", "quotes")
EVENTS_PATH = "/v1/events"
EVENTS_QUERY = "limit=20"


def _environ(method: str, path: str, query: str = "", body: bytes = b"", headers: dict | None = None) -> dict:
    environ = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        # The request target as sent (gunicorn's RAW_URI, which its access line and our redaction read).
        "RAW_URI": quote(path.encode("latin-1"), safe="/:@!$&'()*+,;=~") + (f"?{query}" if query else ""),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "40000",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_USER_AGENT": "wrk",
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.errors": sys.stderr,
        "_body": body,
    }
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
        environ["CONTENT_TYPE"] = "application/json"
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


class Caller:
    def __init__(self, application) -> None:
        self.application = application
        self.status = ""
        self.headers: list = []

    def _start(self, status, headers, exc_info=None):
        self.status = status
        self.headers = headers

    def __call__(self, template: dict) -> tuple[str, bytes]:
        environ = dict(template)
        environ["wsgi.input"] = io.BytesIO(environ.pop("_body"))
        result = self.application(environ, self._start)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return self.status, body


def _service_plans(call: Caller, creds: dict) -> dict[str, list[dict]]:
    token_body = json.dumps(
        {
            "client_id": creds["client_id"],
            "client_secret": creds["client_secret"],
            "grant_type": "client_credentials",
        }
    ).encode()
    token_request = _environ("POST", "/v1/auth/token", body=token_body)
    status, body = call(token_request)
    assert status.startswith("200"), (status, body)
    token = json.loads(body)["data"]["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    events = _environ("GET", EVENTS_PATH, EVENTS_QUERY, headers=auth)
    status, body = call(events)
    assert status.startswith("200"), (status, body)
    etag = dict(call.headers)["ETag"]
    rows, quotes = [], []
    for event in json.loads(body)["data"]["results"]:
        status, body = call(_environ("GET", f"/v1/events/{event['event_id']}/sections", headers=auth))
        for section in json.loads(body)["data"]["results"][:2]:
            # PATH_INFO is the decoded path, as WSGI servers give it (UTF-8 bytes read as latin-1).
            name = section["section_name"].encode().decode("latin-1")
            path = f"/v1/events/{event['event_id']}/sections/{name}/rows"
            status, body = call(_environ("GET", path, headers=auth))
            results = [r for r in json.loads(body)["data"]["results"] if r["available_quantity"] > 0]
            if not status.startswith("200") or not results:
                continue
            rows.append(_environ("GET", path, headers=auth))
            quote_body = {
                "event_id": event["event_id"],
                "section_name": section["section_name"],
                "row_name": results[0]["row_name"],
                "quantity": 1,
                "user_metadata": {"first_name": "Ana", "last_name": "Silva", "email": "ana@example.com"},
            }
            quotes.append(_environ("POST", "/v1/quotes", body=json.dumps(quote_body).encode(), headers=auth))
    return {
        "token": [token_request],
        "events": [events],
        "events304": [_environ("GET", EVENTS_PATH, EVENTS_QUERY, headers={**auth, "If-None-Match": etag})],
        "rows": rows,
        "quotes": quotes,
    }


EXPECTED = {
    "bare": "200",
    "token": "200",
    "events": "200",
    "events304": "304",
    "rows": "200",
    "quotes": "201",
}


def _round_trip(call: Caller, environ: dict):
    """The one Redis round trip a 304 makes (``config.api.ratelimit._count``: its keys, the pipeline, the
    decoding), captured from a real 304 and replayed alone: what that part of a read costs in the same process,
    so the table shows the floor the round trip sets and what the rest of the path adds."""
    from config.api import ratelimit

    captured = []
    count = ratelimit._count

    def capture(*args, **kwargs):
        captured.append((args, kwargs))
        return count(*args, **kwargs)

    ratelimit._count = capture
    try:
        status, _ = call(environ)
    finally:
        ratelimit._count = count
    assert status.startswith("304") and len(captured) == 1, (status, captured)
    args, kwargs = captured[0]
    return lambda: count(*args, **kwargs)


def child(kind: str, creds_file: str) -> None:
    # The applications gunicorn runs (their modules' ``application``): the service's with the access log's
    # redaction around Django's handler (config/wsgi.py), the bare project's Django's handler alone.
    if kind == "bare":
        from bench.bare_project.wsgi import application
    else:
        os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
        from config.wsgi import application

    call = Caller(application)
    if kind == "bare":
        plans = {"bare": [_environ("GET", "/events")]}
    else:
        with open(creds_file) as handle:
            creds = json.loads(handle.readline())
        plans = _service_plans(call, creds)
    for name, environs in plans.items():  # warm every path, and check what it answers
        for environ in environs:
            status, body = call(environ)
            assert status.startswith(EXPECTED[name]), (name, status, body[:300])
    replays = {"roundtrip": _round_trip(call, plans["events304"][0])} if kind == "service" else {}
    print("ready", flush=True)
    dumps = os.environ.get("REQUEST_CPU_CALLGRIND_DIR")
    for line in sys.stdin:
        name, n = line.split()
        count = int(n)
        if dumps:
            _callgrind("-z")
        started = time.process_time()
        if name in replays:
            replay = replays[name]
            for _ in range(count):
                replay()
        else:
            environs = plans[name]
            for i in range(count):
                call(environs[i % len(environs)])
        spent = time.process_time() - started
        figure = _callgrind_instructions(dumps) if dumps else spent * 1000
        print(f"{figure / count:.4f}", flush=True)


def _callgrind(*command: str) -> None:
    subprocess.run(["callgrind_control", *command, str(os.getpid())], check=True, capture_output=True)


def _callgrind_instructions(dumps: str) -> float:
    """The instructions since the counters were zeroed: dumped now, read from the dump's totals."""
    _callgrind("-d")
    latest = max(glob.glob(os.path.join(dumps, f"cg.{os.getpid()}.*")), key=os.path.getmtime)
    with open(latest) as handle:
        for line in handle:
            if line.startswith(("summary:", "totals:")):
                return float(line.split()[1])
    raise RuntimeError(f"no totals in {latest}")


def _service_env() -> dict[str, str]:
    from bench.stack import PRODUCTION_ENV

    # The service's production settings as the benchmark's stack runs them (the child picks its own module).
    return {**os.environ, **PRODUCTION_ENV, "MEDIA_SHARED": "true", "PAYMENT_PLATFORM": "sandbox"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creds", required=False, default="")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--child", choices=("service", "bare"))
    parser.add_argument(
        "--against", default="", help="another checkout of the service, measured in the same rounds (before)"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count user-space instructions per request under callgrind",
    )
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.creds)
        return 0
    scenarios = [s for s in SCENARIOS if s in args.only.split(",") and s != "bare"]
    trees = {"service": os.getcwd(), **({"against": args.against} if args.against else {})}
    procs = {}
    wrapper, extra = [], {}
    if args.instructions:
        if not shutil.which("valgrind"):
            raise SystemExit("--instructions needs valgrind (Debian's valgrind package)")
        dumps = tempfile.mkdtemp(prefix="request-instructions-")
        wrapper = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dumps}/cg.%p"]
        # The same hash seed in every child: the same dictionaries, the same instructions.
        extra = {"REQUEST_CPU_CALLGRIND_DIR": dumps, "PYTHONHASHSEED": "0"}
    for name, cwd in {"bare": os.getcwd(), **trees}.items():
        script = os.path.join(os.getcwd(), "bench", "request_cpu.py")
        kind = "bare" if name == "bare" else "service"
        procs[name] = subprocess.Popen(
            [*wrapper, sys.executable, script, "--child", kind, "--creds", args.creds],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if args.instructions else None,
            text=True,
            cwd=cwd,
            env={**_service_env(), "PYTHONPATH": cwd, **extra},
        )
        assert procs[name].stdout.readline().strip() == "ready"
    plan = [("bare", "bare")] + [(tree, name) for name in scenarios for tree in trees]
    figures: dict[tuple[str, str], list[float]] = {key: [] for key in plan}
    # The trees take turns to go first: the first to read a row page after its shared copy ran out rebuilds it
    # (the 5 s of CATALOG_CACHE_SECONDS), and the next finds it built.
    swapped = [("bare", "bare")] + [(tree, name) for name in scenarios for tree in reversed(trees)]
    for number in range(args.rounds):
        for tree, name in plan if number % 2 == 0 else swapped:
            proc = procs[tree]
            proc.stdin.write(f"{name} {args.n if name != 'quotes' else max(1, args.n // 4)}\n")
            proc.stdin.flush()
            figures[tree, name].append(float(proc.stdout.readline()))
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()
    bare = statistics.median(figures["bare", "bare"])
    # Instructions are no ratio to the bare view's: its JSON encoding runs many instructions at a high rate, the
    # service's path fewer over far more code (and its round trips' time is the kernel's).
    unit, against_bare = ("instr/req", "") if args.instructions else ("ms/request", "bare/ours")
    print(f"{'tree':<8} {'scenario':<10} {unit:>10} {against_bare:>9}  rounds")
    for tree, name in plan:
        median = statistics.median(figures[tree, name])
        shown = "{:.0f}" if args.instructions else "{:.3f}"
        rounds = " ".join(shown.format(v) for v in figures[tree, name])
        ratio = "" if args.instructions else f"{bare / median:.3f}"
        print(f"{tree:<8} {name:<10} {shown.format(median):>10} {ratio:>9}  {rounds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
