from django.urls import path

from . import views as sandbox_views

app_name = "sandbox"

urlpatterns = [
    path("", sandbox_views.index, name="index"),
    path("authorize", sandbox_views.authorize, name="authorize"),
    path("cards/new", sandbox_views.card, name="card"),
]
