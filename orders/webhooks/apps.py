from django.apps import AppConfig

# The notification types an endpoint can subscribe to; ``webhook.ping`` goes only to the pinged endpoint.
SUBSCRIBABLE_TYPES = ("order.created", "order.status_changed", "order.transfer_updated")


class WebhooksConfig(AppConfig):
    name = "orders.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from orders.signals import subscribe

        from .services import notification_fan_out

        subscribe("webhooks", handler=notification_fan_out, types=SUBSCRIBABLE_TYPES)
