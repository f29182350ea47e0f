"""The benchmark's settings (``make bench``, ``make soak``): the service's own, plus the benchmark's hooks, which
no deployment carries. bench/stack.py starts every process of its stack with
``DJANGO_SETTINGS_MODULE=bench.settings``.

- ``ROOT_URLCONF``: the service's URLs plus the ceiling, ``GET /bench/bare`` (bench/urls.py, bench/baseline.py);
- ``BENCH_COUNT=1``: every response carries the request's SQL statements, transactions and Redis round trips
  (bench/counting.py). The counting pass sets it on the one server it starts; the timed servers run without it.
"""

from config.settings import *  # noqa: F403 (the service's settings, each as it is deployed)
from config.settings import MIDDLEWARE, env

ROOT_URLCONF = "bench.urls"

BENCH_COUNT = env.bool("BENCH_COUNT", default=False)
# Outermost, so that it counts what every other middleware does too.
MIDDLEWARE = [*(["bench.counting.CountingMiddleware"] if BENCH_COUNT else []), *MIDDLEWARE]
