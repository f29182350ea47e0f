from django.apps import AppConfig


class TransfersConfig(AppConfig):
    """Transfer detection: the sellers' transfer e-mails and ticket files, proven genuine, matched to their
    order, and the order moved (docs/architecture.md "Transfer detection")."""

    name = "orders.transfers"
    label = "transfers"
    verbose_name = "Transfers"

    def ready(self) -> None:
        from . import channels  # noqa: F401  (connects the e-mail providers' inbound signal)
        from .platforms import registry

        registry()  # a bad platform template stops the service here (ImproperlyConfigured)
