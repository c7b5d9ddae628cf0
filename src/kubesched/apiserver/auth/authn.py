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
import re
import secrets
import time
from pathlib import Path
from typing import Any

from kubesched.apiserver.auth.rbac import UserInfo
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
MAX_EXPIRATION = 1 << 32  # authentication validation's MaxTokenAgeSec: "larger than 2^32 seconds"
LEEWAY = 60  # go-jose's jwt.DefaultLeeway, which the service account token validator allows
_SEGMENT = re.compile(rb"^[A-Za-z0-9_-]+$")  # base64url without padding (RawURLEncoding)


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

    def __init__(
        self,
        admin_token: str,
        key: bytes,
        store: Any,
        static: dict[str, UserInfo] | None = None,
        audiences: tuple[str, ...] = AUDIENCES,
    ) -> None:
        self.admin_token = admin_token.encode()
        self.key = key
        self.store = store
        self.static = {k.encode(): v for k, v in (static or {}).items()}
        self.audiences = audiences  # --api-audiences: a token must be meant for one of them

    def authenticate(self, header: str | None) -> UserInfo | None:
        token = bearer_token(header)
        if token is None:
            return None
        if hmac.compare_digest(token, self.admin_token):
            return ADMIN
        for known, user in self.static.items():
            if hmac.compare_digest(token, known):
                return user
        return self._service_account(token, self.audiences)[0]

    def review(self, token: str, audiences: list[str]) -> tuple[UserInfo | None, list[str], str]:
        """A TokenReview (``pkg/registry/authentication/tokenreview``): who the token is for the
        audiences asked (the API's own when none are), the audiences it is valid for among them,
        and the error when it is no one's. A static or the admin token is valid only for the API's
        audiences (``WrapAudienceAgnosticToken``); a service account token for those it was issued
        for, so a token handed to one service cannot be replayed to another."""
        wanted = list(audiences) or list(self.audiences)
        raw = token.encode("utf-8", "surrogateescape")
        static: UserInfo | None = ADMIN if hmac.compare_digest(raw, self.admin_token) else None
        for known, listed in self.static.items():
            if static is None and hmac.compare_digest(raw, known):
                static = listed
        if static is not None:
            accepted = [a for a in wanted if a in self.audiences]
            return (static, accepted, "") if accepted else (None, [], "invalid bearer token")
        user, token_audiences = self._service_account(raw, tuple(wanted))
        if user is not None:
            return user, [a for a in wanted if a in token_audiences], ""
        if token_audiences:
            return (
                None,
                [],
                (
                    f"[invalid bearer token, token audiences {_go_strings(token_audiences)} is invalid for the "
                    f"target audiences {_go_strings(wanted)}]"
                ),
            )
        return None, [], "invalid bearer token"

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

    def _service_account(
        self, token: bytes, accepted: tuple[str, ...], now: float | None = None
    ) -> tuple[UserInfo | None, list[str]]:
        """A token this server issued, checked as kube-apiserver's service account authenticator
        checks one (``pkg/serviceaccount``): a compact JWS of three unpadded base64url parts, HS256
        signed with this server's key, from this issuer, for one of the API's audiences (a string
        or a list of strings), within its validity (``nbf``/``iat``/``exp``, a minute's leeway), and
        of an account that still exists with the UID it names. With the user, the token's audiences
        (also when they are not among ``accepted``: the user is None then)."""
        parts = token.split(b".")
        if len(parts) != 3 or not all(_SEGMENT.match(p) for p in parts):
            return None, []
        expected = hmac.new(self.key, parts[0] + b"." + parts[1], hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(parts[2].decode()), expected):
                return None, []
            header = json.loads(_unb64(parts[0].decode()))
            claims = json.loads(_unb64(parts[1].decode()))
        except (ValueError, UnicodeDecodeError):
            return None, []
        if not isinstance(header, dict) or header.get("alg") != "HS256" or not isinstance(claims, dict):
            return None, []
        aud = _audiences(claims.get("aud"))
        if claims.get("iss") != ISSUER or aud is None:
            return None, []
        now = time.time() if now is None else now
        if not _times_valid(claims, now):
            return None, []
        k8s = claims.get("kubernetes.io")
        sa = k8s.get("serviceaccount") if isinstance(k8s, dict) else None
        if not isinstance(sa, dict):
            return None, []
        namespace, name, uid = k8s.get("namespace"), sa.get("name"), sa.get("uid")  # type: ignore[union-attr]
        if not all(isinstance(v, str) and v for v in (namespace, name, uid)):
            return None, []
        live = self.store.try_get("ServiceAccount", namespace, name)
        if live is None or live["metadata"].get("uid") != uid:
            return None, []  # the account is gone (or was recreated): its tokens are void
        if not any(a in accepted for a in aud):
            return None, aud
        return service_account_user(str(namespace), str(name), str(uid)), aud


def _audiences(aud: Any) -> list[str] | None:
    """``jwt.Audience``: one string or a list of strings (anything else does not decode)."""
    if isinstance(aud, str):
        aud = [aud]
    if not isinstance(aud, list) or not all(isinstance(a, str) for a in aud):
        return None
    return aud


def _go_strings(values: list[str]) -> str:
    """A []string as Go's ``%q`` prints it: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def _times_valid(claims: dict[str, Any], now: float) -> bool:
    """``ValidateWithLeeway``: not expired, valid already, not issued in the future; each time a
    whole number of seconds (``exp`` is required of a bound token)."""
    times = {k: claims.get(k) for k in ("exp", "nbf", "iat")}
    if any(v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in times.values()):
        return False
    exp, nbf, iat = times["exp"], times["nbf"], times["iat"]
    if exp is None or now > exp + LEEWAY:
        return False
    if nbf is not None and now < nbf - LEEWAY:
        return False
    return iat is None or iat <= now + LEEWAY
