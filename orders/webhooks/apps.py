from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "orders.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from orders.models import Notification
        from orders.signals import subscribe

        from .services import notification_fan_out, notifications_without_endpoints

        subscribe(
            "webhooks",
            handler=notification_fan_out,
            types=Notification.Type.subscribable(),
            idle=notifications_without_endpoints,
        )
