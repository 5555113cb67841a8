"""Bearer-token check shared by the receivers and the admin API (constant-time compare)."""

from __future__ import annotations

import hmac

__all__ = ["bearer_ok"]


def bearer_ok(expected: str | None, header: str | None) -> bool:
    """True when no token is configured, or ``header`` is ``Bearer <expected>``."""
    if not expected:
        return True
    if not header:
        return False
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())
