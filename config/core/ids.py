"""Opaque public identifiers with a type prefix (``evt_…``, ``ord_…``, ``ptn_…``, ``cli_…``)."""

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits
# Random bytes to characters in one pass: a byte below 248 (4 × 62) maps to ``_ALPHABET[byte % 62]``, each
# character as likely as any other; the 8 bytes above are dropped.
_ACCEPTED = 4 * len(_ALPHABET)
_TO_CHARACTER = bytes(ord(_ALPHABET[byte % len(_ALPHABET)]) for byte in range(256))
_REJECTED = bytes(range(_ACCEPTED, 256))


def new_public_id(prefix: str, length: int = 20) -> str:
    drawn = b""
    while len(drawn) < length:
        # Eight bytes to spare: one read of the system's generator almost always gives enough (each byte is
        # dropped with a chance of 1 in 32).
        drawn += secrets.token_bytes(length + 8).translate(_TO_CHARACTER, _REJECTED)
    return f"{prefix}_{drawn[:length].decode('ascii')}"


def id_factory(prefix: str, length: int = 20):
    """A module-level callable for ``default=`` that migrations can reference by name."""

    def make() -> str:
        return new_public_id(prefix, length)

    make.__name__ = f"new_{prefix}_id"
    make.__qualname__ = make.__name__
    return make
