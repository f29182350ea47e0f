from django.apps import AppConfig


class TransfersConfig(AppConfig):
    """Transfer detection: the sellers' transfer e-mails and ticket files, proven genuine, matched to their
    order, and the order moved (docs/architecture/transfers.md "Transfer detection")."""

    name = "orders.transfers"
    label = "transfers"
    verbose_name = "Transfers"

    def ready(self) -> None:
        from config.core.mail_once import purpose_register
        from orders.models import Order
        from orders.signals import subscribe_transitions
        from orders.transfers.decision.subscribers import on_order_status_changed as release_waiting_mail
        from orders.transfers.decision.subscribers import orders_without_waiting_mail
        from orders.transfers.files.services import on_order_status_changed, orders_without_file_work
        from orders.transfers.intake import channels  # noqa: F401  (connects the e-mail providers' inbound signal)
        from orders.transfers.reading.platforms import registry
        from orders.transfers.reading.templates_store import overlay_install
        from orders.transfers.staff import admin  # noqa: F401  (registers the transfer models' admin pages)
        from orders.transfers.staff.services import QUESTION_MAIL

        purpose_register(QUESTION_MAIL, "transfers.TransferCase")
        registry()  # a bad platform template stops the service here (ImproperlyConfigured)
        overlay_install()  # from now on the versions staff activated are laid over the files

        from orders.services import expiry_hold_register
        from orders.transfers.decision.state import order_expiry_held

        # Only a case that could still lead to a payout holds the in-hand expiry (junk mail never does).
        expiry_hold_register(order_expiry_held)

        self.order_core_extend()

        # A pdf order's ticket PDF is checked once the order is confirmed (reaches awaiting_transfer).
        subscribe_transitions(
            "transfers-ticket-file",
            handler=on_order_status_changed,
            to=[Order.Status.AWAITING_TRANSFER],
            idle=orders_without_file_work,
        )
        # Mail that arrived before the confirmation is decided as soon as the order awaits its transfer.
        subscribe_transitions(
            "transfers-waiting-mail",
            handler=release_waiting_mail,
            to=[Order.Status.AWAITING_TRANSFER],
            idle=orders_without_waiting_mail,
        )

    def order_core_extend(self) -> None:
        """What transfer detection adds to the order core (``orders.extensions``): the tickets' arrival, the order
        admin's transfer panel and bulk acceptance, and test mode's ``simulate_transfer``."""
        from django.urls import path

        from orders.extensions import order_admin_extend, testmode_routes_add, ticket_receipt_register
        from orders.transfers.decision.state import order_receive, transfer_accept
        from orders.transfers.staff.admin.order import OrderTransferAdminMixin
        from orders.transfers.testing.api import SimulateTransferView

        ticket_receipt_register(receive=order_receive, accept=transfer_accept)
        order_admin_extend(
            OrderTransferAdminMixin,
            fieldsets=(("Transfer", {"fields": ("transfer_panel",)}),),
            actions=("mark_accepted_on_platform",),
        )
        testmode_routes_add(
            path(
                "test/orders/<str:order_id>/simulate_transfer",
                SimulateTransferView.as_view(),
                name="test-order-simulate-transfer",
            )
        )
