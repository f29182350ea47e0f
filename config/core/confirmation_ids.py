"""The single-use ids of staff confirmations: issued by the server with each confirmation page, consumed once
by the database when the page comes back confirmed, purged once too old to be used."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import timedelta
from enum import Enum

from django.db.models import QuerySet
from django.utils import timezone

from .models import StaffConfirmation
from .purge import delete_in_batches

# A confirmation page left open longer than this is refused (shown again with a fresh id).
VALID_FOR = timedelta(hours=12)
# Kept a little longer, so that a late resubmission is still told it was sent already; then purged.
KEPT_FOR = timedelta(days=2)
MAX_ID_CHARS = 64


class Use(Enum):
    FIRST = "first"  # consumed now: the change runs
    USED = "used"  # consumed before (a double click, a second tab, a resubmission)
    INVALID = "invalid"  # missing, unknown, expired, someone else's or issued for another change


def scope_of(*parts: object, keys: Iterable[object]) -> str:
    """The digest of what a confirmation is for: ``parts`` (the model, the action, its permissions) and the keys
    of the objects it acts on, in any order."""
    raw = "\x1f".join([*(str(p) for p in parts), ",".join(sorted(str(k) for k in keys))])
    return hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def confirmation_issue(*, user, scope: str) -> str:
    """A new id for one confirmation page shown to ``user``, recorded as unused."""
    confirmation_id = secrets.token_urlsafe(24)
    StaffConfirmation.objects.create(id=confirmation_id, user=user, scope=scope, issued_at=timezone.now())
    return confirmation_id


def _issued(confirmation_id: str, *, user, scope: str) -> QuerySet:
    return StaffConfirmation.objects.filter(pk=confirmation_id, user_id=user.pk, scope=scope)


def confirmation_use(confirmation_id: str, *, user, scope: str) -> Use:
    """Consume ``confirmation_id`` for ``user`` and ``scope``: :attr:`Use.FIRST` for exactly one request."""
    if not confirmation_id or len(confirmation_id) > MAX_ID_CHARS:
        return Use.INVALID
    now = timezone.now()
    # Two POSTs of one page at once (a double click, two tabs): the row's lock lets one UPDATE match, the other
    # finds consumed_at set once it may go on, and updates nothing.
    consumed = (
        _issued(confirmation_id, user=user, scope=scope)
        .filter(consumed_at__isnull=True, issued_at__gt=now - VALID_FOR)
        .update(consumed_at=now)
    )
    if consumed == 1:
        return Use.FIRST
    if _issued(confirmation_id, user=user, scope=scope).filter(consumed_at__isnull=False).exists():
        return Use.USED
    return Use.INVALID


def staff_confirmations_purge(*, batch_size: int = 1000) -> int:
    """Delete the ids issued longer ago than :data:`KEPT_FOR` (used or not). Returns how many."""
    old = StaffConfirmation.objects.filter(issued_at__lt=timezone.now() - KEPT_FOR).order_by("issued_at")
    return delete_in_batches(old, batch_size=batch_size)
