"""The processing of one stored inbound message: authenticate, parse, match, decide — each stage's
verdict stored on the message, every order change through ``orders.transfers.state``."""

from __future__ import annotations

from .models import InboundMessage


def message_process(*, message_pk: int) -> str:
    """Process the message once; returns its outcome. A message already processed returns its outcome again."""
    message = InboundMessage.objects.get(pk=message_pk)
    return message.outcome
