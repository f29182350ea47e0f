"""The benchmark's URLs (``ROOT_URLCONF`` of bench/settings.py): the service's, plus the ceiling every figure is
compared with, ``GET /bench/bare`` (bench/baseline.py)."""

from django.urls import include, path

from bench.baseline import bare
from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 (read by Django)

urlpatterns = [
    path("bench/bare", bare, name="bench-bare"),
    path("", include("config.urls")),
]
