"""Opaque public identifiers with a type prefix (``evt_…``, ``ord_…``, ``ptn_…``, ``cli_…``)."""

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def new_public_id(prefix: str, length: int = 20) -> str:
    """``prefix_`` and ``length`` letters and digits, uniformly drawn from one read of the system's generator
    per ``length + 8`` characters (``secrets.choice`` per character read it ``length`` times)."""
    chars: list[str] = []
    while len(chars) < length:
        # Bytes below 248 (4 × 62) map to the 62 characters without bias; a few spare bytes cover the rest.
        chars += [_ALPHABET[b % 62] for b in secrets.token_bytes(length + 8) if b < 248]
    return f"{prefix}_" + "".join(chars[:length])


def id_factory(prefix: str, length: int = 20):
    """A module-level callable for ``default=`` that migrations can reference by name."""

    def make() -> str:
        return new_public_id(prefix, length)

    make.__name__ = f"new_{prefix}_id"
    make.__qualname__ = make.__name__
    return make
