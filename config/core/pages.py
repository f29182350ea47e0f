"""The middleware of the pages people use, which the partner API skips.

The admin, the portal, the sandbox platform's pages and the sign-in pages need sessions, CSRF protection, the
signed-in user, two-factor sign-in, messages and the sign-in lockout. The partner API (``/v1/…``) needs none of
them: every request carries its bearer token, nothing reads a cookie. ``PagesMiddleware`` runs them as one
step of ``MIDDLEWARE``, in the order of ``PAGE_MIDDLEWARE``, for every request outside ``/v1/``, and lets API
requests pass straight through, so they pay for none of them.

The inner middleware are built as Django's handler builds its own (each wrapped so that its errors become
responses); their ``process_view`` hooks (CSRF's) run in their order from this one's. A middleware with a
``process_exception`` or ``process_template_response`` hook cannot be listed here: the check at start-up says so.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

# In the order they run, as they would stand in MIDDLEWARE. django-axes' last: it answers a locked-out sign-in
# with the lockout page.
PAGE_MIDDLEWARE = (
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "config.core.two_factor.TwoFactorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "axes.middleware.AxesMiddleware",
)

API_PREFIX = "/v1/"


def is_page(request: HttpRequest) -> bool:
    """Whether the request is for a page rather than the partner API (routing's view: ``path_info``)."""
    path = request.path_info
    return not (path.startswith(API_PREFIX) or path == API_PREFIX[:-1])


class PagesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._view_hooks: list[Callable] = []
        handler = convert_exception_to_response(get_response)
        for path in reversed(PAGE_MIDDLEWARE):
            instance = import_string(path)(handler)
            for hook in ("process_exception", "process_template_response"):
                if hasattr(instance, hook):
                    raise ImproperlyConfigured(f"{path} has {hook}(), which PagesMiddleware does not run")
            if hasattr(instance, "process_view"):
                self._view_hooks.insert(0, instance.process_view)
            handler = convert_exception_to_response(instance)
        self._pages = handler

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_page(request):
            return self._pages(request)
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        if not is_page(request):
            return None
        for hook in self._view_hooks:
            response = hook(request, view_func, view_args, view_kwargs)
            if response is not None:
                return response
        return None


# The admin's and django-axes' own checks look for their middleware in MIDDLEWARE, where it does not stand
# (config.settings silences them); this one looks for it here.
PAGES_PATH = f"{__name__}.PagesMiddleware"


@checks.register(checks.Tags.security, checks.Tags.admin)
def pages_middleware_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    if PAGES_PATH not in settings.MIDDLEWARE:
        return [
            checks.Error(
                f"{PAGES_PATH} must be in MIDDLEWARE: the admin and the portal need its sessions, CSRF "
                "protection, signed-in user, two-factor sign-in, messages and sign-in lockout.",
                id="pages.E001",
            )
        ]
    clash = [path for path in PAGE_MIDDLEWARE if path in settings.MIDDLEWARE]
    if clash:
        return [
            checks.Error(
                f"{', '.join(clash)} run inside {PAGES_PATH}: list them only there.", id="pages.E002"
            )
        ]
    return []
