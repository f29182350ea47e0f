from django.apps import AppConfig


def _platform_form_action_origins() -> list[str]:
    from .platform import get_platform

    return get_platform().form_action_origins()


class PayoutsConfig(AppConfig):
    name = "payouts"
    verbose_name = "Payouts"

    def ready(self) -> None:
        # Payouts reacts to order events; orders never calls into payouts (the layers' direction).
        from orders import events
        from orders.models import Notification
        from partners.portal.access import form_action_origins_register

        from .services import confirmation

        # The payment-method pages' forms redirect to the platform's own pages.
        form_action_origins_register(_platform_form_action_origins)

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
