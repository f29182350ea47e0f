"""Sending a templated e-mail: the one way the service writes to a person.

Every message has a text body and an HTML alternative, rendered from ``templates/emails/<template>.txt`` and
``.html`` with the same context. A message about test-mode data carries ``[TEST]`` at the head of its
subject. The log names the template and the recipient's domain only: a context may hold a secret (a
set-password link) and an address is personal data.
"""

import logging
from typing import Any

from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

TEST_SUBJECT_PREFIX = "[TEST] "


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
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"emails/{template}.txt", context),
        to=[to],
        headers=headers,
        connection=connection,
    )
    message.attach_alternative(render_to_string(f"emails/{template}.html", context), "text/html")
    message.send()
    logger.info("e-mail sent", extra={"template": template, "to_domain": to.rpartition("@")[2]})
