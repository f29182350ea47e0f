"""From an unparsed StagePass mail to a template in force, through the admin's views (a signed-in staff
client): the proposals read the order's own values from the mail, the test is read-only and refuses the
activation while one stored message would be received against staff's outcome, the registry change needs a
second staff member, and the activation processes the open unparsed cases again — the order received once,
the case recording the version that decided it."""

import re
import time

import pytest
from django.apps import apps
from django.contrib.admin.models import LogEntry
from django.test import Client

from orders.models import Order
from orders.transfers.decision.state import case_move
from orders.transfers.models import InboundMessage, PlatformTemplateVersion, TransferCase
from orders.transfers.pipeline.reprocess import case_reprocess
from orders.transfers.reading import platforms
from orders.transfers.reading.services import Refused, version_activate, version_approve, version_create
from orders.transfers.reading.templates_store import data_dump
from orders.transfers.tasks import platform_cases_reprocess_due
from tests.confirming import post_confirmed

from .conftest import staff, stagepass_template

pytestmark = pytest.mark.django_db
V = PlatformTemplateVersion


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def snapshot() -> dict:
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.app_label in {"orders", "transfers"}
    }


def proposals(html: str) -> dict[str, str]:
    """Field → the pattern the learn page proposes."""
    return dict(re.findall(r'<textarea name="pattern_(\w+)"[^>]*>([^<]*)</textarea>', html))


def learn_form(html: str, **changes) -> dict:
    """The learn page's form as the browser would post it (each field's line and pattern)."""
    import html as htmllib

    data = {"kind": "transfer_offer"}
    data["subject_pattern"] = htmllib.unescape(
        re.search(r'name="subject_pattern"[^>]*>([^<]*)</textarea>', html).group(1)
    )
    for name, pattern in proposals(html).items():
        data[f"pattern_{name}"] = htmllib.unescape(pattern)
        picked = re.search(rf'name="picked_{name}" value="([^"]*)"', html).group(1)
        data[f"picked_{name}"] = data[f"line_{name}"] = picked
    data.update(changes)
    return data


@pytest.fixture
def manager():
    return staff("alice@service.example", "manage_platform_templates")


def test_the_mail_of_an_unparsed_case_is_proposed_as_a_template_from_the_orders_values(shop, manager):
    order = shop.order()
    case = shop.unparsed(order)
    assert "No template for the platform 'stagepass'" in case.summary
    page = signed_in(manager).get(f"/admin/transfers/transfercase/{case.pk}/change/").content.decode()
    assert f"/admin/transfers/platformtemplateversion/learn/{case.pk}/" in page

    html = (
        signed_in(manager).get(f"/admin/transfers/platformtemplateversion/learn/{case.pk}/").content.decode()
    )
    assert '<li id="line-8">Skyline Festival</li>' in html  # the mail as numbered lines
    venue_start = f"{order.event.venue_starts_at:%Y-%m-%d %H:%M} (venue time, {order.event.timezone})"
    assert venue_start in html  # the order's start as the venue's clock gives it, not UTC
    reads = dict(re.findall(r'<tr data-field="(\w+)">.*?<span class="reads">([^<]*)</span>', html, re.S))
    starts = order.event.venue_starts_at
    assert reads == {
        "event": "Skyline Festival",
        "venue": order.event.venue.name,
        "start": f"{starts:%a, %b} {starts.day}, {starts:%Y} {int(starts.strftime('%I'))}:{starts:%M %p}",
        "section": "101",
        "row": "A",
        "seats": "1, 2",
        "quantity": "2",
        "accept_link": reads["accept_link"],
    }
    assert reads["accept_link"].startswith("https://accept.stagepass-tickets.com/claim/")
    # Label-anchored: nothing of this order (its event, the seller's name) is in a pattern but the labels.
    assert all("Skyline" not in p and "Jordan" not in p for p in proposals(html).values())


