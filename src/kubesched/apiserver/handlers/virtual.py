"""Resources computed on request rather than stored: metrics-server's ``metrics.k8s.io/v1beta1``
NodeMetrics and PodMetrics (``kubectl top``), here the hollow pods' usage (``api.usage``: their
requests, or what their annotations say), and the self reviews of who asks: SelfSubjectReview (``kubectl auth
whoami``), SelfSubjectAccessReview (``kubectl auth can-i``) and SelfSubjectRulesReview
(``kubectl auth can-i --list``)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from kubesched.api.errors import Invalid, MethodNotAllowed, NotFound
from kubesched.api.labels import labels_match
from kubesched.api.usage import container_usage, pod_usage
from kubesched.apiserver.auth.authn import ADMIN
from kubesched.apiserver.auth.rbac import PRIVILEGED_GROUP, Attributes, Authorizer, UserInfo
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.handlers.bodies import read_object
from kubesched.apiserver.handlers.request import Target, respond
from kubesched.clock import rfc3339
from kubesched.health import LoopHealth

WINDOW = "10s"  # metrics-server's resolution, as NodeMetrics reports it


def _quantities(cpu_milli: int, mem_bytes: int) -> dict[str, str]:
    """metrics-server's formats: CPU in nanocores, memory in Ki."""
    return {"cpu": f"{cpu_milli * 1_000_000}n", "memory": f"{mem_bytes // 1024}Ki"}


def _running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and bool((pod.get("spec") or {}).get("nodeName"))


