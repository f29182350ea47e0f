"""The real URLconf plus views that misbehave on purpose, placed before the API's catch-all."""

from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView


class BoomView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        raise RuntimeError("kaboom: internal detail that must not leak")


class EchoView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def post(self, request):
        return Response({"received": sorted(request.data)})


class ScopedView(APIView):
    required_scope = "events:read"

    def get(self, request):
        return Response({"partner_id": request.user.partner_id})


def plain_django_boom(request):
    raise ValueError("plain django failure")


urlpatterns = [
    path("v1/_boom", BoomView.as_view()),
    path("v1/_echo", EchoView.as_view()),
    path("v1/_plain_boom", plain_django_boom),
    path("v1/_scoped", ScopedView.as_view()),
    path("", include("config.urls")),
]

handler404 = "config.views.handler404"
handler500 = "config.views.handler500"
