from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The shared mechanics' own tables (the lowest layer: every app may use them)."""

    name = "config.core"
    label = "core"
    verbose_name = "Shared mechanics"

    def ready(self) -> None:
        from . import request_cycle, settings_reads

        request_cycle.install()
        settings_reads.install()
