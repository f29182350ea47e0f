"""The small things a new staff member stumbles on, over HTTP: "A new platform" opens a commented skeleton
with every key of a template file; "no change" in the versions list is words, not a red cross; every page of
the platform templates names them the same in its breadcrumbs; a case the service closed by reading its mail again says so instead of "Dismissed"."""

import html
import re

import pytest
import yaml

from orders.models import Order
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from orders.transfers.reading import platforms
from orders.transfers.reading.services import version_create
from orders.transfers.reading.templates_store import KEY_ORDER

from .conftest import staff, template_activated
from .test_four_eyes import BASE, signed_in

pytestmark = pytest.mark.django_db
V = PlatformTemplateVersion


@pytest.fixture
def alice():
    return signed_in(staff("alice@service.example", "manage_platform_templates"))


def test_a_new_platform_starts_from_a_commented_skeleton_with_every_key(alice):
    content = alice.get(f"{BASE}/edit/").content.decode()
    text = html.unescape(re.search(r'<textarea name="yaml"[^>]*>(.*?)</textarea>', content, re.S).group(1))
    data = yaml.safe_load(text)
    assert tuple(data) == KEY_ORDER
    for key in data:
        assert re.search(rf"^# .*\n(#.*\n)*{key}:", text, re.M), key  # each key has its comment
    assert "Make a template from this mail" in text
    # The skeleton is a valid template once its name is the platform's.
    platforms.platform_validate({**data, "platform": "harbour"}, source="test", name="harbour")


def test_the_versions_list_says_no_change_in_words_and_names_the_pages_alike(registry_entry, alice):
    same = version_create(
        platform="stagepass",
        data=V.objects.get(state="active").data,
        actor="staff:alice@service.example",
        reason="x",
    )
    listing = alice.get(f"{BASE}/?platform=stagepass").content.decode()
    assert "icon-no.svg" not in listing and "icon-yes.svg" not in listing
    assert re.search(
        rf'<tr>.*?stagepass v{same.version}.*?<span class="quiet">no change</span>', listing, re.S
    )
    assert "changed, approved by staff:bob@service.example" in listing
    crumbs = [
        alice.get(url).content.decode()
        for url in (f"{BASE}/{same.pk}/change/", f"{BASE}/{same.pk}/test/", f"{BASE}/edit/?from={same.pk}")
    ]
    for content in crumbs:
        trail = re.search(r'<div class="breadcrumbs">(.*?)</div>', content, re.S).group(1)
        assert "Platform templates" in trail and "Platform template versions" not in trail


def test_a_case_the_service_closed_says_what_the_mail_did(shop, alice):
    order = shop.order()
    case = shop.unparsed(order)
    made = template_activated(shop, order)
    assert Order.objects.get(pk=order.pk).status == "ticket_received"
    case = TransferCase.objects.get(pk=case.pk)
    assert case.resolution == "dismissed"  # the stored resolution is the contract's
    content = alice.get(f"/admin/transfers/transfercase/{case.pk}/change/").content.decode()
    assert (
        f"Closed by the service: the mail was read again with the stagepass template version {made.version} "
        "and the transfer matched the order (the order is ticket received)"
    ) in content
    assert ">Dismissed<" not in content
    listing = alice.get("/admin/transfers/transfercase/?state=all").content.decode()
    assert "Closed by the service" in listing
