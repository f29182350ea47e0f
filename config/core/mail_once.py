"""An e-mail sent at most once: the one mechanism, on its own table (``MailOnce``), keyed by its purpose and what it
is about (``purpose``, ``key``: the object's primary key).

Three ways to send, all on the same rows:

``send_once`` — for a message that must never go out twice, even when the sender dies or the database answers
late (the seller's order confirmation, the question to a seller). A scheme that never has to guess whether a
message left:

1. *claim*: one sender wins a conditional upsert (``claimed_at``, its token). A claim whose sender died before
   step 2 expires after the caller's ``claim_lease`` and may be claimed again: nothing was sent.
2. the mail-server connection is opened (greeting, EHLO, TLS, login: nothing is delivered yet); then
   *hand-over*: ``handed_over_at`` is recorded, only if the claim is still this sender's, and only then is the
   message sent. A message that was handed over is never sent again automatically.
3. *sent*: ``sent_at``. A hand-over with no ``sent_at`` after the caller's ``handover_lease`` (the recording
   failed, or the sender died during the transfer) is settled as sent-unconfirmed (``unconfirmed``) and logged
   for staff: the recipient probably got it, and a second copy is worse than asking. The caller settles them
   (``settle_unconfirmed``) over every key it considers, before it leaves out those that left already.

``claim`` / ``release`` / ``record_sent`` — the same claim without a hand-over, for a message whose failed send
may be retried (the question to a seller): one sender wins the claim, a failure releases it, a message recorded
sent is never sent again.

``claim_with_sending`` — for an alert sent inside the transaction that claims it (the partner's payment
alerts): the row is inserted as sent and commits only together with a handed-over message, so a mail-server
error rolls the claim back for the retry. ``forget`` removes a row, so the next failure of the same record is a
new event with its own e-mail.

Many messages go in one call, over one mail connection, each step one statement for all of them; one message
is a call with one key.
"""

from __future__ import annotations

import logging
import smtplib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from django.core.mail import get_connection
from django.db import connection
from django.db.models import F, Q
from django.utils import timezone

from .backoff import backoff_seconds
from .models import MailOnce
from .retrying import DB_ERRORS

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Refusals after which the mail server certainly did not accept the message: the hand-over is undone.
NOT_DELIVERED = (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused, smtplib.SMTPDataError)
# A step whose connection is lost is tried again for this long (backoff 0.1 s doubling to 2 s); longer outages
# fail the caller's task, which retries.
DB_RETRY_SECONDS = 30.0
# The hand-over and the sending, once they happened, are recorded with more patience: a database that is
# back within 3 minutes never leaves a handed-over or sent message unrecorded (which would settle as
# sent-unconfirmed after the hand-over lease). Holding the worker meanwhile costs nothing: without the
# database it could not send anything else either.
RECORD_RETRY_SECONDS = 180.0


def with_db_retry(
    statement: Callable[[], T], *, done: Callable[[], bool], seconds: float = DB_RETRY_SECONDS
) -> T | None:
    """Run ``statement`` and return what it returns; after a lost connection, reconnect, ask ``done`` whether it
    took effect (the reply may have been lost after the commit), and run it again if not — for ``seconds`` at
    most. None when it had taken effect: its reply is lost. Outside a transaction only."""
    deadline = time.monotonic() + seconds
    attempt = 0
    while True:
        try:
            if attempt and done():
                return None
            return statement()
        except DB_ERRORS:
            if connection.in_atomic_block or time.monotonic() >= deadline:
                raise
            connection.close()  # the next query opens a fresh connection
            time.sleep(backoff_seconds(attempt, first=0.1, cap=2.0))
            attempt += 1


# What each purpose's key names, registered by the app that sends it (``purpose_register``, in its AppConfig.ready):
# staff's list of the e-mails links each one to its record. A purpose nobody registered shows its bare key.
_SUBJECTS: dict[str, str] = {}


def purpose_register(purpose: str, model_label: str) -> None:
    """Record that ``purpose``'s keys are primary keys of ``model_label`` (``app_label.ModelName``)."""
    _SUBJECTS[purpose] = model_label


