"""One mechanism for an e-mail sent at most once (``config.core.mail_once``), on its own table: what staff see of
a message whose acceptance was never recorded, and the move of older stamp columns into it."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from config.core import mail_once
from config.core.models import MailOnce
from orders.models import Order
from orders.transfers.models import TransferCase
from payouts.models import Charge
from tests.orders.factories import confirmation_mail_set, make_order

pytestmark = pytest.mark.django_db


def test_the_order_keeps_no_e_mail_stamp():
    assert [f.name for f in Order._meta.get_fields() if "email" in f.name and f.name != "seller_email"] == []


def test_staff_see_a_confirmation_handed_over_but_never_recorded(admin_client, partner):
    order = make_order(partner)
    handed = timezone.now() - timedelta(minutes=10)
    confirmation_mail_set(order, recipient="seller@example.org", claimed_at=handed, handed_over_at=handed)
    assert mail_once.settle_unconfirmed(
        purpose="order_confirmation", keys=[order.pk], handover_lease=timedelta(minutes=4), now=timezone.now()
    )
    page = admin_client.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert "Confirmation e-mail unconfirmed" in page and "seller@example.org" in page
    listing = admin_client.get("/admin/core/mailonce/", {"unconfirmed__exact": "1"}).content.decode()
    assert str(order.pk) in listing and "seller@example.org" in listing


def test_a_stamp_column_moves_in_batches_and_keeps_a_row_already_written():
    at = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE stamped (id bigint PRIMARY KEY, sent timestamptz, sent_to text)")
        cursor.execute(
            "INSERT INTO stamped SELECT i, CASE WHEN i %% 2 = 0 THEN %s::timestamptz END, 'to' || i "
            "FROM generate_series(1, 25) AS i",
            [at],
        )
    MailOnce.objects.create(purpose="tests.stamp", key="4", recipient="kept", sent_at=at)
    mail_once.stamps_copy(
        connection,
        purpose="tests.stamp",
        table="stamped",
        values_sql="r.sent_to, r.sent, NULL, r.sent, false",
        where_sql="r.sent IS NOT NULL",
        batch=7,
    )
    rows = dict(MailOnce.objects.filter(purpose="tests.stamp").values_list("key", "recipient"))
    assert rows == {str(i): ("kept" if i == 4 else f"to{i}") for i in range(2, 26, 2)}
    assert mail_once.sent(purpose="tests.stamp", keys=[2, 3]) == {"2": "to2"}


def test_each_e_mail_in_staffs_list_links_to_the_record_it_is_about(admin_client, partner):
    """The order's confirmation links to the order, the question to a seller to its case, a payment alert to its
    charge; a purpose no app registered shows its bare key."""
    order = make_order(partner)
    charge = Charge.objects.create(
        order=order,
        partner=partner,
        amount=order.total_price,
        platform="sandbox",
        idempotency_key=order.order_id,
    )
    case = TransferCase.objects.create(order=order, kind=TransferCase.Kind.MISMATCH)
    now = timezone.now()
    for purpose, key in [
        ("order_confirmation", order.pk),
        ("transfer_question", case.pk),
        ("charge_declined", charge.pk),
        ("something_else", 424242),
    ]:
        MailOnce.objects.create(purpose=purpose, key=str(key), recipient="x@example.org", sent_at=now)
    listing = admin_client.get("/admin/core/mailonce/").content.decode()
    assert f'<a href="/admin/orders/order/{order.pk}/change/">order {order.pk}</a>' in listing
    assert f'<a href="/admin/transfers/transfercase/{case.pk}/change/">' in listing
    assert f'<a href="/admin/payouts/charge/{charge.pk}/change/">charge {charge.pk}</a>' in listing
    assert '<td class="field-about">424242</td>' in listing
    # The link opens the record's page.
    assert admin_client.get(f"/admin/orders/order/{order.pk}/change/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_claim_and_a_hand_over_whose_replies_were_lost_send_each_message_once(monkeypatch):
    """The claim and the hand-over name the messages they took in their own reply; when that reply is lost
    after the statement took effect, the retry finds it done and reads them from the rows instead."""
    from django.db import OperationalError

    monkeypatch.setattr(mail_once.time, "sleep", lambda seconds: None)
    real_upsert, real_hand_over = mail_once._upsert, mail_once._handed_over
    lost = {"claim": 1, "hand-over": 1}

    def reply_lost(step: str) -> None:
        if lost[step]:
            lost[step] -= 1
            raise OperationalError("server closed the connection unexpectedly")

    def upsert(**kwargs):
        written = real_upsert(**kwargs)
        reply_lost("claim")
        return written

    def hand_over(*args, **kwargs):
        keys = real_hand_over(*args, **kwargs)
        reply_lost("hand-over")
        return keys

    monkeypatch.setattr(mail_once, "_upsert", upsert)
    monkeypatch.setattr(mail_once, "_handed_over", hand_over)
    MailOnce.objects.create(purpose="notice", key="3", recipient="c@example.com", sent_at=timezone.now())
    sent = []
    outcome = mail_once.send_once(
        purpose="notice",
        recipients={1: "a@example.com", 2: "b@example.com", 3: "c@example.com"},
        send=lambda key, to, connection: sent.append((key, to)),
        claim_lease=timedelta(seconds=90),
    )
    assert lost == {"claim": 0, "hand-over": 0}  # both replies were lost
    assert sorted(sent) == [("1", "a@example.com"), ("2", "b@example.com")]
    assert sorted(outcome.sent) == ["1", "2"] and outcome.owed == {}
    rows = {row.key: row for row in MailOnce.objects.filter(purpose="notice")}
    assert all(rows[key].handed_over_at and rows[key].sent_at for key in ("1", "2"))
    assert rows["3"].handed_over_at is None  # sent before: neither claimed nor handed over again


def test_the_claim_and_the_hand_over_name_what_they_took_in_their_reply(django_assert_num_queries):
    """Without a lost reply, the claim and the hand-over read nothing back: five statements for a batch (the
    stale hand-overs settled, the claim, the hand-over, the sending recorded), whatever its size."""
    for size in (1, 5):
        purpose = f"notice-{size}"
        with django_assert_num_queries(3):
            outcome = mail_once.send_once(
                purpose=purpose,
                recipients={key: f"{key}@example.com" for key in range(size)},
                send=lambda key, to, connection: None,
                claim_lease=timedelta(seconds=90),
            )
        assert len(outcome.sent) == size
