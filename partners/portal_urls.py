"""The partner portal's sign-in, two-factor and account pages. Mounted by ``config/urls.py`` under
``/portal/`` in the ``portal`` namespace, beside the portal pages of orders and payouts (no ``app_name`` of
its own)."""

from django.urls import path

from config.core import two_factor

from .portal import auth, mode, pages

urlpatterns = [
    path("login", auth.login, name="login"),
    path("logout", auth.logout, name="logout"),
    path("password-reset", auth.password_reset, name="password-reset"),
    path("password-reset/sent", auth.password_reset_done, name="password-reset-done"),
    path("reset/<uidb64>/<token>", auth.password_reset_confirm, name="password-reset-confirm"),
    path("reset/done", auth.password_reset_complete, name="password-reset-complete"),
    path("welcome/<uidb64>/<token>", auth.welcome, name="welcome"),
    # Two-factor sign-in: the pages are the admin's too (config.core.two_factor), here under the portal's look.
    path("2fa/setup/", two_factor.portal_setup, name="2fa-setup"),
    path("2fa/verify/", two_factor.portal_verify, name="2fa-verify"),
    path("2fa/recovery-codes/", two_factor.portal_recovery_codes, name="2fa-recovery-codes"),
    path("2fa/disable/", two_factor.portal_disable, name="2fa-disable"),
    path("settings/api-credentials", pages.api_credentials, name="api-credentials"),
    path("settings/preferences", pages.preferences, name="preferences"),
    path("mode", mode.mode_switch, name="mode"),
]
