"""Opaque public identifiers with a type prefix (``evt_…``, ``ord_…``, ``ptn_…``, ``cli_…``)."""

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def new_public_id(prefix: str, length: int = 20) -> str:
    return f"{prefix}_" + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def id_factory(prefix: str, length: int = 20):
    """A module-level callable for ``default=`` that migrations can reference by name."""

    def make() -> str:
        return new_public_id(prefix, length)

    make.__name__ = f"new_{prefix}_id"
    make.__qualname__ = make.__name__
    return make
