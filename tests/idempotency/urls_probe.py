"""The real URLconf plus a POST endpoint written with no idempotency code at all, as any new one would be."""

import itertools

from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

COUNTER = itertools.count(1)


class NewThingView(APIView):
    required_scope = "orders:write"

    def post(self, request):
        return Response({"thing_id": next(COUNTER), "name": request.data.get("name")}, status=201)


urlpatterns = [
    path("v1/_new_things", NewThingView.as_view()),
    path("", include("config.urls")),
]

handler404 = "config.views.handler404"
handler500 = "config.views.handler500"
