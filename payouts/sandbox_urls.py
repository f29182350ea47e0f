app_name = "sandbox"

urlpatterns: list = []