def purpose_subject(purpose: str) -> str | None:
    """The model label whose primary keys ``purpose``'s keys are, or None."""
    return _SUBJECTS.get(purpose)


def rows(purpose: str, keys: Iterable[object]):
    """The rows of ``purpose`` about ``keys``."""
    return MailOnce.objects.filter(purpose=purpose, key__in=[str(key) for key in keys])


def settle_unconfirmed(
    *, purpose: str, keys: Iterable[object], handover_lease: timedelta, now: datetime
) -> int:
    """Messages handed to the mail server longer than ``handover_lease`` ago whose sending was never recorded:
    settled as sent-unconfirmed, never sent again. Returns how many."""
    keys = [str(key) for key in keys]
    settled = (
        rows(purpose, keys)
        .filter(sent_at__isnull=True, handed_over_at__lt=now - handover_lease)
        .update(sent_at=F("handed_over_at"), unconfirmed=True)
    )
    if settled:
        logger.error(
            "%d %s e-mail(s) among %s were handed to the mail server but their sending was never recorded: "
            "marked sent-unconfirmed, not sent again",
            settled,
            purpose,
            keys,
        )
    return settled


def finished(*, purpose: str, keys: Iterable[object]) -> set[str]:
    """The keys whose message left or may have left (sent, or handed over): never sent again automatically."""
    return set(
        rows(purpose, keys)
        .filter(Q(sent_at__isnull=False) | Q(handed_over_at__isnull=False))
        .values_list("key", flat=True)
    )


def sent(*, purpose: str, keys: Iterable[object]) -> dict[str, str]:
    """The keys whose message was sent (or is settled as sent), with the recipient it went to (``""``: nobody
    could be e-mailed)."""
    return dict(rows(purpose, keys).filter(sent_at__isnull=False).values_list("key", "recipient"))


def mark_nobody(*, purpose: str, keys: Iterable[object], now: datetime) -> None:
    """Record that these messages have no recipient: settled as sent to nobody, never tried again."""
    keys = [str(key) for key in keys]
    if not keys:
        return
    _upsert(
        purpose=purpose,
        recipients={key: "" for key in keys},
        set_sql="sent_at = EXCLUDED.sent_at, recipient = ''",
        where_sql="{t}.sent_at IS NULL AND {t}.handed_over_at IS NULL",
        params=[],
        claimed_at=None,
        sent_at=now,
    )


def claim_with_sending(*, purpose: str, key: object, recipient: str, now: datetime | None = None) -> bool:
    """Claim the message about ``key`` as sent, in the caller's transaction, which then sends it: the claim
    commits only with the message handed over. Returns whether this call claimed it (a second call waits for
    the first's transaction and then finds it claimed)."""
    return bool(
        _upsert(
            purpose=purpose,
            recipients={str(key): recipient},
            set_sql=None,
            where_sql="",
            params=[],
            claimed_at=now or timezone.now(),
            sent_at=now or timezone.now(),
        )
    )


def forget(*, purpose: str, keys: Iterable[object]) -> int:
    """The messages about ``keys`` are owed again (a new failure of the same record is a new event)."""
    deleted, _ = rows(purpose, keys).delete()
    return deleted


def _upsert(
    *,
    purpose: str,
    recipients: Mapping[str, str],
    set_sql: str | None,
    where_sql: str,
    params: list,
    claimed_at: datetime | None,
    sent_at: datetime | None,
) -> list[str]:
    """One ``INSERT … ON CONFLICT`` over every key: a missing row is inserted as given; an existing one is
    updated by ``set_sql`` where ``where_sql`` holds (or left alone, without ``set_sql``). Returns the keys of
    the rows written."""
    table = connection.ops.quote_name(MailOnce._meta.db_table)
    conflict = (
        f"DO UPDATE SET {set_sql} WHERE {where_sql.format(t=table)}" if set_sql is not None else "DO NOTHING"
    )
    sql = (
        f"INSERT INTO {table} (purpose, key, recipient, claimed_at, handed_over_at, sent_at, unconfirmed) "  # noqa: S608
        "SELECT %s, t.k, t.r, %s, NULL, %s, false FROM unnest(%s::text[], %s::text[]) AS t(k, r) "
        f"ON CONFLICT (purpose, key) {conflict} RETURNING key"
    )
    keys = list(recipients)
    with connection.cursor() as cursor:
        cursor.execute(sql, [purpose, claimed_at, sent_at, keys, [recipients[k] for k in keys], *params])
        return [key for (key,) in cursor.fetchall()]


