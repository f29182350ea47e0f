from django.apps import AppConfig


class PayoutsConfig(AppConfig):
    name = "payouts"
    verbose_name = "Payouts"

    def ready(self) -> None:
        # Payouts reacts to order events; orders never calls into payouts (the layers' direction).
        from orders import events
        from orders.models import Notification

        from .services import confirmation

        events.subscribe(
            "payouts.confirmation",
            handler=confirmation.on_order_created,
            types=[Notification.Type.ORDER_CREATED],
            transient=confirmation.TRANSIENT,
        )
        events.subscribe(
            "payouts.refunds",
            handler=confirmation.on_order_status_changed,
            types=[Notification.Type.ORDER_STATUS_CHANGED],
            transient=confirmation.TRANSIENT,
        )
