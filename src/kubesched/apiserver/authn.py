"""Bearer-token authentication, as kube-apiserver's token authenticators read the header
(``apiserver/pkg/authentication/request/bearertoken``): ``Authorization: Bearer <token>``;
anything else, a malformed header or one that is not text included, is simply unauthenticated
(401), never an error of the server. The tokens accepted: the admin token, a static token file,
and service account tokens the server issued (``serviceaccounts/token``)."""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import io
import json
import secrets
import time
from pathlib import Path
from typing import Any

from kubesched.apiserver.rbac import UserInfo
from kubesched.errors import InputError


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


# -- who a request is from -------------------------------------------------------------------------
ADMIN = UserInfo("kubesched-admin", groups=("system:masters", "system:authenticated"))
ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIENCES = (ISSUER,)
SA_PREFIX = "system:serviceaccount:"
DEFAULT_EXPIRATION = 3600  # TokenRequest's default expirationSeconds
MIN_EXPIRATION = 600  # "may not specify a duration less than 10 minutes"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """``serviceaccount.UserInfo``: the user a service account's token authenticates as."""
    return UserInfo(
        f"{SA_PREFIX}{namespace}:{name}",
        uid=uid,
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


def load_token_file(path: str) -> dict[str, UserInfo]:
    """``--token-auth-file``: CSV lines ``token,user,uid[,"group1,group2"]`` (kube-apiserver's
    static token file)."""
    users: dict[str, UserInfo] = {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read the token file: {exc.strerror or exc}", file=path) from None
    for n, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or row[0].startswith("#"):
            continue
        if len(row) < 3 or not row[0] or not row[1]:
            raise InputError(f"line {n}: expected token,user,uid[,groups]", file=path)
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        users[row[0]] = UserInfo(row[1], uid=row[2], groups=(*groups, "system:authenticated"))
    return users


class Authenticator:
    """kube-apiserver's authenticator chain for what the embedded server accepts: the admin
    token of its kubeconfig (``system:masters``), static tokens (``--token-auth-file``), and
    service account tokens it issued (TokenRequest: signed, bound to the account's UID, expiring)."""

    def __init__(self, admin_token: str, key: bytes, store: Any, static: dict[str, UserInfo] | None = None) -> None:
        self.admin_token = admin_token.encode()
        self.key = key
        self.store = store
        self.static = {k.encode(): v for k, v in (static or {}).items()}

    def authenticate(self, header: str | None) -> UserInfo | None:
        token = bearer_token(header)
        if token is None:
            return None
        if hmac.compare_digest(token, self.admin_token):
            return ADMIN
        for known, user in self.static.items():
            if hmac.compare_digest(token, known):
                return user
        return self._service_account(token)

    def issue(
        self, namespace: str, name: str, uid: str, expiration: int, audiences: list[str], now: float
    ) -> tuple[str, int]:
        """A TokenRequest's token and its expiry (unix seconds)."""
        exp = int(now) + expiration
        claims = {
            "aud": audiences or list(AUDIENCES),
            "exp": exp,
            "iat": int(now),
            "nbf": int(now),
            "iss": ISSUER,
            "jti": secrets.token_hex(16),
            "sub": f"{SA_PREFIX}{namespace}:{name}",
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        header = _b64(json.dumps({"alg": "HS256", "kid": "kubesched"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signature = _b64(hmac.new(self.key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        return f"{header}.{payload}.{signature}", exp

    def _service_account(self, token: bytes) -> UserInfo | None:
        parts = token.split(b".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self.key, parts[0] + b"." + parts[1], hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(parts[2].decode()), expected):
                return None
            claims = json.loads(_unb64(parts[1].decode()))
        except (ValueError, UnicodeDecodeError):
            return None
        k8s = claims.get("kubernetes.io") or {}
        sa = k8s.get("serviceaccount") or {}
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= time.time():
            return None
        namespace, name = str(k8s.get("namespace") or ""), str(sa.get("name") or "")
        live = self.store.try_get("ServiceAccount", namespace, name)
        if live is None or live["metadata"].get("uid") != sa.get("uid"):
            return None  # the account is gone (or was recreated): its tokens are void
        return service_account_user(namespace, name, str(sa.get("uid") or ""))
