"""Staff confirmations as a browser sends them (config/core/confirmation.py): the page first, then its form
sent back confirmed with the single-use id the server issued with that page."""

import re

CONFIRMATION_ID = re.compile(r'name="confirmation_id" value="([^"]+)"')


def confirmation_id_of(page) -> str | None:
    """The single-use id a confirmation page carries (None: the answer is no confirmation page)."""
    found = CONFIRMATION_ID.search(page.content.decode()) if page.status_code == 200 else None
    return found.group(1) if found else None


def post_confirmed(client, path: str, data: dict, **extra):
    """POST ``data`` (with ``confirmed=yes``) the way staff do: the same POST unconfirmed shows the page, whose
    id goes back with the confirmed form. An answer that is no confirmation page (a refusal) is returned as is."""
    follow = extra.pop("follow", False)
    page = client.post(path, {k: v for k, v in data.items() if k != "confirmed"}, **extra)
    confirmation_id = confirmation_id_of(page)
    if confirmation_id is None:
        return page
    return client.post(path, {**data, "confirmation_id": confirmation_id}, follow=follow, **extra)
