"""Least privilege in the admin: every action and staff view that changes data asks for its permission.

A view-only staff member (signed in with two-factor, as in production) walks every registered admin: the lists
and record pages open without a single action or button, and a forged POST of every action and every custom
view is refused with the whole database unchanged. A member of the shipped "Operations" group takes the same
actions; "Support (read only)" sees every record and can change none.
"""

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import Client, RequestFactory
from django.urls import reverse
from django_otp.oath import totp
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.test import APIClient

from catalog.models import Event, Row
from catalog.services import row_quantity_adjust
from orders.models import Order
from orders.services import order_transition
from orders.transfers.models import TransferCase
from orders.transfers.reading.services import version_create
from orders.transfers.reading.templates_store import shipped_data
from orders.webhooks.models import WebhookEndpoint
from orders.webhooks.services import endpoint_create, endpoint_disable
from partners.models import Partner, PartnerCredential, PartnerTestCredential
from partners.portal_services import portal_user_invite
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge, Payout
from payouts.services.progression import payouts_progress
from tests.confirming import post_confirmed
from tests.conftest import issue_token, make_partner
from tests.orders.factories import make_order
from tests.transfers.staff.fixtures import mismatch_case

pytestmark = pytest.mark.django_db

groups_migration = importlib.import_module("payouts.migrations.0010_staff_groups")
histories_migration = importlib.import_module("payouts.migrations.0012_staff_groups_status_histories")
transfers_migration = importlib.import_module("payouts.migrations.0013_staff_groups_transfers")
disputes_migration = importlib.import_module("payouts.migrations.0015_staff_groups_disputes")
templates_migration = importlib.import_module("payouts.migrations.0016_staff_groups_platform_templates")
mail_once_migration = importlib.import_module("payouts.migrations.0020_staff_groups_mail_once")

# Django's own pages of a model admin; everything else a model admin serves is one of its custom views.
STANDARD_VIEWS = {"changelist", "add", "history", "delete", "change"}
# Custom views that only read (with the view permission): everything else must refuse a view-only member.
READ_VIEWS = {"orders_order_ticket_pdf"}
# Staff accounts and their sign-in devices are for superusers: the shipped groups do not see them.
STAFF_ACCOUNT_MODELS = {
    "auth.user",
    "auth.group",
    "otp_totp.totpdevice",
    "otp_static.staticdevice",
    "otp_static.statictoken",
}
# Rows that change on every request whatever it does (the session, the sign-in throttle's log).
NOT_SNAPSHOTTED = {"sessions", "axes"}


# --- helpers -----------------------------------------------------------------------------------------------------
def signed_in_with_two_factor(user, settings) -> Client:
    """A client signed in the way staff are in production: password, then the authenticator's code."""
    settings.ADMIN_REQUIRE_2FA = True
    device = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    client = Client()
    client.force_login(user)
    code = f"{totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits):06d}"
    response = client.post("/admin/2fa/verify/", {"code": code, "next": "/admin/"})
    assert response.status_code == 302 and response["Location"] == "/admin/", response
    assert client.get("/admin/").status_code == 200
    return client


def staff_user(username: str, *, permissions=(), groups=()):
    user = get_user_model().objects.create_user(
        username, f"{username}@service.example", "a long staff pass 2026", is_staff=True
    )
    user.user_permissions.add(*permissions)
    user.groups.add(*groups)
    return user


def snapshot() -> dict[str, list[dict]]:
    """Every row of every table the service owns, history and audit tables included."""
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.app_label not in NOT_SNAPSHOTTED and not model._meta.proxy
    }


def changed_tables(before: dict, after: dict) -> list[str]:
    return [label for label in before if before[label] != after[label]]


def request_as(user):
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def custom_views(model_admin) -> list[tuple[str, list[str]]]:
    """(URL name, URL keyword arguments) of each view the model admin adds to Django's own."""
    opts = model_admin.model._meta
    prefix = f"{opts.app_label}_{opts.model_name}_"
    views = []
    for pattern in model_admin.get_urls():
        if pattern.name is None or pattern.name.removeprefix(prefix) in STANDARD_VIEWS:
            continue
        views.append((pattern.name, list(pattern.pattern.converters)))
    return views


