import os

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config import views

api_v1 = [
    path("", include("partners.urls")),
    path("", include("catalog.urls")),
    path("", include("quotes.urls")),
    path("", include("orders.urls")),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    re_path(r"^.*$", views.api_not_found),
]

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("portal/", include("partners.portal_urls")),
    path("sandbox/", include("payouts.sandbox_urls")),
    path("v1/", include(api_v1)),
    re_path(r"^v1$", views.api_not_found),
]

# The benchmark's ceiling (bench/baseline.py): mounted only for `make bench`, never in a deployment.
if os.environ.get("BENCH_BASELINE") == "1":
    from bench.baseline import bare

    urlpatterns.append(path("bench/bare", bare, name="bench-bare"))

handler400 = "config.views.handler400"
handler403 = "config.views.handler403"
handler404 = "config.views.handler404"
handler500 = "config.views.handler500"
