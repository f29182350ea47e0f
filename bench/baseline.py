"""The ceiling every benchmark figure is compared with: a bare Django view behind the same middleware.

Mounted at ``/bench/bare`` by the benchmark's own URLs (bench/urls.py, the ``ROOT_URLCONF`` of bench/settings.py),
which no deployment serves.
"""

from django.http import HttpRequest, JsonResponse


def bare(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})
