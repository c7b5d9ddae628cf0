"""Subresources with handlers of their own: ``pods/binding`` (the scheduler's Bind) and
``pods/eviction`` (PodDisruptionBudgets decide); ``/status`` is served by the writes."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesched.api.errors import BadRequest
from kubesched.apiserver.bodies import read_object
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.objects import invalid
from kubesched.apiserver.request import Target, dry_run, success
from kubesched.apiserver.resources import BY_PATH
from kubesched.cluster.disruption import evict


class Subresources(ServerContext):
    """The ApiServer's subresource handlers; a part of ``ApiServer``."""

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
        self.store.bind(namespace, name, uid, node)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and annotations:
            self.store.mutate(
                "Pod",
                namespace,
                name,
                lambda o: {
                    **o,
                    "metadata": {
                        **o["metadata"],
                        "annotations": {**(o["metadata"].get("annotations") or {}), **annotations},
                    },
                },
            )
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
