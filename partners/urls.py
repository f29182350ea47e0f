from django.urls import path

from . import api

urlpatterns = [
    path("auth/token", api.token_view, name="auth-token"),
]
