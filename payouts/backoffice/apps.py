from django.apps import AppConfig


class BackofficeConfig(AppConfig):
    name = "payouts.backoffice"
    label = "backoffice"
    verbose_name = "Back office"

    def ready(self) -> None:
        # /metrics: the gauges computed at scrape time (the outbox, queues, payouts and the staff dashboard's
        # queues), read across the apps below.
        from config.core.metrics import gauges_register

        from .metrics import COLLECTOR

        gauges_register(COLLECTOR)
