"""256-bit keys derived with HKDF-SHA256 from the operator's key strings (any format works)."""

from functools import lru_cache

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


@lru_cache(maxsize=32)
def derive_key(secret: str, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose.encode()).derive(
        secret.encode()
    )