def test_staff_pick_another_line_and_the_pattern_is_made_from_it(shop, manager):
    case = shop.unparsed(shop.order())
    client = signed_in(manager)
    url = f"/admin/transfers/platformtemplateversion/learn/{case.pk}/"
    form = learn_form(client.get(url).content.decode(), line_venue="8", do="preview")
    html = client.post(url, form).content.decode()
    venue = re.search(r'<tr data-field="venue">.*?<span class="reads">([^<]*)</span>', html, re.S).group(1)
    assert venue == "Skyline Festival"  # line 8 read for the venue now
    assert V.objects.filter(platform="stagepass").count() == 1  # a preview saves nothing


def test_a_pathological_pattern_is_stopped_by_its_time_limit(shop, manager):
    case = shop.unparsed(shop.order())
    client = signed_in(manager)
    url = f"/admin/transfers/platformtemplateversion/learn/{case.pk}/"
    # Catastrophic backtracking: two alternatives for every character of the mail's opening sentence.
    evil = r"^(?P<value>([\w ]|[\w ])+)\.$"
    form = learn_form(client.get(url).content.decode(), pattern_event=evil, line_event="", picked_event="")
    html = client.post(url, {**form, "do": "preview"}).content.decode()
    assert f"stopped after {platforms.PATTERN_SECONDS} s" in html
    assert client.post(url, {**form, "do": "save", "reason": "evil"}).status_code == 302
    draft = V.objects.get(platform="stagepass", state="draft")
    assert draft.data["kinds"]["transfer_offer"]["fields"]["event"] == evil
    # In force, it reads nothing in time: the mail stays unparsed, and so does the next one.
    started = time.monotonic()
    with shop.capture(execute=True):
        post_confirmed(
            client,
            f"/admin/transfers/platformtemplateversion/{draft.pk}/activate/",
            {"confirmed": "yes", "reason": "x"},
        )
    assert time.monotonic() - started < 20
    case.refresh_from_db()
    assert case.state == "open" and case.details["reprocessed"][-1]["result"] == "unparsed"
    order = shop.order()
    message = shop.mail(order)
    assert (
        message.outcome == "case" and "Required fields missing: event" in message.verdicts["decision"]["why"]
    )
    assert Order.objects.get(pk=order.pk).status == "awaiting_transfer"


