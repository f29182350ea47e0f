from django.apps import AppConfig


def _platform_form_action_origins() -> list[str]:
    from .platform import get_platform

    return get_platform().form_action_origins()


class PayoutsConfig(AppConfig):
    name = "payouts"
    verbose_name = "Payouts"

    def ready(self) -> None:
        from django.conf import settings

        from .platform.registry import platform_known

        # A service whose PAYMENT_PLATFORM names no registered platform does not start.
        platform_known(settings.PAYMENT_PLATFORM)

        # Payouts reacts to order events; orders never calls into payouts (the layers' direction).
        from config.core.metrics import database_metrics_connect
        from orders import signals
        from orders.models import Notification, Order
        from partners.portal.access import form_action_origins_register

        from .lifecycle import reactions

        # /metrics: the database's statement timings (the gauges are the back office's).
        database_metrics_connect()

        # Staff's list of the e-mails sent once links each payment alert to its charge, payout or dispute.
        from config.core.mail_once import purpose_register

        from .services.alerts import KINDS

        for kind, alert in KINDS.items():
            purpose_register(kind, alert.model._meta.label)

        # The payment-method pages' forms redirect to the platform's own pages.
        form_action_origins_register(_platform_form_action_origins)

        signals.subscribe(
            "payouts.confirmation",
            handler=reactions.on_order_created,
            now=reactions.on_order_created_now,
            idle=reactions.orders_created_nudged_once,
            types=[Notification.Type.ORDER_CREATED],
            transient=reactions.TRANSIENT,
        )
        # Quotes and orders check the partner's payment readiness from a cached copy (partners.token_cache):
        # every save or delete of a payout method or card voids it, admin edits and cascades included.
        from django.db.models.signals import post_delete, post_save

        from partners.token_cache import payment_readiness_changed

        from .models import CreditCard, PayoutAccount

        def readiness_changed(sender, instance, **kwargs) -> None:
            payment_readiness_changed(partner_pk=instance.partner_id)

        for model in (PayoutAccount, CreditCard):
            post_save.connect(
                readiness_changed, sender=model, weak=False, dispatch_uid=f"readiness-save-{model.__name__}"
            )
            post_delete.connect(
                readiness_changed, sender=model, weak=False, dispatch_uid=f"readiness-delete-{model.__name__}"
            )
        signals.subscribe_transitions(
            "payouts.refunds",
            handler=reactions.on_order_canceled,
            to=[Order.Status.CANCELED],
            transient=reactions.TRANSIENT,
        )
