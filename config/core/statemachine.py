"""A status that changes in exactly one place: the table of legal moves, the row lock, the history row.

Each machine (orders, payouts, refunds, events, charges, partners, webhook endpoints and deliveries)
declares its moves once::

    PAYOUT_MACHINE = StateMachine(
        name="payout", field="status", moves={...}, history=PayoutStatusHistory, history_fk="payout"
    )

and its one writer (``payout_transition`` …) calls ``machine.move(...)`` inside its own transaction, adding
whatever else the move means for that app (notifications, alerts, quantities). ``move`` locks the row,
re-reads the status under the lock, refuses any move the table does not have, writes the new status with
the caller's other field changes, and records ``from → to`` with the time, the actor and the reason.
``move_many`` is that one path, for one row or many rows of one machine, in a fixed number of statements (one
lock, one ``UPDATE``, one ``INSERT`` of their history rows), all of them or none; ``move`` is a batch of one,
and ``record`` a ``record_many`` of one row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.db import models, transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from config.core import rawsql

M = TypeVar("M", bound=models.Model)

REASON_MAX_LENGTH = 500


class StatusHistory(models.Model):
    """What every machine's history row holds; the concrete model adds the foreign key to its row."""

    from_status = models.CharField(max_length=20, blank=True, help_text="Empty for the creation row.")
    to_status = models.CharField(max_length=20)
    at = models.DateTimeField()
    actor = models.CharField(max_length=200, help_text="partner:…, staff:…, system:…")
    reason = models.CharField(max_length=REASON_MAX_LENGTH, blank=True)

    class Meta:
        abstract = True
        ordering = ["at", "id"]
        verbose_name = "status change"
        verbose_name_plural = "status history"

    def __str__(self) -> str:
        return f"{self.from_status or '∅'} → {self.to_status}"


class IllegalStateMove(Exception):
    """A move the machine's table does not have (including a move to the status the row already has)."""

    def __init__(self, *, machine: str, label: str, from_state: str, to_state: str) -> None:
        self.machine = machine
        self.label = label
        self.from_state = from_state
        self.to_state = to_state
        super().__init__(f"{machine.capitalize()} {label} cannot move from {from_state} to {to_state}.")


Refusal = Callable[[Any, str, str], IllegalStateMove]