def test_the_test_is_read_only_and_refuses_activation_for_one_disagreeing_message(shop, manager):
    learned_order, dismissed_order = shop.order(), shop.order()
    # An earlier mail: StagePass's cancel notice for another order, which staff dismissed (the seller canceled).
    canceled = shop.unparsed(dismissed_order, canceled=True)
    case_move(
        case=canceled,
        to="resolved",
        actor="staff:carol@service.example",
        reason="Seller canceled",
        resolution="dismissed",
    )
    case = shop.unparsed(learned_order)
    client = signed_in(manager)
    url = f"/admin/transfers/platformtemplateversion/learn/{case.pk}/"
    response = client.post(
        url, learn_form(client.get(url).content.decode(), do="save", reason="StagePass offers")
    )
    draft = V.objects.get(platform="stagepass", state="draft")
    assert (
        response.status_code == 302
        and response["Location"] == f"/admin/transfers/platformtemplateversion/{draft.pk}/test/"
    )
    assert not draft.registry_change and draft.learned_from == case

    before = snapshot()
    trial = client.get(response["Location"]).content.decode()
    assert snapshot() == before  # read-only
    assert re.search(rf'data-message="{canceled.message_id}" data-would="move"', trial)
    assert re.search(rf'data-message="{case.message_id}" data-would="move"', trial)
    assert "1 would be received automatically against a different staff outcome" in trial
    assert "cannot be activated" in trial

    confirmed = {"confirmed": "yes", "reason": "try it"}
    response = client.post(
        f"/admin/transfers/platformtemplateversion/{draft.pk}/activate/", confirmed, follow=True
    )
    assert "against a different staff outcome" in response.content.decode()
    draft.refresh_from_db()
    assert draft.state == "draft"
    assert Order.objects.get(pk=learned_order.pk).status == "awaiting_transfer"

    # The fix: the subject of an offer ends with the event, never "— canceled".
    fixed = {**draft.data, "kinds": {"transfer_offer": {**draft.data["kinds"]["transfer_offer"]}}}
    fixed["kinds"]["transfer_offer"]["subject"] = r"^Ticket transfer: \d+ tickets? for [^—]+$"
    response = client.post(
        f"/admin/transfers/platformtemplateversion/edit/?from={draft.pk}",
        {
            "from": draft.pk,
            "platform": "stagepass",
            "yaml": data_dump(fixed),
            "reason": "Not the cancel notice",
        },
    )
    second = V.objects.get(platform="stagepass", state="draft", version=draft.version + 1)
    trial = client.get(f"/admin/transfers/platformtemplateversion/{second.pk}/test/").content.decode()
    assert "0 would be received automatically against a different staff outcome" in trial
    assert re.search(rf'data-message="{canceled.message_id}" data-would="unparsed"', trial)

    with shop.capture(execute=True):
        response = post_confirmed(
            client, f"/admin/transfers/platformtemplateversion/{second.pk}/activate/", confirmed
        )
    assert response.status_code == 302
    second.refresh_from_db()
    assert second.state == "active" and second.activated_by == "staff:alice@service.example"
    order = Order.objects.get(pk=learned_order.pk)
    assert (order.status, order.transfer.state, order.transfer.source) == (
        "ticket_received",
        "detected",
        "email",
    )
    case.refresh_from_db()
    assert case.state == "resolved" and case.details["decided_by"] == {
        "platform": "stagepass",
        "template_version": second.version,
        "outcome": "matched",
    }
    message = InboundMessage.objects.get(pk=case.message_id)
    assert message.verdicts["parse"]["template_version"] == second.version and message.authentic is True
    # Reloading the activation's POST, and the re-processing delivered again, change nothing.
    assert (
        post_confirmed(
            client, f"/admin/transfers/platformtemplateversion/{second.pk}/activate/", confirmed
        ).status_code
        == 302
    )
    assert case_reprocess(case_pk=case.pk) == "skipped"
    assert order.status_history.filter(to_status="ticket_received").count() == 1
    assert V.objects.filter(platform="stagepass", state="active").get() == second
    assert (
        LogEntry.objects.filter(object_id=str(second.pk), change_message__startswith="Activate").count() == 1
    )
    assert Order.objects.get(pk=dismissed_order.pk).status == "awaiting_transfer"


def test_a_registry_change_needs_a_second_staff_member(shop, manager):
    in_force = V.objects.get(platform="stagepass", state="active")
    changed = {**in_force.data, "sender_domains": ["mail.stagepass-tickets.com", "stagepass-mailer.net"]}
    author = signed_in(manager)
    response = author.post(
        "/admin/transfers/platformtemplateversion/edit/",
        {"platform": "stagepass", "yaml": data_dump(changed), "reason": "their new mailer"},
    )
    draft = V.objects.get(platform="stagepass", state="draft")
    assert response["Location"] == f"/admin/transfers/platformtemplateversion/{draft.pk}/change/"
    assert draft.registry_change is True
    page = author.get(response["Location"]).content.decode()
    assert "a second staff member must approve it" in page
    assert f"/{draft.pk}/approve/" not in page  # the author has no approve button (nor the permission)

    confirmed = {"confirmed": "yes", "reason": "go"}
    post_confirmed(author, f"/admin/transfers/platformtemplateversion/{draft.pk}/activate/", confirmed)
    draft.refresh_from_db()
    assert draft.state == "draft"
    assert (
        post_confirmed(
            author, f"/admin/transfers/platformtemplateversion/{draft.pk}/approve/", confirmed
        ).status_code
        == 403
    )
    with pytest.raises(Refused, match="its author cannot approve"):
        version_approve(version_pk=draft.pk, actor="staff:alice@service.example", reason="me")
    assert platforms.platform_for_domain("stagepass-mailer.net") is None

    approver = signed_in(staff("bob@service.example", "approve_platform_registry"))
    assert (
        f"/{draft.pk}/approve/"
        in approver.get(f"/admin/transfers/platformtemplateversion/{draft.pk}/change/").content.decode()
    )
    assert (
        post_confirmed(
            approver, f"/admin/transfers/platformtemplateversion/{draft.pk}/approve/", confirmed
        ).status_code
        == 302
    )
    assert (
        post_confirmed(
            approver, f"/admin/transfers/platformtemplateversion/{draft.pk}/approve/", confirmed
        ).status_code
        == 302
    )
    draft.refresh_from_db()
    assert draft.approved_by == "staff:bob@service.example"
    assert (
        draft.history.filter(reason__startswith="Approved").count() == 1
    )  # the reload approved nothing again
    assert (
        post_confirmed(
            approver, f"/admin/transfers/platformtemplateversion/{draft.pk}/activate/", confirmed
        ).status_code
        == 403
    )
    post_confirmed(author, f"/admin/transfers/platformtemplateversion/{draft.pk}/activate/", confirmed)
    draft.refresh_from_db()
    assert draft.state == "active"
    assert platforms.platform_for_domain("stagepass-mailer.net") == "stagepass"
    logged = LogEntry.objects.filter(object_id=str(draft.pk)).values_list("change_message", flat=True)
    assert {m.split(":")[0] for m in logged} == {"New version", "Approve registry change", "Activate"}


