from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The shared mechanics' own tables (the lowest layer: every app may use them)."""

    name = "config.core"
    label = "core"
    verbose_name = "Shared mechanics"

    def ready(self) -> None:
        from . import request_cycle

        request_cycle.install()
