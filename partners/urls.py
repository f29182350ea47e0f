from django.urls import path

from . import api

urlpatterns = [
    path("auth/token", api.TokenView.as_view(), name="auth-token"),
]
