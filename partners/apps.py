from django.apps import AppConfig


class PartnersConfig(AppConfig):
    name = "partners"
    verbose_name = "Partners"

    def ready(self) -> None:
        from config.core import pages  # noqa: F401  (registers the check that the pages' middleware is in place)

        from . import schema  # noqa: F401  (registers the OpenAPI description of bearer tokens)
