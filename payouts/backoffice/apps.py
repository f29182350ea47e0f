from django.apps import AppConfig


class BackofficeConfig(AppConfig):
    name = "payouts.backoffice"
    label = "backoffice"
    verbose_name = "Back office"
