"""RFC 8785 canonical JSON, SHA-256 digests and unpadded base64url: the bytes every hash and
signature of accord.contracts is computed over."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any

import rfc8785

from accord.errors import AccordError

_B64URL = re.compile(r"[A-Za-z0-9_-]*")


class CanonicalError(AccordError, ValueError):
    """A value with no RFC 8785 form (a float NaN, an integer beyond 2**53, a non-string key)."""


def canonical(value: Any) -> bytes:
    """The RFC 8785 (JCS) serialization of ``value`` as UTF-8 bytes."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalError(str(exc)) from None


def b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The bytes of unpadded base64url text; ValueError for anything else (padding, other
    alphabets, a length no encoding gives)."""
    if not isinstance(text, str) or not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not unpadded base64url") from None


def canonical_hash(value: Any) -> str:
    """base64url (unpadded, 43 characters) of SHA-256 over the canonical form of ``value``."""
    return b64url(hashlib.sha256(canonical(value)).digest())