def claim(*, purpose: str, recipients: Mapping[object, str], lease: timedelta, now: datetime) -> list[str]:
    """Claim the unsent, not handed over messages of ``recipients`` (key → address) whose claim is free or older
    than ``lease``, with ``now`` as this sender's token; returns the keys claimed. Outside a transaction (the
    upsert is retried through a lost connection)."""
    recipients = {str(key): to for key, to in recipients.items()}
    if not recipients:
        return []
    # A message that left already is no one's to claim, whatever its claim's time.
    mine = rows(purpose, recipients).filter(claimed_at=now, sent_at__isnull=True, handed_over_at__isnull=True)
    # Race: two senders of one message — only the one whose upsert claims the unsent, not handed over message
    # goes on; its claim's timestamp is its token. The keys it claimed are the rows it wrote.
    claimed = with_db_retry(
        lambda: _upsert(
            purpose=purpose,
            recipients=recipients,
            set_sql="claimed_at = EXCLUDED.claimed_at, recipient = EXCLUDED.recipient",
            where_sql=(
                "{t}.sent_at IS NULL AND {t}.handed_over_at IS NULL "
                "AND ({t}.claimed_at IS NULL OR {t}.claimed_at < %s)"
            ),
            params=[now - lease],
            claimed_at=now,
            sent_at=None,
        ),
        done=mine.exists,
    )
    # After a lost reply whose claim had taken effect, the rows tell what it claimed.
    return sorted(claimed if claimed is not None else mine.values_list("key", flat=True))


def release(*, purpose: str, keys: Iterable[object], token: datetime) -> None:
    """Give up this sender's claim (``token``) on messages never handed over: the next sender may claim them at
    once. Best effort: a claim left behind expires after its lease anyway."""
    try:
        with_db_retry(
            lambda: (
                rows(purpose, keys)
                .filter(claimed_at=token, handed_over_at__isnull=True)
                .update(claimed_at=None)
                >= 0
            ),
            done=lambda: not rows(purpose, keys).filter(claimed_at=token).exists(),
        )
    except DB_ERRORS:
        logger.warning(
            "Could not release a %s e-mail claim; it expires after the lease", purpose, exc_info=True
        )


def record_sent(
    *, purpose: str, keys: Iterable[object], token: datetime, recipient: str | None = None
) -> None:
    """The messages this sender (``token``) claimed left: recorded sent (to ``recipient`` when given), never sent
    again."""
    unrecorded = rows(purpose, keys).filter(claimed_at=token, sent_at__isnull=True)
    values = {"sent_at": timezone.now(), **({"recipient": recipient} if recipient is not None else {})}
    with_db_retry(
        lambda: unrecorded.update(**values) >= 0,
        done=lambda: not unrecorded.exists(),
        seconds=RECORD_RETRY_SECONDS,
    )


def _handed_over(purpose: str, keys: list[str], *, token: datetime, at: datetime) -> list[str]:
    """Record the hand-over (``at``) of the messages about ``keys`` claimed by ``token`` and not handed over;
    returns their keys. The keys go as one array: one statement text, which the connection prepares once."""
    table = connection.ops.quote_name(MailOnce._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET handed_over_at = %s "  # noqa: S608  (the model's own table)
            "WHERE purpose = %s AND key = ANY(%s::text[]) AND claimed_at = %s AND handed_over_at IS NULL "
            "RETURNING key",
            [at, purpose, keys, token],
        )
        return [key for (key,) in cursor.fetchall()]


@dataclass
class Sending:
    """What ``send_once`` did: the keys whose message this call sent, and those still owed, each with the error
    that left it unsent (the mail server was unreachable or refused it, or the connection broke before its
    turn): the caller retries these."""

    sent: list[str] = field(default_factory=list)
    owed: dict[str, BaseException] = field(default_factory=dict)