class Virtual(ServerContext):
    """The ApiServer's handlers of virtual resources; a part of ``ApiServer``."""

    authorizer: Authorizer
    health: LoopHealth

    async def _virtual(self, request: web.Request, t: Target) -> web.Response:
        if t.resource.kind in ("TokenReview", "SubjectAccessReview"):
            return await self._delegated_review(request, t)
        if t.resource.kind == "LocalSubjectAccessReview":
            return await self._local_review(request, t)
        if t.resource.kind in ("SelfSubjectReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"):
            if request.method != "POST" or t.name is not None:
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            body = await read_object(request)
            self._check_kind(t, body)
            user: UserInfo = request.get("user") or ADMIN
            review: dict[str, Any] = {
                "kind": t.resource.kind,
                "apiVersion": t.resource.group_version,
                "metadata": {"creationTimestamp": None},
            }
            raw_spec = body.get("spec")
            spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
            if t.resource.kind == "SelfSubjectReview":
                info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
                if user.uid:
                    info["uid"] = user.uid
                if user.extra:
                    info["extra"] = {k: list(v) for k, v in user.extra.items()}
                review["status"] = {"userInfo": info}
            elif t.resource.kind == "SelfSubjectAccessReview":
                review["spec"] = spec
                review["status"] = self._access_review(user, spec)
            else:
                review["spec"] = spec
                review["status"] = self._rules_review(user, str(spec.get("namespace") or ""))
            return respond(review, 201)
        if request.method not in ("GET", "HEAD"):
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        now = rfc3339(self.store.clock.now())
        labels, _ = self._selectors(request, t)
        if t.resource.kind == "ComponentStatus":
            items = self._component_statuses()
        elif t.resource.kind == "NodeMetrics":
            items = self._node_metrics(now)
        else:
            items = self._pod_metrics(now, self._ns(t) if t.namespace is not None else None)
        if t.name is not None:
            found = next((i for i in items if i["metadata"]["name"] == t.name), None)
            if found is None:
                raise NotFound(
                    f'{t.resource.qualified} "{t.name}" not found',
                    details={"name": t.name, "group": t.resource.group, "kind": t.resource.plural},
                )
            if t.resource.kind == "ComponentStatus":
                found = {"kind": "ComponentStatus", "apiVersion": "v1", **found}
            return respond(found)
        items = [i for i in items if labels_match(labels, i)]
        return respond(
            {
                "kind": f"{t.resource.kind}List",
                "apiVersion": t.resource.group_version,
                "metadata": {},
                "items": items,
            }
        )

    def _access_review(self, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
        """``kubectl auth can-i``: the decision RBAC would make for these attributes."""
        res = spec.get("resourceAttributes")
        if isinstance(res, dict):
            attrs = Attributes(
                user,
                str(res.get("verb") or ""),
                True,
                api_group=str(res.get("group") or ""),
                resource=str(res.get("resource") or ""),
                subresource=str(res.get("subresource") or ""),
                namespace=str(res.get("namespace") or ""),
                name=str(res.get("name") or ""),
            )
        else:
            raw = spec.get("nonResourceAttributes")
            non: dict[str, Any] = raw if isinstance(raw, dict) else {}
            attrs = Attributes(user, str(non.get("verb") or ""), False, path=str(non.get("path") or ""))
        allowed = PRIVILEGED_GROUP in user.groups or self.authorizer.allowed(attrs)
        return {"allowed": allowed} if allowed else {"allowed": False, "reason": ""}

    async def _delegated_review(self, request: web.Request, t: Target) -> web.Response:
        """``tokenreviews`` and ``subjectaccessreviews``: a delegating server's questions."""
        if request.method != "POST" or t.name is not None:
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        body = await read_object(request)
        self._check_kind(t, body)
        raw = body.get("spec")
        spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if t.resource.kind == "TokenReview":
            status = self._token_review(spec)
        else:
            status = self._access_review(_review_user(spec), spec)
        review = {
            "kind": t.resource.kind,
            "apiVersion": t.resource.group_version,
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return respond(review, 201)

    async def _local_review(self, request: web.Request, t: Target) -> web.Response:
        """``localsubjectaccessreviews`` (``pkg/registry/authorization/localsubjectaccessreview``):
        a SubjectAccessReview whose resource attributes must name the namespace of the path."""
        if request.method != "POST" or t.name is not None:
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        body = await read_object(request)
        self._check_kind(t, body)
        self._check_namespace(t, body)  # the body's namespace is the path's (400 when another)
        raw = body.get("spec")
        spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
        attributes = spec.get("resourceAttributes")
        given = str((attributes or {}).get("namespace") or "") if isinstance(attributes, dict) else None
        if given is not None and given != t.namespace:  # ValidateLocalSubjectAccessReview
            shown = json.dumps(given)
            raise Invalid(
                f'.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: {shown}: '
                "must match metadata.namespace",
                details={
                    "group": "authorization.k8s.io",
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "message": f"Invalid value: {shown}: must match metadata.namespace",
                            "field": "spec.resourceAttributes.namespace",
                        }
                    ],
                },
            )
        decision = self._access_review(_review_user(spec), spec)
        status = {k: v for k, v in decision.items() if v != ""}
        review = {
            "kind": t.resource.kind,
            "apiVersion": t.resource.group_version,
            "metadata": {"namespace": t.namespace},
            "spec": spec,
            "status": status,
        }
        return respond(review, 201)

    def _token_review(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``tokenreviews`` (what a delegating authenticator such as kube-scheduler's asks): who
        ``spec.token`` authenticates as for ``spec.audiences`` (the API's own when empty), through
        this server's own authenticators (``Authenticator.review``)."""
        token = spec.get("token")
        authenticator = getattr(self, "authenticator", None)
        raw = spec.get("audiences")
        audiences = [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []
        user, valid_for, error = None, [], "invalid bearer token"
        if isinstance(token, str) and token and authenticator is not None:
            user, valid_for, error = authenticator.review(token, audiences)
        if user is None:
            return {"user": {}, "error": error}
        info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
        if user.uid:
            info["uid"] = user.uid
        if user.extra:
            info["extra"] = {k: list(v) for k, v in user.extra.items()}
        return {"authenticated": True, "user": info, "audiences": valid_for}

    def _rules_review(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        """``kubectl auth can-i --list``: every rule the user holds there."""
        rules = self.authorizer.rules_for(user, namespace)
        if PRIVILEGED_GROUP in user.groups:
            rules = [
                *rules,
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ]
        resource = [
            {k: r[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if r.get(k)}
            for r in rules
            if r.get("resources")
        ]
        non = [
            {"verbs": r["verbs"], "nonResourceURLs": r["nonResourceURLs"]} for r in rules if r.get("nonResourceURLs")
        ]
        return {"resourceRules": resource, "nonResourceRules": non, "incomplete": False}

    def _component_statuses(self) -> list[dict[str, Any]]:
        """``componentstatuses`` (``pkg/registry/core/componentstatus``): the controller manager
        and the scheduler healthy while their loops sync (``health.py``), the storage as etcd-0."""
        report = self.health.report()
        out = []
        for name, loop in (("controller-manager", "controller-manager"), ("scheduler", "scheduler")):
            state = report.get(loop)
            if state is None:
                healthy, message = "False", f"no {name.replace('-', ' ')} runs beside this API server"
            elif state["stuck"]:
                healthy, message = "False", f"no good sync for {state['lastSuccessSecondsAgo']} s"
            else:
                healthy, message = "True", "ok"
            condition = {"type": "Healthy", "status": healthy, "message": message}
            out.append({"metadata": {"name": name}, "conditions": [condition]})
        out.append(
            {"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}
        )
        return out

    def _node_metrics(self, now: str) -> list[dict[str, Any]]:
        per_node: dict[str, tuple[int, int]] = {}
        for pod in self.store.list("Pod")[0]:
            if _running(pod):
                cpu, mem = pod_usage(pod)
                node = pod["spec"]["nodeName"]
                have = per_node.get(node, (0, 0))
                per_node[node] = (have[0] + cpu, have[1] + mem)
        out = []
        for node in self.store.list("Node")[0]:
            meta = node["metadata"]
            cpu, mem = per_node.get(meta["name"], (0, 0))
            out.append(
                {
                    "metadata": {
                        "name": meta["name"],
                        "creationTimestamp": now,
                        "labels": dict(meta.get("labels") or {}),
                    },
                    "timestamp": now,
                    "window": WINDOW,
                    "usage": _quantities(cpu, mem),
                }
            )
        return out

    def _pod_metrics(self, now: str, namespace: str | None) -> list[dict[str, Any]]:
        out = []
        for pod in self.store.list("Pod", namespace)[0]:
            if not _running(pod):
                continue
            meta = pod["metadata"]
            containers = [{"name": name, "usage": _quantities(cpu, mem)} for name, cpu, mem in container_usage(pod)]
            out.append(
                {
                    "metadata": {
                        "name": meta["name"],
                        "namespace": meta.get("namespace", "default"),
                        "creationTimestamp": now,
                        "labels": dict(meta.get("labels") or {}),
                    },
                    "timestamp": now,
                    "window": WINDOW,
                    "containers": containers,
                }
            )
        return out


def _review_user(spec: dict[str, Any]) -> UserInfo:
    """The user a SubjectAccessReview asks about (``spec.user``, ``groups``, ``uid``, ``extra``)."""
    extra = spec.get("extra") if isinstance(spec.get("extra"), dict) else {}
    assert isinstance(extra, dict)
    return UserInfo(
        str(spec.get("user") or ""),
        uid=str(spec.get("uid") or ""),
        groups=tuple(str(g) for g in spec.get("groups") or []),
        extra={str(k): tuple(str(v) for v in vs or []) for k, vs in extra.items()},
    )
