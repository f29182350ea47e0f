"""The SMTP receiver of transfer e-mails (``python manage.py inbound_smtp``; docs/operations/receiving-mail.md "Receiving mail").

aiosmtpd speaks SMTP on an event loop; every database call (the RCPT check, storing the message) runs on a
small thread pool through ``sync_to_async``, never on the loop. RCPT is accepted only for a transfer address
that takes mail (``intake.selectors.recipient_order``), else 550: the receiver relays nothing and, refusing during the
session, never sends a bounce. DATA is answered 250 only after ``intake.message_receive`` returned, which is
after the message and its rows were committed; a database error answers 451 so the sender tries again later,
and a retry of the same bytes finds the rows it already wrote.

Its bounds (docs/operations/receiving-mail.md "Receiving mail"): at most ``MAX_RECIPIENTS`` (5) recipients a message (452 for
more), ``MAX_SESSIONS`` (50) sessions at once (421 to the next), ``COMMAND_TIMEOUT_SECONDS`` (60) for each command
and its data (the session is closed past it), and a header section within ``orders.transfers.intake.bounds`` (64 KB,
no bare CR or LF, at most 5 DKIM-Signature headers; else 554 at DATA, nothing stored).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections

from orders.transfers.intake import bounds
from orders.transfers.intake import services as intake
from orders.transfers.intake.selectors import recipient_order

logger = logging.getLogger(__name__)

NO_SUCH_ADDRESS = "550 5.1.1 No such transfer address"
TRY_AGAIN = "451 4.3.0 Temporary failure storing the message; try again later"
TOO_BIG = "552 5.3.4 Message size exceeds fixed maximum message size"
STORED = "250 2.0.0 Message accepted"
TOO_MANY_RECIPIENTS = "452 4.5.3 Too many recipients"
TOO_MANY_SESSIONS = "421 4.3.2 Too many sessions at once; try again later"
REFUSED_HEADERS = "554 5.6.0 Message refused: {problem}"

MAX_RECIPIENTS = 5
MAX_SESSIONS = 50
COMMAND_TIMEOUT_SECONDS = 60


def _store(raw: bytes, **envelope) -> tuple[str, str]:
    """``intake.message_receive`` on a pool thread; returns the sha256 and, for the log line, the orders it
    was stored for (a retry marked), read here rather than on the event loop."""
    received = intake.message_receive(raw, **envelope)
    orders = ", ".join(
        f"{r.message.order.order_id if r.message.order_id else '?'}{'' if r.created else ' (retry)'}"
        for r in received
    )
    return (received[0].message.sha256[:16] if received else "-"), orders or "no receiving recipient"


def _db_call(fn, *args, **kwargs):
    """``fn`` on a pool thread, with the connection hygiene of a request: a connection the database closed
    meanwhile (or one past its age) is replaced first, and a broken one is dropped after."""
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


class TransferMailHandler:
    """aiosmtpd handler: RCPT only for receiving transfer addresses, DATA stored and committed before 250.

    ``hold_after_store`` (seconds) makes DATA wait after the commit before answering: the crash-safety test
    kills the receiver in that window (``INBOUND_SMTP_TEST_HOLD_AFTER_STORE_SECONDS``, a test hook only).
    """

    def __init__(self, *, threads: int = 4, hold_after_store: float = 0.0) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="inbound-smtp-db")
        self.hold_after_store = hold_after_store
        self._in_flight = 0
        self._idle = threading.Condition()
        self._sessions = 0
        self._sessions_lock = threading.Lock()

    def session_enter(self) -> bool:
        """Count a new session in; ``False`` (not counted) when ``MAX_SESSIONS`` are open already."""
        with self._sessions_lock:
            if self._sessions >= MAX_SESSIONS:
                return False
            self._sessions += 1
            return True

    def session_leave(self) -> None:
        with self._sessions_lock:
            self._sessions -= 1

    def _run(self, fn, *args, **kwargs):
        return sync_to_async(_db_call, thread_sensitive=False, executor=self.executor)(fn, *args, **kwargs)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        try:
            order = await self._run(recipient_order, address)
        except DatabaseError:
            logger.exception("Inbound SMTP: the recipient check failed; answering 451")
            return TRY_AGAIN
        if order is None:
            return NO_SUCH_ADDRESS
        if len(envelope.rcpt_tos) >= MAX_RECIPIENTS:
            return TOO_MANY_RECIPIENTS
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 Recipient OK"

    async def handle_DATA(self, server, session, envelope):
        # Counted from the start to the answer: a graceful stop waits for the 250 to go out.
        self._enter()
        try:
            return await self._data(session, envelope)
        finally:
            self._leave()

    async def _data(self, session, envelope) -> str:
        raw = envelope.original_content
        if raw is None:  # decode_data=False keeps the bytes; never None after a completed DATA
            return TRY_AGAIN
        if len(raw) > settings.INBOUND_MAX_BYTES:
            return TOO_BIG
        problem = bounds.header_problem(raw)
        if problem:
            logger.warning("Inbound SMTP: a message from peer %s refused: %s", _peer(session), problem)
            return REFUSED_HEADERS.format(problem=problem)
        started = time.monotonic()
        try:
            sha, orders = await self._run(
                _store,
                raw,
                recipients=list(envelope.rcpt_tos),
                channel="smtp",
                mail_from=envelope.mail_from or "",
                peer=str(session.peer[0]) if session.peer else "",
                helo=session.host_name or "",
            )
        except intake.MessageTooLarge:
            return TOO_BIG
        except DatabaseError:
            logger.exception("Inbound SMTP: storing a message failed; answering 451 so the sender retries")
            return TRY_AGAIN
        except Exception:
            logger.exception("Inbound SMTP: unexpected error storing a message; answering 451")
            return TRY_AGAIN
        logger.info(
            "Inbound SMTP: %d bytes sha256=%s from peer %s for %s stored in %.0f ms",
            len(raw),
            sha,
            session.peer[0] if session.peer else "?",
            orders,
            (time.monotonic() - started) * 1000,
        )
        if self.hold_after_store:
            await asyncio.sleep(self.hold_after_store)
        return STORED

    def _enter(self) -> None:
        with self._idle:
            self._in_flight += 1

    def _leave(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no message is being stored (a graceful stop lets them commit and answer)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self) -> None:
        self.executor.shutdown(wait=True)


def _peer(session) -> str:
    return str(session.peer[0]) if session and session.peer else "?"


class TransferSMTP(SMTP):
    """aiosmtpd's SMTP with the receiver's identity in the banner and its cap on sessions at once: past
    ``MAX_SESSIONS`` a new connection is answered 421 and closed before any command."""

    _counted = False

    def connection_made(self, transport) -> None:
        self._counted = self.event_handler.session_enter()
        super().connection_made(transport)

    def connection_lost(self, error) -> None:
        if self._counted:
            self._counted = False
            self.event_handler.session_leave()
        super().connection_lost(error)

    async def _handle_client(self) -> None:
        if not self._counted:
            logger.warning(
                "Inbound SMTP: %d sessions open, refusing peer %s", MAX_SESSIONS, _peer(self.session)
            )
            await self.push(TOO_MANY_SESSIONS)
            if self.transport is not None:
                self.transport.close()
            return
        await super()._handle_client()


class TransferMailController(Controller):
    """aiosmtpd's threaded controller with the receiver's limits: SIZE ``INBOUND_MAX_BYTES`` (advertised in
    EHLO; a larger message or MAIL SIZE= is refused with 552), ``COMMAND_TIMEOUT_SECONDS`` from one command to
    the end of the next (DATA's bytes included), no AUTH, no relaying."""

    def __init__(self, handler: TransferMailHandler, host: str, port: int, **kwargs) -> None:
        super().__init__(handler, hostname=host, port=port, **kwargs)

    def factory(self):
        return TransferSMTP(
            self.handler,
            data_size_limit=settings.INBOUND_MAX_BYTES,
            hostname=settings.ORDER_TRANSFER_ADDRESS_DOMAIN,
            ident="partner-service inbound",
            timeout=COMMAND_TIMEOUT_SECONDS,
            enable_SMTPUTF8=True,
        )


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{listen!r} is not host:port")
    return host.strip("[]") or "127.0.0.1", int(port)