def custom_urls(model_admin, obj) -> list[tuple[str, str]]:
    """(URL name, URL) of each custom view for ``obj`` (or without an object, for views that take none)."""
    urls = []
    for name, kwargs in custom_views(model_admin):
        values = {key: obj.pk for key in kwargs} if obj is not None else {}
        if bool(kwargs) == (obj is not None):
            urls.append((name, reverse(f"admin:{name}", kwargs=values)))
    return urls


def registered():
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


@pytest.fixture
def world(settings, django_capture_on_commit_callbacks):
    """At least one record for every page the admin has, each in the state its actions act on."""
    root = get_user_model().objects.create_superuser("root", "root@service.example", "a long root pass 2026")
    creds = make_partner(name="Harbour Tickets")
    suspended = make_partner(name="Dormant Resale", email="ops@dormant.example", suspended=True).partner
    portal_user_invite(partner=creds.partner, email="ann@harbour.example", password="a long portal pass 2026")
    issue_token(APIClient(), creds)

    awaiting = make_order(creds.partner)
    order_confirm(order_pk=awaiting.pk)  # charged, awaiting the transfer
    refund_failed = make_order(creds.partner)
    order_confirm(order_pk=refund_failed.pk)
    with django_capture_on_commit_callbacks(execute=True):
        order_transition(order=refund_failed, to="canceled", actor="staff:setup", reason="setup")
    Charge.objects.filter(order=refund_failed).update(
        refund_status="failed", refund_failure_reason="card gone"
    )
    payout_failed = make_order(creds.partner, status="ticket_received")
    payouts_progress()
    Payout.objects.filter(order=payout_failed).update(status="failed", failure_reason="account closed")

    row = Row.objects.filter(section__event=awaiting.event).get()
    row_quantity_adjust(row_pk=row.pk, delta=3, reason="found three more", actor="staff:root")
    LogEntry.objects.create(
        user=root,
        content_type=ContentType.objects.get_for_model(Partner),
        object_id=str(creds.partner.pk),
        object_repr=str(creds.partner),
        action_flag=CHANGE,
        change_message="Suspended: setup",
    )
    # After the orders: no delivery is attempted while the test runs. The endpoint failed for 3 days.
    endpoint, _ = endpoint_create(
        partner_pk=creds.partner.pk,
        livemode=True,
        url="http://127.0.0.1:9/tbb",
        event_types=["order.created"],
    )
    endpoint_disable(endpoint=endpoint, reason=WebhookEndpoint.DisabledReason.FAILING, notify=False)
    StaticDevice.objects.create(user=root, name="backup", confirmed=True).token_set.create(token="a1b2c3d4")
    # A transfer case on an order awaiting its transfer (every case action applies), with its message and evidence.
    case = mismatch_case(make_order(creds.partner, status="awaiting_transfer"))
    # A draft template version that changes the sandbox platform's registry entry (approve, activate, discard).
    shipped = shipped_data("sandbox")
    version_create(
        platform="sandbox",
        data={**shipped, "accept_link_hosts": ["accept.sandbox.invalid", "claim.sandbox.invalid"]},
        actor="staff:root",
        reason="setup",
    )
    return SimpleNamespace(
        case=case,
        root=root,
        partner=creds.partner,
        suspended=suspended,
        awaiting=awaiting,
        refund_failed=refund_failed,
        payout_failed=payout_failed,
        row=row,
    )


# --- a view-only member --------------------------------------------------------------------------------------------
def test_every_action_the_admin_offers_declares_a_permission(world):
    for model, model_admin in registered():
        for name, (func, _, _) in model_admin.get_actions(request_as(world.root)).items():
            assert getattr(func, "allowed_permissions", ()), (
                f"{model._meta.label}: {name} declares no permission"
            )


