from django.apps import AppConfig


class PartnersConfig(AppConfig):
    name = "partners"
    verbose_name = "Partners"

    def ready(self) -> None:
        from . import schema  # noqa: F401  (registers the OpenAPI description of bearer tokens)
