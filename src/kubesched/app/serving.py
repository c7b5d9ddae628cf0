"""The scheduler's own HTTPS endpoint (kube-scheduler's ``--secure-port``, 10259): ``/healthz``,
``/livez`` and ``/readyz`` with the leader-election watchdog among their checks (client-go
``HealthzAdaptor``, 20 s tolerance as kube-scheduler sets it), open to anyone as upstream's
``authorization-always-allow-paths``; ``/metrics`` in Prometheus text format, for the bearer token
of the scheduler's kubeconfig or, as kube-scheduler delegates, any token the API server
authenticates (TokenReview) whose user it allows ``get /metrics`` (SubjectAccessReview). A
self-signed serving certificate is made at start, as kube-scheduler does without
``--tls-cert-file``."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import generate_latest

from kubesched.api.errors import ApiError
from kubesched.apiserver.auth.authn import bearer_token, token_matches
from kubesched.app.certs import ensure_certs, server_context
from kubesched.app.delegated_auth import DelegatedAuth
from kubesched.leaderelection.leader_metric import METRICS_CONTENT_TYPE, REGISTRY

log = logging.getLogger("kubesched.scheduler")
Check = Callable[[], str | None]  # None: healthy; else why not
WATCHDOG_TOLERANCE = 20.0  # NewLeaderHealthzAdaptor(time.Second * 20)


class SchedulerServer:
    def __init__(
        self,
        host: str,
        port: int,
        token: str | None,
        checks: dict[str, Check],
        registries: list[Any] | None = None,
        delegated: DelegatedAuth | None = None,
    ) -> None:
        self.host, self.port, self.token, self.checks = host, port, token, checks
        self.delegated = delegated
        self.registries = [REGISTRY, *(registries or [])]  # client-go's and the scheduler's metrics
        self._runner: web.AppRunner | None = None
        self._certs = tempfile.TemporaryDirectory(prefix="kubesched-serving-")
        app = web.Application()
        for path in ("/healthz", "/livez", "/readyz"):
            app.router.add_get(path, self._health)
        app.router.add_get("/metrics", self._metrics)
        self.app = app

    async def _health(self, request: web.Request) -> web.Response:
        """``ok``, or 500 with each check's verdict as the apiserver's healthz handler prints it."""
        results = [("ping", None)] + [(name, check()) for name, check in self.checks.items()]
        failed = any(r is not None for _, r in results)
        if not failed and "verbose" not in request.query:
            return web.Response(text="ok", content_type="text/plain")
        lines = [f"[+]{name} ok" if r is None else f"[-]{name} failed: reason withheld" for name, r in results]
        tail = f"{request.path.strip('/')} check failed" if failed else f"{request.path.strip('/')} check passed"
        return web.Response(
            text="\n".join([*lines, tail]) + "\n", status=500 if failed else 200, content_type="text/plain"
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        denied = await self._check(request, "/metrics")
        if denied is not None:
            return denied
        body = b"".join(generate_latest(r) for r in self.registries)
        return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})

    async def _check(self, request: web.Request, path: str) -> web.Response | None:
        """None when the request may ``get`` the path, else the 401 or 403 Status to answer."""
        header = request.headers.get("Authorization")
        if self.token is None or token_matches(header, self.token):
            return None
        raw = bearer_token(header)
        user = None
        if raw is not None and self.delegated is not None:
            try:
                user = await self.delegated.authenticate(raw.decode("utf-8", "surrogateescape"))
            except (ApiError, OSError, TimeoutError, aiohttp.ClientError) as exc:
                log.warning("TokenReview for %s failed: %s", path, exc)
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        assert self.delegated is not None
        try:
            allowed = await self.delegated.authorize(user, "get", path)
        except (ApiError, OSError, TimeoutError, aiohttp.ClientError) as exc:
            log.warning("SubjectAccessReview for %s failed: %s", path, exc)
            allowed = False
        if not allowed:
            return _status(403, "Forbidden", f'forbidden: User "{user.get("username", "")}" cannot get path "{path}"')
        return None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        _, crt, key = ensure_certs(Path(self._certs.name), self.host)
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=server_context(crt, key))
        await site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._certs.cleanup()


def _status(code: int, reason: str, message: str) -> web.Response:
    """A ``metav1.Status`` failure, as kube-scheduler's secure port answers one."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    return web.json_response(body, status=code)
