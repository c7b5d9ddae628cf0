"""Subresources with handlers of their own: ``pods/binding`` (the scheduler's Bind),
``pods/eviction`` (PodDisruptionBudgets decide), ``/scale`` of the replicated workloads
(autoscaling/v1 Scale: ``kubectl scale``), and ``namespaces/finalize``; ``/status`` is served
by the writes."""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from kubesched.api import schema
from kubesched.api.errors import BadRequest, Invalid, MethodNotAllowed, UnsupportedMediaType
from kubesched.api.selectors import format_label_selector
from kubesched.apiserver.auth.authn import AUDIENCES, DEFAULT_EXPIRATION, MAX_EXPIRATION, MIN_EXPIRATION, Authenticator
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.handlers.bodies import decode_json, read_body, read_object
from kubesched.apiserver.handlers.patch import patched
from kubesched.apiserver.handlers.request import Target, dry_run, respond, success
from kubesched.apiserver.registry import customresources
from kubesched.apiserver.registry.strategy import invalid
from kubesched.apiserver.resources import BY_PATH
from kubesched.clock import EPOCH_UNIX, rfc3339
from kubesched.cluster.disruption import evict
from kubesched.cluster.store import STALE, conflict

SCALE_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


class Subresources(ServerContext):
    """The ApiServer's subresource handlers; a part of ``ApiServer``."""

    authenticator: Authenticator | None

    # -- subresources ------------------------------------------------------------------------------
    def _bind(self, namespace: str, name: str, body: dict[str, Any]) -> web.Response:
        """pods/binding (``pkg/registry/core/pod/storage`` BindingREST): 201 Status Success."""
        if body.get("kind") not in (None, "Binding"):
            raise BadRequest(f'{body.get("kind")} in version "v1" cannot be handled as a Binding')
        meta = body.get("metadata") or {}
        target = body.get("target") or {}
        if not isinstance(meta, dict) or not isinstance(target, dict):
            raise BadRequest("a Binding needs metadata and target objects")
        if meta.get("name") and meta.get("name") != name:
            raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
        node = target.get("name")
        if not node or not isinstance(node, str):
            r = BY_PATH[("", "v1", "pods")]
            raise invalid(r, name, "target.name", "Required value")
        uid = meta.get("uid") or ""
        annotations = meta.get("annotations")
        if annotations is not None and (
            not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values())
        ):
            raise BadRequest("metadata.annotations of a Binding must map strings to strings")
        labels = meta.get("labels")
        if labels is not None and (
            not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values())
        ):
            raise BadRequest("metadata.labels of a Binding must map strings to strings")
        self.store.bind(namespace, name, uid, node, annotations or None, labels or None)
        return success()

    async def _evict(self, request: web.Request, t: Target) -> web.Response:
        body = await read_object(request)
        if body.get("kind") not in (None, "Eviction"):
            raise BadRequest(f'{body.get("kind")} in version "v1" cannot be handled as a Eviction')
        opts = body.get("deleteOptions") or {}
        if not isinstance(opts, dict):
            raise BadRequest("deleteOptions must be an object")
        self._get(t)
        if not dry_run(request):
            evict(self.store, t.namespace or "default", t.name or "", opts.get("gracePeriodSeconds"))
        return success()

    # -- scale -------------------------------------------------------------------------------------
    def _scale_of(self, t: Target, obj: dict[str, Any]) -> dict[str, Any]:
        """The autoscaling/v1 Scale of a Deployment, ReplicaSet, StatefulSet or
        ReplicationController (``pkg/registry/*/storage`` ScaleREST): spec.replicas,
        status.replicas and the selector in label-selector syntax (a ReplicationController's is a
        plain map: ``SelectorFromSet``); a custom resource's at its CRD's paths."""
        if t.resource.custom:
            return customresources.scale_of(self._custom(t), obj)
        meta = obj["metadata"]
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        raw = spec.get("selector")
        if t.resource.kind == "ReplicationController":
            selector = ",".join(f"{k}={v}" for k, v in sorted((raw or {}).items()))
        else:
            selector = format_label_selector(raw)
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
            },
            "spec": {"replicas": int(spec.get("replicas", 1))},
            "status": {
                "replicas": int(status.get("replicas") or 0),
                "selector": selector,
            },
        }

    async def _scale(self, request: web.Request, t: Target) -> web.Response:
        stored = self._get(t)
        if request.method in ("GET", "HEAD"):
            return respond(self._scale_of(t, stored))
        current = self._scale_of(t, stored)
        if request.method == "PUT":
            body = await read_object(request)
            if body.get("kind") not in (None, "Scale"):
                raise BadRequest(f'{body.get("kind")} in version "v1" cannot be handled as a Scale')
            scale = body
        elif request.method == "PATCH":
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype not in SCALE_PATCH_TYPES:
                raise UnsupportedMediaType(f"the body of the request was in an unknown format - {ctype}")
            scale = patched(ctype, current, decode_json(await read_body(request)))
        else:
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            name = t.name or ""
            raise Invalid(
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {json.dumps(replicas)}: '
                "must be greater than or equal to 0",
                details={
                    "name": name,
                    "group": "autoscaling",
                    "kind": "Scale",
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "message": f"Invalid value: {json.dumps(replicas)}: must be greater than or equal to 0",
                            "field": "spec.replicas",
                        }
                    ],
                },
            )
        rv = ((scale.get("metadata") or {}) if isinstance(scale.get("metadata"), dict) else {}).get("resourceVersion")
        if rv and rv != stored["metadata"]["resourceVersion"]:
            raise conflict(t.resource.stored, t.name or "", STALE)
        if t.resource.custom:
            cr = self._custom(t)
            new = customresources.scaled(cr, stored, replicas)
            if dry_run(request):
                return respond(self._scale_of(t, new))
            updated = self.store.mutate(
                t.resource.stored, self._ns(t), t.name or "", lambda o: {**new, "metadata": o["metadata"]}
            )
            return respond(self._scale_of(t, updated))
        if dry_run(request):
            return respond({**current, "spec": {"replicas": replicas}})
        updated = self.store.mutate(
            t.resource.stored,
            self._ns(t),
            t.name or "",
            lambda o: {**o, "spec": {**(o.get("spec") or {}), "replicas": replicas}},
        )
        return respond(self._scale_of(t, updated))

    async def _finalize(self, request: web.Request, t: Target) -> web.Response:
        """``PUT namespaces/{name}/finalize``: only spec.finalizers changes; the namespace goes
        when it is being deleted and none are left."""
        if request.method != "PUT":
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        body = await read_object(request)
        self._get(t)
        finalizers = (body.get("spec") or {}).get("finalizers") or []
        if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
            raise BadRequest("spec.finalizers must be a list of strings")
        if dry_run(request):
            return respond(self._get(t))
        updated = self.store.mutate(
            "Namespace", "", t.name or "", lambda o: {**o, "spec": {**(o.get("spec") or {}), "finalizers": finalizers}}
        )
        return respond(updated)

    def _log(self, t: Target, container: str | None) -> web.Response:
        """``pods/log``: a hollow container runs no process, so there is nothing to read; the
        answer says so in one line (kubectl prints it), with the checks the kubelet's log
        endpoint makes first (``ValidateContainerLogsForPod``)."""
        pod = self._get(t)
        name = t.name or ""
        container = _container(pod, name, container)
        raise BadRequest(
            f'container "{container}" in pod "{name}" is a hollow container of kubesched: it runs no process '
            "and has no logs"
        )

    def _stream(self, t: Target, container: str | None) -> web.Response:
        """``pods/exec``, ``pods/attach`` and ``pods/portforward``: the checks kube-apiserver makes
        before it proxies to the kubelet (``streamLocation``, ``PortForwardLocation``), then a 400
        saying why there is nothing to reach: a hollow node runs no process and opens no port."""
        pod = self._get(t)
        name = t.name or ""
        if t.subresource != "portforward":
            container = _container(pod, name, container)
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            raise BadRequest(f"pod {name} does not have a host assigned")
        if t.subresource == "portforward":
            raise BadRequest(
                f'pod "{name}" runs on the hollow node {node} of kubesched: it listens on no port, '
                "so there is nothing to forward to"
            )
        what = "exec in" if t.subresource == "exec" else "attach to"
        raise BadRequest(
            f'container "{container}" in pod "{name}" is a hollow container of kubesched on node {node}: '
            f"it runs no process, so there is nothing to {what}"
        )

    async def _token_request(self, request: web.Request, t: Target) -> web.Response:
        """``serviceaccounts/token`` (TokenRequest): a token for the account, signed, bound to its
        UID, expiring after ``spec.expirationSeconds`` (default 1 h, at least 10 minutes)."""
        if request.method != "POST":
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        sa = self._get(t)
        body = await read_object(request)
        if body.get("kind") not in (None, "TokenRequest"):
            raise BadRequest(f'{body.get("kind")} in version "v1" cannot be handled as a TokenRequest')
        try:  # decoded as its Go type: an audience that is not a string is a 400, never coerced
            body, _ = schema.decode("authentication.TokenRequest", body)
        except schema.DecodeError as exc:
            raise BadRequest(
                f'TokenRequest in version "v1" cannot be handled as a TokenRequest: {exc.message}'
            ) from None
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        seconds = spec.get("expirationSeconds") or DEFAULT_EXPIRATION
        name = t.name or ""
        # ValidateTokenRequest: at least 10 minutes, at most 2^32 seconds
        if seconds < MIN_EXPIRATION or seconds > MAX_EXPIRATION:
            bound = "less than 10 minutes" if seconds < MIN_EXPIRATION else "larger than 2^32 seconds"
            message = f"Invalid value: {json.dumps(seconds)}: may not specify a duration {bound}"
            raise Invalid(  # named "" as upstream's token REST names it (validation runs on the request)
                f'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: {message}',
                details={
                    "name": "",
                    "group": "authentication.k8s.io",
                    "kind": "TokenRequest",
                    "causes": [{"reason": "FieldValueInvalid", "message": message, "field": "spec.expirationSeconds"}],
                },
            )
        audiences = list(spec.get("audiences") or []) or list(AUDIENCES)
        assert self.authenticator is not None
        now = time.time()
        token, expires = self.authenticator.issue(
            self._ns(t), name, str(sa["metadata"].get("uid") or ""), seconds, audiences, now
        )
        return respond(
            {
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": self._ns(t), "creationTimestamp": None},
                "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": None},
                "status": {"token": token, "expirationTimestamp": rfc3339(expires - EPOCH_UNIX)},
            },
            201,
        )


def _container(pod: dict[str, Any], name: str, container: str | None) -> str:
    """``validateContainer``: the container named, or the pod's only one; a BadRequest otherwise."""
    containers = [str(c.get("name", "")) for c in (pod.get("spec") or {}).get("containers") or []]
    if not container:
        if len(containers) != 1:
            raise BadRequest(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            )
        return containers[0]
    if container not in containers:
        raise BadRequest(f"container {container} is not valid for pod {name}")
    return container