def test_a_view_only_member_sees_every_page_and_no_action_or_button(world, settings):
    viewer = staff_user("viewer", permissions=Permission.objects.filter(codename__startswith="view_"))
    client = signed_in_with_two_factor(viewer, settings)
    for model, model_admin in registered():
        opts = model._meta
        assert model_admin.get_actions(request_as(viewer)) == {}, opts.label
        changelist = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        assert changelist.status_code == 200, opts.label
        assert 'name="action"' not in changelist.content.decode(), opts.label
        for obj in model._base_manager.order_by("pk")[:5]:
            page = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]))
            assert page.status_code == 200, (opts.label, obj.pk)
            html = page.content.decode()
            assert 'name="_save"' not in html, (opts.label, obj.pk)
            for name, url in custom_urls(model_admin, obj):
                assert name in READ_VIEWS or url not in html, f"{opts.label} {obj.pk}: a button to {name}"


def test_a_forged_post_of_every_action_and_view_changes_nothing(world, settings):
    viewer = staff_user("viewer", permissions=Permission.objects.filter(codename__startswith="view_"))
    client = signed_in_with_two_factor(viewer, settings)
    forged = {
        "confirmed": "yes",
        "reason": "forged",
        "delta": "5",
        "email": "mallory@evil.example",
        "password1": "a forged pass 2026",
        "password2": "a forged pass 2026",
        "select_across": "0",
        "index": "0",
    }
    tried = set()
    for model, model_admin in registered():
        opts = model._meta
        objects = list(model._base_manager.order_by("pk")[:5])
        changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        for action in model_admin.get_actions(request_as(world.root)):
            before = snapshot()
            response = client.post(
                changelist, {**forged, "action": action, "_selected_action": [o.pk for o in objects]}
            )
            assert response.status_code in (200, 302, 403), (opts.label, action, response.status_code)
            assert changed_tables(before, snapshot()) == [], (opts.label, action)
            tried.add(action)
        # Django's own pages: the add form, an edit saved over a read-only page, a confirmed delete.
        before = snapshot()
        base = f"admin:{opts.app_label}_{opts.model_name}"
        assert client.post(reverse(f"{base}_add"), {"name": "forged"}).status_code == 403, opts.label
        for obj in objects:
            assert client.post(reverse(f"{base}_change", args=[obj.pk]), {"name": "x"}).status_code == 403
            assert client.post(reverse(f"{base}_delete", args=[obj.pk]), {"post": "yes"}).status_code == 403
        assert changed_tables(before, snapshot()) == [], opts.label
        for obj in [None, *objects]:
            for name, url in custom_urls(model_admin, obj):
                before = snapshot()
                for response in (client.get(url), client.post(url, forged)):
                    if name not in READ_VIEWS:
                        assert response.status_code == 403, (name, url, response.status_code)
                assert changed_tables(before, snapshot()) == [], (name, url)
                tried.add(name)
    # The walk reached the actions the review named (a guard against an empty walk).
    assert {
        "rotate_credentials_action",
        "suspend_action",
        "reactivate_action",
        "cancel_events",
        "mark_ticket_received",
        "cancel_orders",
        "retry_refund_action",
        "retry_action",
        "enable_endpoints",
        "delete_selected",
        "partners_partner_rotate",
        "partners_partner_rotate_test",
        "partners_partner_suspend",
        "partners_partner_reactivate",
        "partners_partner_invite_portal_user",
        "partners_partner_credentials_once",
        "catalog_row_adjust_quantity",
        "orders_order_cancel",
        "orders_order_mark_received",
        "orders_order_retry_refund",
        "orders_order_retry_payout",
        "payouts_payout_retry",
        "mark_accepted_on_platform",
        "accept_on_platform",
        "transfers_transfercase_mark_received",
        "transfers_transfercase_ask_seller",
        "transfers_transfercase_dismiss",
        "transfers_transfercase_forged",
        "transfers_transfercase_accept",
        "transfers_transfercase_recalled",
        "transfers_inboundmessage_raw",
        "transfers_platformtemplateversion_edit",
        "transfers_platformtemplateversion_test",
        "transfers_platformtemplateversion_export",
        "transfers_platformtemplateversion_approve",
        "transfers_platformtemplateversion_activate",
        "transfers_platformtemplateversion_discard",
        "transfers_platformtemplateversion_learn",
    } <= tried