class StateMachine:
    """The legal moves of one status field and the history model that records them.

    The history model has a foreign key ``history_fk`` to the machine's model (or to the model whose primary key
    the machine's row shares: an order's transfer progress and its history by the order) and the fields
    ``from_status``, ``to_status``, ``at``, ``actor`` and ``reason``. A machine whose moves nobody needs to
    trace (a webhook delivery: its attempts are its history) has ``history=None`` and records nothing.
    """

    def __init__(
        self,
        *,
        name: str,
        field: str,
        moves: Mapping[str, frozenset[str]],
        history: type[models.Model] | None,
        history_fk: str = "",
        refuse: Refusal | None = None,
    ) -> None:
        self.name = name
        self.field = field
        self.moves = dict(moves)
        self.history = history
        self.history_fk = history_fk
        self._refuse = refuse

    def allows(self, from_state: str, to_state: str) -> bool:
        return to_state in self.moves.get(from_state, frozenset())

    def refusal(self, obj: models.Model, from_state: str, to_state: str) -> IllegalStateMove:
        if self._refuse is not None:
            return self._refuse(obj, from_state, to_state)
        return IllegalStateMove(
            machine=self.name, label=str(obj.pk), from_state=from_state, to_state=to_state
        )

    def move(
        self,
        *,
        obj: M,
        to: str,
        actor: str,
        reason: str = "",
        changes: Mapping[str, Any] | Callable[[M], Mapping[str, Any]] | None = None,
        at=None,
    ) -> tuple[M, str]:
        """Move ``obj`` to ``to`` under its row lock; return the locked, saved row and the status it left: a
        ``move_many`` of one row."""
        return self.move_many(objs=[obj], to=to, actor=actor, reason=reason, changes=changes, at=at)[0]

    def move_many(
        self,
        *,
        objs: list[M],
        to: str,
        actor: str,
        reason: str = "",
        changes: Mapping[str, Any] | Callable[[M], Mapping[str, Any]] | None = None,
        at=None,
        locked: bool = False,
    ) -> list[tuple[M, str]]:
        """Move every row of ``objs`` to ``to`` under their row locks, all of them or none; return each locked,
        saved row with the status it left, in the order given. A fixed number of statements: one lock, one
        ``UPDATE`` per distinct set of field changes, one ``INSERT`` of their history rows.

        ``changes`` are other fields written with the status (the caller's instances get them too), or a
        function of each locked row that returns them (for values computed from what the lock read).
        ``locked``: the caller read ``objs`` under their row locks in the current transaction
        (``select_for_update``), so their status is current and they are not read again. Raises the machine's
        ``IllegalStateMove`` for the first row the table does not let move, and writes nothing. Each row is
        announced as saved (``pre_save``/``post_save`` with its ``update_fields``), as a save of it would be.
        """
        if to not in self.moves:
            raise ValueError(f"Unknown {self.name} status {to!r}")
        if not objs:
            return []
        model = type(objs[0])
        with transaction.atomic():
            if locked:
                rows = list(objs)
            else:
                # Race: two writers moving one row at once (staff, a task, a beat) — the second waits for the
                # first's commit, then re-reads the status and is refused if the move no longer applies.
                by_pk = model._default_manager.select_for_update().in_bulk([obj.pk for obj in objs])
                for obj in objs:
                    if obj.pk not in by_pk:
                        raise model.DoesNotExist(f"{model._meta.object_name} matching query does not exist.")
                rows = [by_pk[obj.pk] for obj in objs]
            moved = []
            for row in rows:
                from_state = getattr(row, self.field)
                if not self.allows(from_state, to):
                    raise self.refusal(row, from_state, to)
                moved.append((row, from_state))
            at = at or timezone.now()
            stamp = (
                {"updated_at": at} if any(f.name == "updated_at" for f in model._meta.concrete_fields) else {}
            )
            values_of = [
                {self.field: to, **dict((changes(row) if callable(changes) else changes) or {}), **stamp}
                for row in rows
            ]
            # The rows that take the same values are written by one statement.
            writes: list[tuple[dict[str, Any], list[tuple[M, str]]]] = []
            for (row, from_state), values in zip(moved, values_of, strict=True):
                group = next((group for written, group in writes if written == values), None)
                if group is None:
                    writes.append((values, group := []))
                group.append((row, from_state))
            for values, group in writes:
                for row, _ in group:
                    pre_save.send(
                        sender=model,
                        instance=row,
                        raw=False,
                        using=row._state.db,
                        update_fields=frozenset(values),
                    )
                # Each row's status was read under its lock just now: the condition on it only double-checks.
                updated = model._default_manager.filter(
                    pk__in=[row.pk for row, _ in group], **{f"{self.field}__in": {f for _, f in group}}
                ).update(**values)
                if updated != len(group):
                    raise RuntimeError(f"{self.name}: {updated} of {len(group)} rows moved to {to}")
                for row, _ in group:
                    for name, value in values.items():
                        setattr(row, name, value)
                    post_save.send(
                        sender=model,
                        instance=row,
                        created=False,
                        update_fields=frozenset(values),
                        raw=False,
                        using=row._state.db,
                    )
            self.record_many(rows=moved, to_state=to, actor=actor, reason=reason, at=at)
        if not locked:
            for obj, row, values in zip(objs, rows, values_of, strict=True):
                for name in values:
                    setattr(obj, name, getattr(row, name))
        return moved

    def record_many(
        self, *, rows: list[tuple[models.Model, str]], to_state: str, actor: str, reason: str = "", at=None
    ) -> list[models.Model]:
        """Write the history rows of ``rows`` (each a row and the status it left) in one statement."""
        if self.history is None or not rows:
            return []
        at = at or timezone.now()
        return rawsql.insert_many(
            [
                self.history(
                    **{f"{self.history_fk}_id": obj.pk},
                    from_status=from_state,
                    to_status=to_state,
                    at=at,
                    actor=actor,
                    reason=reason[:REASON_MAX_LENGTH],
                )
                for obj, from_state in rows
            ]
        )

    def record(
        self, *, obj: models.Model, from_state: str, to_state: str, actor: str, reason: str = "", at=None
    ) -> models.Model | None:
        """Write one history row (``from_state`` is empty for the row's creation); none without a history: a
        ``record_many`` of one row."""
        written = self.record_many(
            rows=[(obj, from_state)], to_state=to_state, actor=actor, reason=reason, at=at
        )
        return written[0] if written else None
