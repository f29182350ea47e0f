"""A template made from one mail reads the platform's next mail: the proposals anchor on the platform's labels and
layout (never on the seller's sentence or the order's values), a picked line reads its value whatever separates
it from its label, labels match as words, and the test reads variants of each stored mail with other values and
refuses a template fitted to one order (BleacherBox, ``bleacherbox.py``)."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from orders.models import Order
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from orders.transfers.reading import platforms
from orders.transfers.reading.layout import NO_LABEL, label_pattern, pattern_for_line
from orders.transfers.reading.learn import kind_data, learn, own_values, read_with
from orders.transfers.reading.services import Refused, version_activate, version_create
from orders.transfers.reading.templates_store import data_validate
from orders.transfers.reading.trial import template_trial
from orders.transfers.reading.variants import variants_read

from .bleacherbox import ACCEPT_HOST, EVENT, PLATFORM, VENUE, bleacherbox_mail
from .conftest import staff
from .test_flow import learn_form, signed_in

# The event's start in venue time, a month from now (what the mail writes; nothing here reads the clock else).
STARTS = (timezone.now() + timedelta(days=30)).replace(
    hour=15, minute=40, second=0, microsecond=0, tzinfo=None
)
FITTED_EVENT = r"^Maria[ \t]*Gonzalez[ \t]*sent[ \t]*you[ \t]*2[ \t]*tickets[ \t]*to[ \t]*(?P<value>.+?)\."


def an_order(*, quantity=2, section="114", row="12", event=EVENT) -> SimpleNamespace:
    """What ``learn`` reads of an order (no database needed)."""
    return SimpleNamespace(
        event=SimpleNamespace(name=event, venue=SimpleNamespace(name=VENUE), venue_starts_at=STARTS),
        quantity=quantity,
        section_name=section,
        section_name_display=f"Section {section}",
        row_name=row,
        row_name_display=f"Row {row}",
        general_admission=False,
        transfer_address="t-7kq2@in.service.example",
    )


def reads_of(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr data-field="(\w+)">.*?<span class="reads">([^<]*)</span>', html, re.S))


def learned(order, **mail):
    text = platforms.mail_text(bleacherbox_mail(order, **mail))
    return text, learn(text=text.text, subject=text.subject, order=order, accept_hosts=(ACCEPT_HOST,))


def template_of(proposals: dict[str, str], subject: str) -> dict:
    return {
        "platform": PLATFORM,
        "sender_domains": ["notify.bleacherbox-tickets.com"],
        "accept_link_hosts": [ACCEPT_HOST],
        "static_barcodes": False,
        "start_formats": ["%a, %b %d, %Y %I:%M %p"],
        "kinds": {
            "transfer_offer": kind_data(subject_pattern=subject, patterns=proposals, general_admission=False)
        },
    }


def test_the_proposals_read_the_next_sellers_mail_and_hold_none_of_this_orders_values():
    _, first = learned(an_order())
    patterns = {name: p.pattern for name, p in first.proposals.items()}
    assert all(patterns.values()), {n: p.note for n, p in first.proposals.items()}
    for value in ("Maria", "Gonzalez", "Chiefs", "Raiders", "Arrowhead", "114", "5, 6"):
        assert not any(value in pattern for pattern in [first.subject_pattern, *patterns.values()]), value
    template = data_validate(template_of(patterns, first.subject_pattern), platform=PLATFORM)
    other = an_order(quantity=3, section="221", row="7")
    parsed = platforms.parse_with(
        template, bleacherbox_mail(other, seller="Devon Brooks", seats=["17", "18", "19"])
    )
    assert parsed is not None and not parsed.missing
    assert (
        parsed.event_name,
        parsed.venue_name,
        parsed.section,
        parsed.row,
        parsed.seats,
        parsed.quantity,
    ) == (
        EVENT,
        VENUE,
        "221",
        "7",
        ["17", "18", "19"],
        3,
    )


def test_a_value_found_only_in_the_sellers_sentence_gets_no_pattern_and_asks_for_a_line():
    order = an_order(event="Chiefs vs Raiders")
    mail = platforms.mail_text(bleacherbox_mail(order))
    text = mail.text.replace("EVENT DETAILS\nChiefs vs Raiders\n", "EVENT DETAILS\n")
    proposal = learn(text=text, subject=mail.subject, order=order).proposals["event"]
    assert (proposal.pattern, proposal.note, proposal.line) == ("", NO_LABEL, 5)


@pytest.mark.parametrize(
    ("lines", "number", "field", "reads"),
    [
        (["YOUR TICKETS", "Section     114", "Quantity    2"], 3, "quantity", "2"),
        (["YOUR TICKETS", "Quantity\t2"], 2, "quantity", "2"),
        (["Tickets in this transfer: 2"], 1, "quantity", "2"),
        (["Sec 114 | Row 12 | Seats 5, 6"], 1, "row", "12"),
        (["Sec 114 | Row 12 | Seats 5, 6"], 1, "section", "114"),
        (["Sec 114 | Row 12 | Seats 5, 6"], 1, "seats", "5, 6"),
        (["Section    Row    Seats    Quantity", "114        12     5, 6     2"], 2, "seats", "5, 6"),
        (["Section    Row    Seats    Quantity", "114        12     5, 6     2"], 2, "quantity", "2"),
        (["Section\tRow\tSeats", "114\t12\t5, 6"], 2, "row", "12"),
        (["EVENT DETAILS", "Chiefs vs Raiders"], 2, "event", "Chiefs vs Raiders"),
    ],
)
def test_a_picked_line_reads_its_value_whatever_separates_it_from_its_label(lines, number, field, reads):
    pattern, note = pattern_for_line(lines, number, field, avoid=("Chiefs vs Raiders", "114", "12"))
    assert (read_with(pattern, "\n".join(lines)), note) == ((reads, ""), "")


def test_a_label_mid_line_matches_as_a_word_not_inside_the_venues_name():
    lines = ["GEHA Field at Arrowhead Stadium, Kansas City, MO", "Sec 114 | Row 12 | Seats 5, 6"]
    pattern, _ = pattern_for_line(lines, 2, "row", avoid=own_values(an_order()))
    assert read_with(pattern, "\n".join(lines)) == ("12", "")


def test_the_variants_catch_a_template_fitted_to_one_mail():
    mail, first = learned(an_order())
    patterns = {name: p.pattern for name, p in first.proposals.items()}
    good = data_validate(template_of(patterns, first.subject_pattern), platform=PLATFORM)
    fitted = data_validate(
        template_of({**patterns, "event": FITTED_EVENT}, first.subject_pattern), platform=PLATFORM
    )
    assert platforms.parse_text(fitted, mail).event_name == EVENT  # it reads the mail it was made from
    assert [v.wrong for v in variants_read(good, mail, platforms.parse_text(good, mail))] == [[], []]
    variants = variants_read(fitted, mail, platforms.parse_text(fitted, mail))
    assert [v.wrong for v in variants] == [["event"], ["event"]]
    assert "seller Maria Gonzalez → Devon Brooks" in variants[0].changes
    assert "2 → 3 tickets" in variants[1].changes and variants[1].reads["seats"] == "22, 23, 24"


@pytest.mark.django_db
def test_activation_is_refused_for_a_template_fitted_to_the_one_stored_mail(bleacherbox):
    order = bleacherbox.order(section="114", row="12", section__event__venue__name=VENUE, event=EVENT)
    case = bleacherbox.unparsed(order)
    base = PlatformTemplateVersion.objects.get(platform=PLATFORM, state="active").data
    text = platforms.mail_text(bleacherbox_mail(order))
    proposals = learn(text=text.text, subject=text.subject, order=order, accept_hosts=(ACCEPT_HOST,))
    patterns = {name: p.pattern for name, p in proposals.proposals.items()}
    fitted = {
        **template_of({**patterns, "event": FITTED_EVENT}, proposals.subject_pattern),
        "sender_domains": base["sender_domains"],
    }
    made = version_create(
        platform=PLATFORM, data=fitted, actor="staff:alice@service.example", reason="fitted"
    )
    trial = template_trial(platform=PLATFORM, data=made.data)
    assert [row.would for row in trial.rows] == [
        "move"
    ] and not trial.disagreeing  # the stored mail alone passes
    assert trial.counts["variants_wrong"] == 2 and not trial.passes
    with pytest.raises(Refused, match="reads a variant of 1 stored message"):
        version_activate(version_pk=made.pk, actor="staff:bob@service.example", reason="in force")
    made.refresh_from_db()
    assert made.state == "draft" and Order.objects.get(pk=order.pk).status == "awaiting_transfer"
    assert TransferCase.objects.get(pk=case.pk).state == "open"


@pytest.mark.parametrize(
    ("quantity", "seats", "section", "row"),
    [(1, ["1"], "114", "12"), (2, ["5", "6"], "5", "A"), (2, ["12", "14"], "12", "12")],
)
def test_a_template_made_as_proposed_reads_its_variants_when_the_orders_values_repeat(
    quantity, seats, section, row
):
    order = an_order(quantity=quantity, section=section, row=row)
    mail, first = learned(order, seats=seats)
    patterns = {name: p.pattern for name, p in first.proposals.items()}
    template = data_validate(template_of(patterns, first.subject_pattern), platform=PLATFORM)
    parsed = platforms.parse_text(template, mail)
    assert not parsed.missing and parsed.seats == seats
    assert [v.wrong for v in variants_read(template, mail, parsed)] == [[], []]


@pytest.mark.django_db
def test_staff_pick_lines_without_a_colon_on_the_learn_page_and_no_pattern_is_typed(bleacherbox):
    case = bleacherbox.unparsed(
        bleacherbox.order(section="114", row="12", section__event__venue__name=VENUE, event=EVENT)
    )
    client = signed_in(staff("alice@service.example", "manage_platform_templates"))
    url = f"/admin/transfers/platformtemplateversion/learn/{case.pk}/"
    html = client.get(url).content.decode()
    lines = dict(re.findall(r'<li id="line-(\d+)">([^<]*)</li>', html))
    assert (lines["5"][:24], lines["16"], lines["18"]) == (
        "Maria Gonzalez sent you ",
        "Quantity    2",
        "Sec 114 | Row 12 | Seats 5, 6",
    )
    picked = {"line_quantity": "5", "line_row": "18", "line_section": "18", "line_event": "8"}
    html = client.post(url, learn_form(html, do="preview", **picked)).content.decode()
    assert reads_of(html) | {"accept_link": ""} == {
        "event": EVENT,
        "venue": VENUE,
        "start": reads_of(html)["start"],
        "section": "114",
        "row": "12",
        "seats": "5, 6",
        "quantity": "—",  # the seller's sentence: no label to anchor on
        "accept_link": "",
    }
    assert "pick the line where the platform labels it" in html
    html = client.post(url, learn_form(html, do="preview", line_quantity="16")).content.decode()
    assert reads_of(html)["quantity"] == "2"
    assert PlatformTemplateVersion.objects.filter(platform=PLATFORM).count() == 1  # previews save nothing


SENTENCE = "Maria Gonzalez sent you 2 tickets to Chiefs vs Raiders. Accept them before the event to add them to your "


@pytest.mark.parametrize(
    "opening",
    [
        "Tickets from Maria Gonzalez\nChiefs vs Raiders",  # the seller named after "from"
        "From maria.gonzalez@example.com: Chiefs vs Raiders",  # the seller's address as a label
        "A gift for you!\nChiefs vs Raiders",  # a sentence above the value
    ],
)
def test_no_proposal_anchors_on_the_sellers_name_address_or_a_sentence(opening):
    order = an_order()
    mail = platforms.mail_text(bleacherbox_mail(order))
    text = mail.text.replace(SENTENCE + "BleacherBox wallet.", opening)
    proposal = learn(text=text, subject=mail.subject, order=order).proposals["event"]
    assert proposal.pattern.startswith("^EVENT[ \\t]*DETAILS"), proposal.pattern
    assert read_with(proposal.pattern, text) == (EVENT, "")


def test_a_value_repeated_without_end_is_tried_a_bounded_number_of_times(monkeypatch):
    from orders.transfers.reading import learn as learning

    order = an_order()
    mail = platforms.mail_text(bleacherbox_mail(order))
    text = mail.text.replace(SENTENCE, (SENTENCE[:56] + "\n") * 500 + SENTENCE)
    tried = []

    def tracked(lines, index, *args, **kwargs):
        tried.append(index)
        return label_pattern(lines, index, *args, **kwargs)

    monkeypatch.setattr(learning, "label_pattern", tracked)
    proposal = learn(text=text, subject=mail.subject, order=order).proposals["event"]
    assert (proposal.pattern, proposal.note) == ("", NO_LABEL)  # the labelled place is past the bound
    lines = text.split("\n")
    assert len([i for i in tried if "Chiefs" in lines[i]]) == learning.MAX_TRIES


def test_a_variant_replaces_a_value_the_mail_writes_with_more_spaces_than_the_version_reads():
    mail, first = learned(an_order())
    template = data_validate(
        template_of({name: p.pattern for name, p in first.proposals.items()}, first.subject_pattern),
        platform=PLATFORM,
    )
    spaced = platforms.MailText(
        mail.subject, mail.from_addresses, mail.text.replace("Chiefs vs", "Chiefs    vs")
    )
    parsed = platforms.parse_text(template, spaced)
    assert parsed.event_name == EVENT
    assert [v.wrong for v in variants_read(template, spaced, parsed)] == [[], []]


def test_a_table_wider_than_its_bound_is_read_by_no_header():
    wide = ["A    B    C    D    E    F    G    H    Seats", "1    2    3    4    5    6    7    8    5, 6"]
    assert pattern_for_line(wide, 2, "seats")[0] == ""
    narrow = [line.split("    ", 1)[1] for line in wide]  # 8 columns
    assert read_with(pattern_for_line(narrow, 2, "seats")[0], "\n".join(narrow)) == ("5, 6", "")


@pytest.mark.django_db
def test_the_learn_page_tries_a_bounded_number_of_places_of_a_mail_that_repeats_a_value(bleacherbox):
    order = bleacherbox.order(section="114", row="12", section__event__venue__name=VENUE, event=EVENT)
    case = bleacherbox.unparsed(order, repeats=1500)  # about 85 000 characters, within what is read of a mail
    client = signed_in(staff("alice@service.example", "manage_platform_templates"))
    started = time.monotonic()
    html = client.get(f"/admin/transfers/platformtemplateversion/learn/{case.pk}/").content.decode()
    assert time.monotonic() - started < 20
    assert reads_of(html)["event"] == "—"  # the labelled place is past the bound: staff pick it
    assert "pick the line where the platform labels it" in html
    assert reads_of(html)["quantity"] == "2"  # a labelled place is tried first


@pytest.mark.parametrize(
    ("line", "field", "reads", "next_mail"),
    [
        ("Row 12 Seat 5, 6", "row", "12", ("Row 7 Seat 17, 18", "7")),
        ("Section 114 Row 12 Seats 5, 6", "row", "12", ("Section 221 Row 7 Seats 17, 18", "7")),
        ("Section 114 Row 12 Seats 5, 6", "section", "114", ("Section 221 Row 7 Seats 17, 18", "221")),
        ("Sec 114 Row 12 Seats 5, 6", "seats", "5, 6", ("Sec 221 Row 7 Seats 17, 18", "17, 18")),
    ],
)
def test_a_value_ended_by_the_next_label_or_the_venue_reads_the_next_mail(line, field, reads, next_mail):
    avoid = (*own_values(an_order()), "GEHA Field")
    pattern, note = pattern_for_line([line], 1, field, avoid=avoid)
    assert read_with(pattern, line) == (reads, "") and note == ""
    assert read_with(pattern, next_mail[0]) == (next_mail[1], "")


def test_a_value_followed_by_the_orders_values_ends_at_the_platforms_words_before_them():
    line = "Event: Chiefs vs Raiders at GEHA Field at Arrowhead Stadium"
    start = line.index("Chiefs")
    avoid = own_values(an_order())
    pattern = label_pattern([line], 0, start, start + len(EVENT), avoid=avoid)
    assert "GEHA" not in pattern and read_with(pattern, line) == (EVENT, "")
    assert read_with(pattern, "Event: Harbour Lights Gala at Union Hall") == ("Harbour Lights Gala", "")
    ended_by_the_seller = "Event: Chiefs vs Raiders Maria Gonzalez"
    assert label_pattern([ended_by_the_seller], 0, start, start + len(EVENT), avoid=("Maria Gonzalez",)) == ""