def test_nobody_reads_another_staff_members_authenticator_key_or_recovery_codes(world, settings):
    viewer = staff_user("viewer", permissions=Permission.objects.filter(codename__startswith="view_"))
    client = signed_in_with_two_factor(viewer, settings)
    device = StaticDevice.objects.get(user=world.root)
    assert (
        "a1b2c3d4" not in client.get(f"/admin/otp_static/staticdevice/{device.pk}/change/").content.decode()
    )
    totp_device = TOTPDevice.objects.get(user=viewer)
    page = client.get(f"/admin/otp_totp/totpdevice/{totp_device.pk}/change/").content.decode()
    assert totp_device.key not in page
    assert client.get(f"/admin/otp_totp/totpdevice/{totp_device.pk}/config/").status_code == 403


# --- the shipped groups --------------------------------------------------------------------------------------------
def _perms(group: Group) -> set[str]:
    return {
        f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")
    }


def shipped_groups() -> tuple[Group, Group]:
    """The groups as the migration makes them: run again here, since a test that flushes the database (the
    threaded ones) removes what migrations wrote."""
    groups_migration.create_staff_groups(apps, SimpleNamespace(connection=connection))
    histories_migration.add_history_views(apps, SimpleNamespace(connection=connection))
    transfers_migration.add_transfer_permissions(apps, SimpleNamespace(connection=connection))
    disputes_migration.add_dispute_views(apps, SimpleNamespace(connection=connection))
    templates_migration.add_platform_template_permissions(apps, SimpleNamespace(connection=connection))
    mail_once_migration.add_mail_once_view(apps, SimpleNamespace(connection=connection))
    return Group.objects.get(name="Support (read only)"), Group.objects.get(name="Operations")


def test_support_sees_every_record_the_admin_shows_and_changes_nothing():
    support, _ = shipped_groups()
    shown = set()
    for model, model_admin in admin.site._registry.items():
        shown.add(model)
        shown.update(inline.model for inline in model_admin.inlines)
    expected = {
        f"{m._meta.app_label}.view_{m._meta.model_name}"
        for m in shown
        if m._meta.label_lower not in STAFF_ACCOUNT_MODELS
    }
    assert _perms(support) == expected


def test_operations_may_take_every_named_action_and_deletes_nothing_but_portal_access():
    support, operations = shipped_groups()
    named = {
        f"{m._meta.app_label}.{codename}"
        for m in apps.get_models()
        for codename, _ in m._meta.permissions
        if m._meta.app_label in {"partners", "catalog", "orders", "transfers", "payouts"}
    }
    assert named == {
        "partners.rotate_credentials",
        "partners.suspend_partner",
        "catalog.cancel_event",
        "catalog.adjust_row_quantity",
        "orders.cancel_order",
        "orders.mark_received",
        "payouts.retry_refund",
        "payouts.retry_payout",
        "transfers.resolve_transfer_case",
        "transfers.ask_seller",
        "transfers.mark_accepted_on_platform",
        "transfers.mark_recalled",
        "transfers.manage_platform_templates",
        "transfers.approve_platform_registry",
    }
    perms = _perms(operations)
    assert _perms(support) | named <= perms
    assert {p for p in perms if ".delete_" in p} == {"partners.delete_portaluser"}
    assert "webhooks.change_webhookendpoint" in perms  # "Enable again"; the endpoint's fields stay read-only
    assert not {p for p in perms if p.startswith(("auth.", "otp_"))}


