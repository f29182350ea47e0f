from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config import views
from config.api import deprecation
from config.core import two_factor
from config.core.metrics import metrics_view

api_v1 = [
    path("", include("partners.urls")),
    path("", include("catalog.urls")),
    path("", include("quotes.urls")),
    path("", include("orders.urls")),
    path("", include("orders.webhooks.urls")),
    # The document docs/partners/openapi.json holds (`make schema` writes it; a test keeps the two equal):
    # JSON unless YAML is asked for.
    path(
        "schema",
        SpectacularAPIView.as_view(
            renderer_classes=[
                OpenApiJsonRenderer2,
                OpenApiJsonRenderer,
                OpenApiYamlRenderer,
                OpenApiYamlRenderer2,
            ]
        ),
        name="schema",
    ),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    re_path(r"^.*$", views.api_not_found),
]

# The partner portal: each app mounts its own pages, all in the one ``portal`` namespace.
portal = [
    path("", include("partners.portal_urls")),
    path("", include("orders.portal_urls")),
    path("", include("payouts.portal_urls")),
]

urlpatterns = [
    # First: every partner API request is resolved against it before any page's pattern is tried.
    path("v1/", include(api_v1)),
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    # The partner guide's changelog, where a deprecated route's Link header points (config/api/deprecation.py).
    path("changelog", deprecation.changelog, name="changelog"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    # Prometheus (config/core/metrics.py): loopback or METRICS_TOKEN only, the ordinary 404 otherwise.
    path("metrics", metrics_view, name="metrics"),
    path("admin/2fa/setup/", two_factor.admin_setup, name="admin-2fa-setup"),
    path("admin/2fa/verify/", two_factor.admin_verify, name="admin-2fa-verify"),
    path("admin/2fa/recovery-codes/", two_factor.admin_recovery_codes, name="admin-2fa-recovery-codes"),
    path("admin/", admin.site.urls),
    path("portal/settings/webhooks/", include("orders.webhooks.portal_urls")),
    path("portal/", include((portal, "portal"))),
    # Each registered payment platform's own URLs (payouts/platform/urls.py): the sandbox's pages at /sandbox/,
    # Stripe's events at /payments/stripe/events (signed by Stripe); each 404 unless it is PAYMENT_PLATFORM.
    path("", include("payouts.platform.urls")),
    # The e-mail providers' inbound webhooks (orders/transfers/urls.py): 404 unless in INBOUND_CHANNELS.
    path("inbound/", include("orders.transfers.urls")),
    re_path(r"^v1$", views.api_not_found),
]

handler400 = "config.views.handler400"
handler403 = "config.views.handler403"
handler404 = "config.views.handler404"
handler500 = "config.views.handler500"
