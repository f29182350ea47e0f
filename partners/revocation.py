"""Per process: the token sessions revoked in the database lately, so a revocation the shared cache missed
is never believed "active".

The repair of ``partners.token_cache`` (re-publishing revocations once the cache answers again) can come too
late for a process that did not see the outage: it keeps reading "active" from the cache until someone
re-publishes. So each process also reads, at most every ``TOKEN_REVOCATION_POLL_SECONDS`` (2 s), the
sessions revoked in the database since its last look (one indexed query, :class:`RevocationWatch`), and a
session found there is decided by the database whatever the cache says: a revocation takes effect on every
process within that interval (plus the time its transaction takes to commit), even if the cache was
unreachable when it was made.
"""

import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from .models import TokenSession

logger = logging.getLogger(__name__)


class RevocationWatch:
    """Per process: the unexpired sessions revoked in the database, refreshed at most every
    ``TOKEN_REVOCATION_POLL_SECONDS`` by the request that finds the list older than that.

    The first look reads every revocation of the last ``ACCESS_TOKEN_TTL_SECONDS`` (older ones belong to
    expired sessions); later looks read those since the previous look, less ``OVERLAP`` to cover
    transactions that committed late and clocks of other machines that run behind.
    """

    OVERLAP = timedelta(seconds=60)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._revoked: dict[str, float] = {}  # session_id -> its expiry (epoch seconds)
        self._checked_at: float | None = None  # time.monotonic() of the last successful look
        self._since = None

    def reset(self) -> None:
        with self._lock:
            self._revoked, self._checked_at, self._since = {}, None, None

    def is_revoked(self, session_id: str) -> bool:
        self._refresh()
        return session_id in self._revoked

    def _due(self) -> bool:
        interval = settings.TOKEN_REVOCATION_POLL_SECONDS
        return self._checked_at is None or time.monotonic() - self._checked_at >= interval

    def _refresh(self) -> None:
        if not self._due():
            return
        with self._lock:  # one thread looks; the others wait for its answer rather than all querying
            if not self._due():
                return
            started = timezone.now()
            since = self._since or started - timedelta(seconds=settings.ACCESS_TOKEN_TTL_SECONDS)
            try:
                rows = list(
                    TokenSession.objects.filter(revoked_at__gte=since, expires_at__gt=started).values_list(
                        "session_id", "expires_at"
                    )
                )
            except DatabaseError:
                # The database is the authority and does not answer: keep what is known and look again
                # on the next request (the request itself will most likely fail on the database too).
                logger.warning("could not read token revocations from the database", exc_info=True)
                return
            now = started.timestamp()
            self._revoked = {sid: exp for sid, exp in self._revoked.items() if exp > now}
            self._revoked.update((sid, expires_at.timestamp()) for sid, expires_at in rows)
            self._since = started - self.OVERLAP
            self._checked_at = time.monotonic()


revocation_watch = RevocationWatch()
