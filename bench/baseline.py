"""The ceiling every benchmark figure is compared with: a bare Django view behind the same middleware.

Mounted at ``/bench/bare`` only when ``BENCH_BASELINE=1`` (see ``config/urls.py``); never in a normal
deployment.
"""

from django.http import HttpRequest, JsonResponse


def bare(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})
