"""Sending a templated e-mail: the one way the service writes to a person.

Every message has a text body and an HTML alternative, rendered from ``templates/emails/<template>.txt`` and
``.html`` with the same context. A message about test-mode data carries ``[TEST]`` at the head of its
subject. The log names the template and the recipient's domain only: a context may hold a secret (a
set-password link) and an address is personal data.
"""

import logging
from email.message import Message
from email.policy import Compat32
from typing import Any

from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from . import mime

logger = logging.getLogger(__name__)

TEST_SUBJECT_PREFIX = "[TEST] "


class _OneLineHeaders(Compat32):
    """Python's ``compat32`` policy, which Django's messages are written with, writing a header that fits on one
    line and is printable ASCII as it is: ``compat32`` folds every header through its ``Header`` machinery, which
    was two thirds of serialising a seller's confirmation (13 headers, about 250 µs of a worker's CPU per e-mail),
    and gives such a header back unchanged. Every other header (longer, not ASCII, or holding a control character)
    is folded by ``compat32`` itself."""

    def _fold(self, name: str, value: Any, sanitize: bool) -> str:
        if (
            isinstance(value, str)
            and value.isascii()
            and value.isprintable()
            and self.max_line_length
            and len(name) + 2 + len(value) <= self.max_line_length
        ):
            return f"{name}: {value}{self.linesep}"
        return super()._fold(name, value, sanitize)


ONE_LINE_HEADERS = _OneLineHeaders()


def boundaries_set(message: Message) -> None:
    """Give every multipart of ``message`` a random boundary that none of its parts' text holds
    (:func:`config.core.mime.boundary_for`), checked by a substring search of each part's text as it will be
    written, which refuses more than the generator's line match does."""
    texts = [str(part.get_payload()) for part in message.walk() if not part.is_multipart()]
    for part in message.walk():
        if part.is_multipart():
            part.set_boundary(mime.boundary_for(texts))


class TemplatedMessage(EmailMultiAlternatives):
    """Django's message with its text and HTML alternatives, built and written by :mod:`config.core.mime` (a
    message of another shape: by Django, with the boundaries of :func:`boundaries_set`), with the headers of
    :class:`_OneLineHeaders`: the same bytes as Django's own, but for the random boundary."""

    def message(self):
        message = mime.alternatives(self)
        if message is None:
            message = super().message()
            boundaries_set(message)
        message.policy = ONE_LINE_HEADERS  # the generator writes every part with the outer message's policy
        return message


def send_templated_mail(
    *,
    template: str,
    subject: str,
    to: str,
    context: dict[str, Any],
    livemode: bool = True,
    headers: dict[str, str] | None = None,
    connection: Any = None,
) -> None:
    """Render ``template`` with ``context`` and send it to ``to``; mail-server errors propagate.

    ``livemode=False`` prefixes the subject with ``[TEST]``. ``connection``: an already opened mail
    connection, else the default backend's.
    """
    if not livemode:
        subject = TEST_SUBJECT_PREFIX + subject
    message = TemplatedMessage(
        subject=subject,
        body=render_to_string(f"emails/{template}.txt", context),
        to=[to],
        headers=headers,
        connection=connection,
    )
    message.attach_alternative(render_to_string(f"emails/{template}.html", context), "text/html")
    message.send()
    logger.info("e-mail sent", extra={"template": template, "to_domain": to.rpartition("@")[2]})
