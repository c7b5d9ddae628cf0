"""kube-scheduler's delegated authentication and authorization of its secure port
(``k8s.io/apiserver``'s ``DelegatingAuthenticationOptions`` and ``DelegatingAuthorizationOptions``):
a bearer token is reviewed by the API server (TokenReview), and the user it names is allowed a path
when the API server says so (SubjectAccessReview); answers are cached for 10 s, as upstream's
``--authentication-token-webhook-cache-ttl`` and authorization cache TTLs default."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import kubernetes_asyncio.client as k8s

from kubesched.client.rest import checked

CACHE_TTL = 10.0


class DelegatedAuth:
    """Reviews against the API server through the scheduler's own client."""

    def __init__(self, api: k8s.ApiClient, clock: Callable[[], float] = time.monotonic, ttl: float = CACHE_TTL) -> None:
        self.api = api
        self.clock = clock
        self.ttl = ttl
        self._users: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._decisions: dict[tuple[str, str, str], tuple[float, bool]] = {}

    async def authenticate(self, token: str) -> dict[str, Any] | None:
        """The user ``token`` is (TokenReview's ``status.user``), or None when it is no one's."""
        now = self.clock()
        cached = self._users.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        review = await checked(k8s.AuthenticationV1Api(self.api).create_token_review(body, _preload_content=False))
        status = (review or {}).get("status") or {}
        user = status.get("user") if status.get("authenticated") else None
        self._users[token] = (now + self.ttl, user)
        return user

    async def authorize(self, user: dict[str, Any], verb: str, path: str) -> bool:
        """Whether ``user`` may ``verb`` the non-resource ``path`` (SubjectAccessReview)."""
        now = self.clock()
        key = (str(user.get("username") or ""), verb, path)
        cached = self._decisions.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        spec: dict[str, Any] = {
            "user": user.get("username") or "",
            "groups": list(user.get("groups") or []),
            "nonResourceAttributes": {"verb": verb, "path": path},
        }
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        review = await checked(
            k8s.AuthorizationV1Api(self.api).create_subject_access_review(body, _preload_content=False)
        )
        allowed = bool(((review or {}).get("status") or {}).get("allowed"))
        self._decisions[key] = (now + self.ttl, allowed)
        return allowed
