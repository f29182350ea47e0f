from django.urls import path
from django.views.generic import RedirectView

app_name = "portal"

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False), name="dashboard"),
    path("login", RedirectView.as_view(url="/admin/login/", permanent=False), name="login"),
]
