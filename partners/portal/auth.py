"""Sign-in, sign-out, password reset and the invitation link of the portal."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import reverse_lazy

from ..forms import PortalLoginForm, PortalPasswordResetForm
from .access import public_page

login = public_page(
    auth_views.LoginView.as_view(
        template_name="portal/login.html",
        authentication_form=PortalLoginForm,
        redirect_authenticated_user=True,
    )
)
logout = public_page(auth_views.LogoutView.as_view(next_page=reverse_lazy("portal:login")))
password_reset = public_page(
    auth_views.PasswordResetView.as_view(
        form_class=PortalPasswordResetForm,
        template_name="portal/password_reset.html",
        email_template_name="emails/portal_password_reset.txt",
        html_email_template_name="emails/portal_password_reset.html",
        subject_template_name="emails/portal_password_reset_subject.txt",
        success_url=reverse_lazy("portal:password-reset-done"),
    )
)
password_reset_done = public_page(
    auth_views.PasswordResetDoneView.as_view(template_name="portal/password_reset_done.html")
)
password_reset_confirm = public_page(
    auth_views.PasswordResetConfirmView.as_view(
        template_name="portal/password_reset_confirm.html",
        success_url=reverse_lazy("portal:password-reset-complete"),
    )
)
password_reset_complete = public_page(
    auth_views.PasswordResetCompleteView.as_view(template_name="portal/password_reset_complete.html")
)
# The invitation link: choose a first password, then land signed in on the dashboard.
welcome = public_page(
    auth_views.PasswordResetConfirmView.as_view(
        template_name="portal/welcome.html",
        post_reset_login=True,
        post_reset_login_backend="django.contrib.auth.backends.ModelBackend",
        success_url=reverse_lazy("portal:dashboard"),
    )
)