def test_a_version_that_does_not_validate_is_refused_with_the_start_ups_message(shop, manager):
    response = signed_in(manager).post(
        "/admin/transfers/platformtemplateversion/edit/",
        {"platform": "stagepass", "yaml": "platform: stagepass\nstatic_barcodes: maybe\n", "reason": "x"},
    )
    assert "Platform template stagepass (version): &#x27;static_barcodes&#x27; must be true or false" in (
        response.content.decode()
    )
    assert not V.objects.filter(state="draft").exists()


def test_activating_another_version_supersedes_the_one_in_force(shop):
    base = V.objects.get(platform="stagepass", state="active").data
    a = version_create(platform="stagepass", data=base, actor="staff:alice@service.example", reason="a")
    b = version_create(platform="stagepass", data=base, actor="staff:alice@service.example", reason="b")
    version_activate(version_pk=a.pk, actor="staff:alice@service.example", reason="a")
    version_activate(version_pk=b.pk, actor="staff:alice@service.example", reason="b")
    assert list(V.objects.filter(platform="stagepass", state="active").values_list("version", flat=True)) == [
        b.version
    ]
    with pytest.raises(Refused):
        version_activate(version_pk=a.pk, actor="staff:alice@service.example", reason="again")
    assert TransferCase.objects.count() == 0


def test_the_sweep_processes_the_cases_an_activation_message_never_reached(shop):
    order = shop.order()
    case = shop.unparsed(order)
    made = version_create(
        platform="stagepass",
        data=stagepass_template(order),
        actor="staff:alice@service.example",
        reason="offers",
    )
    # The activation commits, but its task message is lost (the on-commit callbacks never run).
    version_activate(version_pk=made.pk, actor="staff:alice@service.example", reason="in force")
    assert Order.objects.get(pk=order.pk).status == "awaiting_transfer"
    with shop.capture(execute=True):
        assert platform_cases_reprocess_due.delay().get() == 1
    assert Order.objects.get(pk=order.pk).status == "ticket_received"
    case.refresh_from_db()
    assert case.details["decided_by"]["template_version"] == made.version
    assert platform_cases_reprocess_due.delay().get() == 0  # once


def test_a_pattern_or_a_template_too_long_is_refused(shop, manager):
    base = V.objects.get(platform="stagepass", state="active").data
    long_pattern = {
        **base,
        "kinds": {"transfer_offer": {"subject": "^x" + "y" * 1000, "fields": {"event": "(?P<value>.+)"}}},
    }
    client = signed_in(manager)
    response = client.post(
        "/admin/transfers/platformtemplateversion/edit/",
        {"platform": "stagepass", "yaml": data_dump(long_pattern), "reason": "too long"},
    )
    assert "transfer_offer.subject is longer than 1000 characters" in response.content.decode()
    response = client.post(
        "/admin/transfers/platformtemplateversion/edit/",
        {"platform": "stagepass", "yaml": "# " + "x" * 70_000, "reason": "too long"},
    )
    assert "longer than 64 000 characters" in response.content.decode()
    assert not V.objects.filter(state="draft").exists()