def test_the_groups_migration_run_twice_adds_nothing_and_keeps_what_staff_added():
    support, operations = shipped_groups()
    extra = Permission.objects.get(codename="change_partner")
    support.permissions.add(extra)
    before = (_perms(support), _perms(operations))
    assert shipped_groups() and (_perms(support), _perms(operations)) == before
    assert Group.objects.filter(name__in=["Support (read only)", "Operations"]).count() == 2


# --- an Operations member -------------------------------------------------------------------------------------------
@pytest.fixture
def operations_client(world, settings) -> Client:
    _, operations = shipped_groups()
    return signed_in_with_two_factor(staff_user("opsy", groups=[operations]), settings)


def test_operations_sees_the_buttons_a_viewer_does_not(world, operations_client):
    partner_page = operations_client.get(
        f"/admin/partners/partner/{world.partner.pk}/change/"
    ).content.decode()
    for name in ("rotate", "rotate_test", "suspend", "invite_portal_user"):
        assert reverse(f"admin:partners_partner_{name}", args=[world.partner.pk]) in partner_page
    order_page = operations_client.get(f"/admin/orders/order/{world.awaiting.pk}/change/").content.decode()
    assert "Mark tickets received" in order_page and "Cancel order" in order_page
    assert (
        "Retry refund"
        in operations_client.get(f"/admin/orders/order/{world.refund_failed.pk}/change/").content.decode()
    )
    payout = Payout.objects.get(order=world.payout_failed)
    assert (
        "Retry payout" in operations_client.get(f"/admin/payouts/payout/{payout.pk}/change/").content.decode()
    )
    row_page = operations_client.get(f"/admin/catalog/row/{world.row.pk}/change/").content.decode()
    assert reverse("admin:catalog_row_adjust_quantity", args=[world.row.pk]) in row_page
    events = operations_client.get("/admin/catalog/event/").content.decode()
    assert 'value="cancel_events"' in events
    case_page = operations_client.get(
        f"/admin/transfers/transfercase/{world.case.pk}/change/"
    ).content.decode()
    for name in ("mark_received", "ask_seller", "dismiss", "forged"):
        assert reverse(f"admin:transfers_transfercase_{name}", args=[world.case.pk]) in case_page
    assert (
        'value="accept_on_platform"'
        in operations_client.get("/admin/transfers/transfercase/").content.decode()
    )


def test_operations_resolves_a_transfer_case(world, operations_client):
    url = reverse("admin:transfers_transfercase_dismiss", args=[world.case.pk])
    post_confirmed(
        operations_client, url, {"confirmed": "yes", "reason": "a duplicate of the seller's own mail"}
    )
    assert TransferCase.objects.get(pk=world.case.pk).resolution == "dismissed"


def test_operations_rotates_suspends_and_reactivates_partners(world, operations_client):
    partner = world.partner
    live = PartnerCredential.objects.get(partner=partner).secret_digest
    test = PartnerTestCredential.objects.get(partner=partner).secret_digest
    for name in ("rotate", "rotate_test"):
        url = reverse(f"admin:partners_partner_{name}", args=[partner.pk])
        assert operations_client.get(url).status_code == 200  # the confirmation
        shown = post_confirmed(
            operations_client, url, {"confirmed": "yes", "reason": "leaked in a ticket"}, follow=True
        )
        assert shown.status_code == 200 and "sec_" in shown.content.decode()
    assert PartnerCredential.objects.get(partner=partner).secret_digest != live
    assert PartnerTestCredential.objects.get(partner=partner).secret_digest != test

    post_confirmed(
        operations_client,
        reverse("admin:partners_partner_suspend", args=[partner.pk]),
        {"confirmed": "yes", "reason": "fraud"},
    )
    assert Partner.objects.get(pk=partner.pk).status == "suspended"
    post_confirmed(
        operations_client,
        reverse("admin:partners_partner_reactivate", args=[partner.pk]),
        {"confirmed": "yes", "reason": "cleared"},
    )
    assert Partner.objects.get(pk=partner.pk).status == "active"

    changelist = "/admin/partners/partner/"
    selected = {"_selected_action": [world.suspended.pk], "index": "0"}
    post_confirmed(
        operations_client,
        changelist,
        {**selected, "action": "reactivate_action", "confirmed": "yes", "reason": "paid"},
    )
    assert Partner.objects.get(pk=world.suspended.pk).status == "active"
    post_confirmed(
        operations_client,
        changelist,
        {**selected, "action": "suspend_action", "confirmed": "yes", "reason": "x"},
    )
    assert Partner.objects.get(pk=world.suspended.pk).status == "suspended"
    digest = PartnerCredential.objects.get(partner=world.suspended).secret_digest
    post_confirmed(
        operations_client,
        changelist,
        {**selected, "action": "rotate_credentials_action", "confirmed": "yes", "reason": "y"},
    )
    assert PartnerCredential.objects.get(partner=world.suspended).secret_digest != digest


