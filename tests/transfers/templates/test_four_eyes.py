"""Four eyes on the sender domains and accept-link hosts, through the admin's pages over HTTP: a draft is
compared with what is in force when it is approved and again when it is activated, so a draft made before
another version changed the registry cannot undo that change unapproved, and an approval given against other
hosts than those in force no longer counts. Only the version in force is exported as a file (a file loads as
version 1, with no approval); the registry in force of a shipped platform is its file as it is now."""

import re
import threading

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db import connections
from django.test import Client

from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading import platforms
from orders.transfers.reading.selectors import data_in_force
from orders.transfers.reading.services import versions_seed
from orders.transfers.reading.templates_store import data_dump
from tests.confirming import post_confirmed
from tests.transfers.staff.stagepass import ACCEPT_HOST, PLATFORM

from .conftest import staff

pytestmark = pytest.mark.django_db
V = PlatformTemplateVersion
CONFIRMED = {"confirmed": "yes", "reason": "checked with the platform"}
BASE = "/admin/transfers/platformtemplateversion"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice():
    return signed_in(staff("alice@service.example", "manage_platform_templates"))


@pytest.fixture
def bob():
    return signed_in(staff("bob@service.example", "manage_platform_templates", "approve_platform_registry"))


def in_force() -> V:
    return V.objects.get(platform=PLATFORM, state="active")


def hosts() -> set[str]:
    return set(platforms.registry().get(PLATFORM).accept_link_hosts)


