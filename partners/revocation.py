"""Per process: the token sessions revoked in the database lately, and the credentials whose token generation
moved on (a rotation or a suspension), so a revocation the shared cache missed is never believed "active".

The repair of ``partners.token_cache`` (re-publishing revocations once the cache answers again) can come too
late for a process that did not see the outage: it keeps reading "active" from the cache until someone
re-publishes. So each process also reads, at most every ``TOKEN_REVOCATION_POLL_SECONDS`` (2 s), the
sessions revoked in the database since its last look (one indexed query, :class:`RevocationWatch`), and a
session found there is decided by the database whatever the cache says: a revocation takes effect on every
process within that interval (plus the time its transaction takes to commit), even if the cache was
unreachable when it was made. The same look reads the credentials whose ``token_generation`` moved on since
(a rotation or a suspension): a token signed under an older generation is decided by the database too, which
covers the sessions that were still in Redis, not yet written to the database, when they were revoked.
"""

import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Value
from django.utils import timezone

from .models import PartnerCredential, PartnerTestCredential, TokenSession

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
        # (partner_id, livemode) -> the credential's current token generation, for those that moved lately
        self._generations: dict[tuple[str, bool], int] = {}
        self._checked_at: float | None = None  # time.monotonic() of the last successful look
        self._since = None

    def reset(self) -> None:
        with self._lock:
            self._revoked, self._generations, self._checked_at, self._since = {}, {}, None, None

    def is_revoked(self, session_id: str) -> bool:
        self._refresh()
        return session_id in self._revoked

    def decides(
        self, session_id: str, *, partner_id: str | None, livemode: bool, generation: int | None
    ) -> bool:
        """Whether the database must decide this session: it was revoked lately, or its token was signed
        under a generation of its credential older than the current one."""
        self._refresh()
        if session_id in self._revoked:
            return True
        if generation is None or partner_id is None:
            return False
        return self._generations.get((partner_id, livemode), generation) > generation

    def generation_current(self, *, partner_id: str, livemode: bool, generation: int) -> bool:
        """No newer generation of this credential is known (refreshed like :meth:`decides`)."""
        self._refresh()
        return self._generations.get((partner_id, livemode), generation) <= generation

    def superseded(self, *, partner_id: str, livemode: bool, generation: int | None) -> bool:
        """The token's generation is older than the one this process last read (no refresh)."""
        if generation is None:
            return False
        return self._generations.get((partner_id, livemode), generation) > generation

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
                generations = list(
                    PartnerCredential.objects.filter(token_generation_at__gte=since)
                    .annotate(live=Value(True))
                    .values_list("partner__public_id", "live", "token_generation")
                    .union(
                        PartnerTestCredential.objects.filter(token_generation_at__gte=since)
                        .annotate(live=Value(False))
                        .values_list("partner__public_id", "live", "token_generation"),
                        all=True,
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
            # Generations only move forward; one that moved longer ago than a token lives is no longer needed
            # (every token signed before it has expired), so the first look's window is enough.
            for partner_id, live, generation in generations:
                key = (partner_id, bool(live))
                self._generations[key] = max(generation, self._generations.get(key, 0))
            self._since = started - self.OVERLAP
            self._checked_at = time.monotonic()


revocation_watch = RevocationWatch()
