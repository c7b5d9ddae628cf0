"""The web UI's own sessions, so the cluster-admin token never travels in a URL: ``kubesched up``
prints a one-time login code (good for ten minutes, then spent), exchanged once for a session
cookie; a browser without the code logs in by posting the cluster's token from the kubeconfig.
Beside them, what every answer carries (a Content-Security-Policy that allows the page's own
files and its one import map, no framing, no sniffing, no referrer) and the Host check that
keeps a DNS-rebinding page from reaching a server on loopback."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

CODE_TTL = 600.0  # seconds a printed login code stays good (it is spent by its first use)
SESSION_TTL = 12 * 3600.0  # seconds a session lasts


class Sessions:
    """One-time login codes and the sessions they (or the cluster's token) open."""

    def __init__(self, token: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.token = token
        self.clock = clock
        self._codes: dict[str, float] = {}  # code -> when it expires
        self._sessions: dict[str, float] = {}

    def new_code(self) -> str:
        code = secrets.token_urlsafe(24)
        self._codes[code] = self.clock() + CODE_TTL
        return code

    def redeem(self, code: str) -> str | None:
        """A new session for an unspent, unexpired code (which is then spent), else None."""
        now = self.clock()
        for known, expires in list(self._codes.items()):
            if expires <= now:
                del self._codes[known]
            elif hmac.compare_digest(known.encode(), code.encode()):
                del self._codes[known]
                return self._open(now)
        return None

    def login(self, token: str) -> str | None:
        """A new session for whoever holds the cluster's token."""
        if token and hmac.compare_digest(token.encode(), self.token.encode()):
            return self._open(self.clock())
        return None

    def valid(self, session: str) -> bool:
        expires = self._sessions.get(session) if session else None
        if expires is None:
            return False
        if expires <= self.clock():
            del self._sessions[session]
            return False
        return True

    def _open(self, now: float) -> str:
        session = secrets.token_urlsafe(32)
        self._sessions[session] = now + SESSION_TTL
        return session


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The Host headers the UI answers: its own address, and loopback's names when it is there."""
    names = {host, f"[{host}]"} if ":" in host else {host}
    if is_loopback(host) or host in ("0.0.0.0", "::"):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return frozenset({f"{n}:{port}" for n in names})


def security_headers(index: Path) -> dict[str, str]:
    """The headers of every answer. The page's one inline script, its import map, is allowed by
    its hash; nothing else inline runs."""
    match = re.search(rb'<script type="importmap">(.*?)</script>', index.read_bytes(), re.S)
    hashes = f" 'sha256-{base64.b64encode(hashlib.sha256(match.group(1)).digest()).decode()}'" if match else ""
    policy = (
        f"default-src 'self'; script-src 'self'{hashes}; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    return {
        "Content-Security-Policy": policy,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
