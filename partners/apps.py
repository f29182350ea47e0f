from django.apps import AppConfig


class PartnersConfig(AppConfig):
    name = "partners"
    verbose_name = "Partners"