def draft(client: Client, **changes) -> V:
    """A new draft from the version in force with ``changes``, saved on the "New version" page."""
    data = {**in_force().data, **changes}
    response = client.post(
        f"{BASE}/edit/", {"platform": PLATFORM, "yaml": data_dump(data), "reason": "the platform changed"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    return V.objects.filter(platform=PLATFORM).latest("version")


def step(client: Client, version: V, name: str) -> int:
    return post_confirmed(client, f"{BASE}/{version.pk}/{name}/", CONFIRMED).status_code


def page(client: Client, version: V) -> str:
    return client.get(f"{BASE}/{version.pk}/change/").content.decode()


def approved_and_activated(version: V, alice: Client, bob: Client) -> None:
    assert step(bob, version, "approve") == 302
    assert step(alice, version, "activate") == 302
    version.refresh_from_db()
    assert version.state == "active", version.history.values_list("reason", flat=True)


def test_a_stale_draft_cannot_put_back_a_host_a_later_version_removed(registry_entry, alice, bob):
    v2 = draft(alice, accept_link_hosts=[ACCEPT_HOST, "legacy.example"])
    approved_and_activated(v2, alice, bob)
    assert "legacy.example" in hosts()
    # Made then: what was in force plus a start format — no registry change at the time.
    v3 = draft(alice, start_formats=["%Y-%m-%d %H:%M", "%d/%m/%Y %H:%M"])
    assert v3.registry_change is False
    v4 = draft(alice, accept_link_hosts=[ACCEPT_HOST])
    approved_and_activated(v4, alice, bob)
    assert "legacy.example" not in hosts()

    # v3 now puts legacy.example back: its page says so before any confirmation, and offers no activation.
    shown = page(alice, v3)
    assert "a second staff member (not its author" in shown
    assert f"/{v3.pk}/activate/" not in shown and f"/{v3.pk}/approve/" not in shown
    assert step(alice, v3, "activate") == 302
    v3.refresh_from_db()
    assert v3.state == "draft" and "legacy.example" not in hosts()

    # A second member approves it knowingly; then it may be activated.
    assert f"/{v3.pk}/approve/" in page(bob, v3)
    approved_and_activated(v3, alice, bob)
    assert v3.approved_by == "staff:bob@service.example" and v3.registry_change is True
    assert "legacy.example" in hosts()


def test_an_approval_against_other_hosts_than_those_in_force_no_longer_counts(registry_entry, alice, bob):
    v2 = draft(alice, accept_link_hosts=[ACCEPT_HOST, "links.stagepass.example"])
    assert step(bob, v2, "approve") == 302
    v3 = draft(alice, accept_link_hosts=[ACCEPT_HOST, "go.stagepass.example"])
    approved_and_activated(v3, alice, bob)

    assert f"/{v2.pk}/activate/" not in page(alice, v2)
    assert "approve it again" in page(alice, v2)
    assert step(alice, v2, "activate") == 302
    v2.refresh_from_db()
    assert v2.state == "draft" and "links.stagepass.example" not in hosts()
    assert "go.stagepass.example" in hosts()

    approved_and_activated(v2, alice, bob)  # approved again, against what is in force now
    assert hosts() == {ACCEPT_HOST, "links.stagepass.example"}
    assert v2.history.filter(reason__startswith="Approved").count() == 2


def test_the_author_is_offered_neither_approval_nor_activation_of_an_unapproved_change(registry_entry, bob):
    mine = draft(bob, sender_domains=["mail.stagepass-tickets.com", "stagepass-mailer.net"])
    shown = page(bob, mine)
    assert f"/{mine.pk}/approve/" not in shown and f"/{mine.pk}/activate/" not in shown
    assert "must approve it before activation" in shown
    other = signed_in(staff("carol@service.example", "approve_platform_registry"))
    assert f"/{mine.pk}/approve/" in page(other, mine)


def test_only_the_version_in_force_is_exported(registry_entry, alice, tmp_path):
    drafted = draft(alice, start_formats=["%d/%m/%Y %H:%M"])
    assert f"/{drafted.pk}/export/" not in page(alice, drafted)
    assert alice.get(f"{BASE}/{drafted.pk}/export/").status_code == 404
    with pytest.raises(CommandError, match="only the version in force is exported"):
        call_command("export_platform_template", PLATFORM, "--template-version", str(drafted.version))
    active = in_force()
    assert f"/{active.pk}/export/" in page(alice, active)
    exported = alice.get(f"{BASE}/{active.pk}/export/")
    assert exported.status_code == 200
    assert yaml.safe_load(exported.content)["accept_link_hosts"] == [ACCEPT_HOST]


def test_the_registry_in_force_of_a_shipped_platform_is_its_file_as_it_is_now(settings, tmp_path, alice):
    settings.TRANSFER_PLATFORM_DIRS = (str(tmp_path),)
    shipped = tmp_path / "harbour.yaml"
    entry = {
        "platform": "harbour",
        "sender_domains": ["mail.harbour.example"],
        "accept_link_hosts": ["go.harbour.example"],
        "static_barcodes": False,
        "kinds": {},
    }
    shipped.write_text(yaml.safe_dump(entry))
    versions_seed(platform="harbour")
    entry["sender_domains"].append("news.harbour.example")
    shipped.write_text(yaml.safe_dump(entry))  # a release changed the file after version 1 was recorded
    assert data_in_force("harbour")["sender_domains"] == ["mail.harbour.example", "news.harbour.example"]
    response = alice.post(
        f"{BASE}/edit/", {"platform": "harbour", "yaml": data_dump(entry), "reason": "same hosts as the file"}
    )
    assert response.status_code == 302, re.findall(r"errornote\">([^<]*)", response.content.decode())
    made = V.objects.get(platform="harbour", version=2)
    assert response.status_code == 302 and made.registry_change is False
    assert not re.search(r"must approve it", page(alice, made))


@pytest.mark.django_db(transaction=True)
def test_a_stale_draft_activated_while_the_change_that_outdates_it_commits_is_refused(
    registry_entry, monkeypatch
):
    """Real threads on PostgreSQL: v3 (made when v2 was in force, no registry change then) is activated while
    v4, which removes a host v3 still has, is being activated. v3's activation waits for v4's and finds its
    change unapproved, instead of comparing with v2 and superseding it first."""
    from orders.transfers.reading import services

    alice, bob = "staff:alice@service.example", "staff:bob@service.example"
    v2 = services.version_create(
        platform=PLATFORM,
        data={**in_force().data, "accept_link_hosts": [ACCEPT_HOST, "legacy.example"]},
        actor=alice,
        reason="legacy links",
    )
    services.version_approve(version_pk=v2.pk, actor=bob, reason="checked")
    services.version_activate(version_pk=v2.pk, actor=alice, reason="in force")
    v3 = services.version_create(
        platform=PLATFORM, data={**v2.data, "start_formats": ["%d/%m/%Y %H:%M"]}, actor=alice, reason="dates"
    )
    v4 = services.version_create(
        platform=PLATFORM,
        data={**v2.data, "accept_link_hosts": [ACCEPT_HOST]},
        actor=alice,
        reason="no legacy",
    )
    services.version_approve(version_pk=v4.pk, actor=bob, reason="checked")

    v4_testing, release = threading.Event(), threading.Event()
    trial = services.template_trial

    def slow_trial(*, platform, data):
        if data["accept_link_hosts"] == [ACCEPT_HOST]:  # v4's activation, holding its locks
            v4_testing.set()
            release.wait(10)
        return trial(platform=platform, data=data)

    monkeypatch.setattr(services, "template_trial", slow_trial)
    outcome = {}

    def activate(name: str, version: V) -> None:
        try:
            services.version_activate(version_pk=version.pk, actor=alice, reason=name)
            outcome[name] = "active"
        except Exception as exc:
            outcome[name] = f"{type(exc).__name__}: {exc}"
        finally:
            connections.close_all()

    first = threading.Thread(target=activate, args=("v4", v4))
    first.start()
    assert v4_testing.wait(10)
    second = threading.Thread(target=activate, args=("v3", v3))
    second.start()
    second.join(1.5)  # without the platform's lock v3 is in force by now
    release.set()
    first.join(20)
    second.join(20)
    assert outcome["v4"] == "active", outcome
    assert outcome["v3"].startswith("Refused: It changes the sender domains or accept-link hosts"), outcome
    assert list(V.objects.filter(platform=PLATFORM, state="active").values_list("version", flat=True)) == [
        v4.version
    ]
    assert "legacy.example" not in hosts()
