"""Bearer-token authentication, as kube-apiserver's token authenticators read the header
(``apiserver/pkg/authentication/request/bearertoken``): ``Authorization: Bearer <token>``;
anything else, a malformed header or one that is not text included, is simply unauthenticated
(401), never an error of the server."""

from __future__ import annotations

import hmac


def bearer_token(header: str | None) -> bytes | None:
    """The token of an ``Authorization`` header as bytes, or None when it carries none."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    try:  # aiohttp hands undecodable header bytes over as surrogates
        raw = token.strip().encode("utf-8", "surrogateescape")
    except UnicodeError:
        return None
    return raw or None


def token_matches(header: str | None, token: str) -> bool:
    """Whether the header carries exactly ``token`` (compared in constant time)."""
    given = bearer_token(header)
    return given is not None and hmac.compare_digest(given, token.encode())