def test_operations_adjusts_a_quantity_and_cancels_an_event(world, operations_client):
    url = reverse("admin:catalog_row_adjust_quantity", args=[world.row.pk])
    before = Row.objects.get(pk=world.row.pk).available_quantity
    post_confirmed(operations_client, url, {"delta": "4", "reason": "recount", "confirmed": "yes"})
    assert Row.objects.get(pk=world.row.pk).available_quantity == before + 4

    event = world.awaiting.event
    post_confirmed(
        operations_client,
        "/admin/catalog/event/",
        {
            "action": "cancel_events",
            "_selected_action": [event.pk],
            "index": "0",
            "confirmed": "yes",
            "reason": "venue closed",
        },
    )
    assert Event.objects.get(pk=event.pk).is_canceled


def test_operations_marks_received_cancels_and_retries_money(world, operations_client):
    awaiting = world.awaiting
    post_confirmed(
        operations_client,
        reverse("admin:orders_order_mark_received", args=[awaiting.pk]),
        {"confirmed": "yes", "reason": "arrived"},
    )
    assert Order.objects.get(pk=awaiting.pk).status == "ticket_received"

    other = make_order(world.partner)
    post_confirmed(
        operations_client,
        reverse("admin:orders_order_cancel", args=[other.pk]),
        {"confirmed": "yes", "reason": "seller gone"},
    )
    assert Order.objects.get(pk=other.pk).status == "canceled"

    post_confirmed(
        operations_client,
        reverse("admin:orders_order_retry_refund", args=[world.refund_failed.pk]),
        {"confirmed": "yes", "reason": "card fixed"},
    )
    assert Charge.objects.get(order=world.refund_failed).refund_status != "failed"
    payout = Payout.objects.get(order=world.payout_failed)
    post_confirmed(
        operations_client,
        reverse("admin:payouts_payout_retry", args=[payout.pk]),
        {"confirmed": "yes", "reason": "account fixed"},
    )
    assert Payout.objects.get(pk=payout.pk).status != "failed"


def test_operations_enables_again_an_endpoint_disabled_for_failing_but_not_one_its_partner_disabled(
    world, operations_client
):
    failed = WebhookEndpoint.objects.get(partner=world.partner)
    mine, _ = endpoint_create(
        partner_pk=world.partner.pk, livemode=True, url="http://127.0.0.1:9/other", event_types=["*"]
    )
    endpoint_disable(endpoint=mine, reason=WebhookEndpoint.DisabledReason.BY_PARTNER, notify=False)
    response = post_confirmed(
        operations_client,
        "/admin/webhooks/webhookendpoint/",
        {
            "action": "enable_endpoints",
            "_selected_action": [failed.pk, mine.pk],
            "index": "0",
            "confirmed": "yes",
            "reason": "partner fixed it",
        },
        follow=True,
    )
    assert "Enabled 1 endpoint(s)." in response.content.decode()
    assert WebhookEndpoint.objects.get(pk=failed.pk).status == "enabled"
    assert WebhookEndpoint.objects.get(pk=mine.pk).status == "disabled"
    assert LogEntry.objects.filter(
        object_id=str(failed.pk), change_message__startswith="Enabled again"
    ).exists()
