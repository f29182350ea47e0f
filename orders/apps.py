from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "orders"
    verbose_name = "Orders"

    def ready(self) -> None:
        from catalog.signals import subscribe_event_canceled
        from config.core.mail_once import purpose_register

        from .seller_mail import CONFIRMATION_MAIL

        purpose_register(CONFIRMATION_MAIL, "orders.Order")

        subscribe_event_canceled("orders", _cancel_orders_of_canceled_event)


def _cancel_orders_of_canceled_event(event_pk: int) -> None:
    """After the event's cancel committed: its open orders are canceled by a task (the periodic expiry run
    catches one whose message was lost)."""
    from config.core.publish import publish

    from .tasks import orders_cancel_for_canceled_events

    publish(orders_cancel_for_canceled_events, event_pk)