def send_once(
    *,
    purpose: str,
    recipients: Mapping[object, str],
    send: Callable[[str, str, object], None],
    claim_lease: timedelta,
    now: datetime | None = None,
) -> Sending:
    """Send each message of ``recipients`` (key → address) at most once (see the module docstring), over one mail
    connection: ``send(key, recipient, connection)`` sends one. A message another sender holds, or that left
    already, is skipped; a message handed over when the connection broke is never sent again automatically
    (the caller settles stale hand-overs, see the module docstring). Outside a transaction."""
    outcome = Sending()
    recipients = {str(key): to for key, to in recipients.items()}
    if not recipients:
        return outcome
    now = now or timezone.now()
    claimed = claim(purpose=purpose, recipients=recipients, lease=claim_lease, now=now)
    if not claimed:
        return outcome
    mine = rows(purpose, claimed).filter(claimed_at=now)
    mail_connection = get_connection()
    try:
        mail_connection.open()  # a refused or broken mail server fails here, before anything is handed over
        handed_at = timezone.now()
        ours = mine.filter(handed_over_at=handed_at)
        marked = with_db_retry(
            lambda: _handed_over(purpose, claimed, token=now, at=handed_at),
            done=ours.exists,
            seconds=RECORD_RETRY_SECONDS,
        )
        # A claim that ran out meanwhile was taken over by another sender: its message is not ours to send.
        # (After a lost reply whose hand-over had taken effect, the rows tell which.)
        handed_over = sorted(marked if marked is not None else ours.values_list("key", flat=True))
        for position, key in enumerate(handed_over):
            try:
                send(key, recipients[key], mail_connection)
            except NOT_DELIVERED as exc:
                outcome.owed[key] = exc  # refused: nothing was delivered, so it may be sent again
            except Exception as exc:
                # The connection broke during this message: the recipient may have it (never sent again
                # automatically); the messages after it never left.
                logger.warning(
                    "The mail connection broke sending the %s e-mail of %s", purpose, key, exc_info=True
                )
                outcome.owed.update({later: exc for later in handed_over[position + 1 :]})
                break
            else:
                outcome.sent.append(key)
    except Exception as exc:
        logger.warning(
            "The mail server could not be reached for %d %s e-mail(s)", len(claimed), purpose, exc_info=True
        )
        outcome.owed.update({key: exc for key in claimed if key not in outcome.sent})
    finally:
        mail_connection.close()
    if outcome.owed:
        # Not delivered: the hand-over undone and the claim released, so the retry may claim them at once.
        owed = mine.filter(key__in=list(outcome.owed))
        with_db_retry(
            lambda: owed.update(handed_over_at=None, claimed_at=None) >= 0,
            done=lambda: not owed.exists(),
        )
    if outcome.sent:
        record_sent(purpose=purpose, keys=outcome.sent, token=now)
    return outcome


def stamps_copy(
    connection, *, purpose: str, table: str, values_sql: str, where_sql: str, batch: int = 5000
) -> None:
    """For a migration that moves an e-mail's stamp columns from ``table`` to these rows: ``INSERT … SELECT`` over
    the table's ids in batches of ``batch`` (each its own transaction in a non-atomic migration, so a large table
    is never locked for long); a row already here (written by the new code meanwhile) is kept.

    ``values_sql``: the recipient, claimed, handed-over and sent values and the unconfirmed flag, from ``r`` (a
    row of ``table``); ``where_sql``: which rows have something to move."""
    insert = (
        "INSERT INTO core_mailonce (purpose, key, recipient, claimed_at, handed_over_at, sent_at, unconfirmed) "  # noqa: S608
        f"SELECT %s, r.id::text, {values_sql} FROM {table} r "
        f"WHERE r.id >= %s AND r.id < %s AND ({where_sql}) ON CONFLICT (purpose, key) DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {table}")  # noqa: S608  (the migration's own names)
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, batch):
            cursor.execute(insert, [purpose, start, start + batch])
