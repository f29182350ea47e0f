"""Templates as versioned data: the shipped file is version 1, a version exports back to the file format
(``manage.py export_platform_template``) and that file loads as the platform's shipped default in a fresh
database; the admin's per-platform report shows the figures ``make transfer-corpus`` prints."""

import re

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading import platforms
from orders.transfers.reading.services import version_activate, version_create, versions_seed
from orders.transfers.reading.templates_store import data_dump, shipped_data
from orders.transfers.testing import corpus
from tests.transfers.staff.stagepass import PLATFORM, stagepass_mail

from .conftest import stagepass_template

V = PlatformTemplateVersion


@pytest.mark.django_db
def test_the_shipped_file_is_version_1():
    seeded = versions_seed(platform="sandbox")
    assert (seeded.version, seeded.state, seeded.source) == (1, "active", "shipped")
    assert seeded.data == shipped_data("sandbox")
    assert versions_seed(platform="sandbox") is None  # once
    assert platforms.registry().get("sandbox").version == 1
    changed = version_create(platform="sandbox", data=seeded.data, actor="staff:alice", reason="same, again")
    assert (changed.version, changed.registry_change) == (2, False)
    assert [h.to_status for h in seeded.history.all()] == ["active"]


@pytest.mark.django_db(transaction=True)
def test_the_exported_file_loads_as_the_shipped_default_in_a_fresh_database(shop, tmp_path, settings):
    order = shop.order()
    made = version_create(
        platform=PLATFORM,
        data=stagepass_template(order),
        actor="staff:alice@service.example",
        reason="offers",
    )
    version_activate(version_pk=made.pk, actor="staff:alice@service.example", reason="in force")
    raw = stagepass_mail(order)
    in_force = platforms.parse(raw, PLATFORM)
    assert in_force is not None and not in_force.missing and platforms.registry().get(PLATFORM).version == 2

    folder = tmp_path / "platforms"
    folder.mkdir()
    call_command("export_platform_template", PLATFORM, "--output", str(folder / f"{PLATFORM}.yaml"))
    exported = (folder / f"{PLATFORM}.yaml").read_text()
    assert exported == data_dump(made.data) and yaml.safe_load(exported) == made.data

    call_command("flush", interactive=False)  # a fresh database: no version of any platform
    settings.TRANSFER_PLATFORM_DIRS = (str(folder),)
    assert not V.objects.exists()
    shipped = platforms.registry().get(PLATFORM)
    assert shipped.version == 1 and shipped.source == f"{PLATFORM}.yaml"
    assert shipped.sender_domains == ("mail.stagepass-tickets.com",)
    assert platforms.parse(raw, PLATFORM).as_json() == in_force.as_json()
    assert versions_seed(platform=PLATFORM).data == made.data
    settings.TRANSFER_PLATFORM_DIRS = ()


@pytest.mark.django_db
def test_export_refuses_a_platform_it_does_not_know():
    with pytest.raises(Exception, match="No platform 'nowhere'"):
        call_command("export_platform_template", "nowhere")


@pytest.mark.django_db
def test_the_platform_report_shows_what_make_transfer_corpus_prints(shop, capsys):
    case = shop.unparsed(shop.order())
    assert corpus.main([str(corpus.Path("tests/fixtures/transfer_mail"))]) == 0
    printed = capsys.readouterr().out.splitlines()[1:]
    expected = {line.split()[0]: line.split()[1:] for line in printed if line.strip()}
    root = get_user_model().objects.create_superuser("root", "root@service.example", "a long root pass 2026")
    client = Client()
    client.force_login(root)
    html = client.get("/admin/transfers/platformtemplateversion/").content.decode()
    rows = dict(re.findall(r'<tr data-platform="(\w+)">(.*?)</tr>', html, re.S))
    for platform, figures in expected.items():
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", rows[platform])
        assert cells[-4:] == figures, platform
    stagepass = re.findall(r"<td[^>]*>([^<]*)</td>", rows[PLATFORM])
    assert stagepass[0:3] == ["1", "1", "0"]  # received, authentic, auto-received
    assert "unparsed 1" in rows[PLATFORM] and "no captured mail" in rows[PLATFORM]
    in_force = V.objects.get(platform=PLATFORM, state="active")
    assert f'href="/admin/transfers/platformtemplateversion/{in_force.pk}/change/">v1</a>' in rows[PLATFORM]
    assert case.message.platform == PLATFORM
