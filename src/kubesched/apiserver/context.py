"""What every group of the API server's handlers shares: the Store and the server's state, and
the conversions between how an object is stored and how an endpoint serves it (core v1 Events
served as events.k8s.io/v1, autoscaling/v2 HPAs as autoscaling/v1), the object a path names, and
the checks of a body's kind and namespace against its path."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.api import autoscaling_v1
from kubesched.api.errors import BadRequest, NotFound
from kubesched.api.fields import parse_field_selector
from kubesched.api.labels import parse_label_selector
from kubesched.api.watch import WatchEvent
from kubesched.apiserver.handlers.request import Target
from kubesched.apiserver.handlers.tables import Printer
from kubesched.apiserver.registry import customresources
from kubesched.cluster.event_conversion import from_core, to_core
from kubesched.cluster.store import Store

if TYPE_CHECKING:
    from kubesched.apiextensions.definitions import CustomResource
    from kubesched.apiextensions.registry import CustomResources
    from kubesched.apiserver.auth.escalation import EscalationCheck
    from kubesched.apiserver.commit import GroupCommit


# the versions served from objects stored in another: (group, version) -> (stored to served, back)
CONVERSIONS: dict[tuple[str, str], tuple[Callable[[dict[str, Any]], dict[str, Any]], ...]] = {
    ("events.k8s.io", "v1"): (from_core, to_core),
    ("autoscaling", "v1"): (autoscaling_v1.to_v1, autoscaling_v1.from_v1),
}


class ServerContext:
    """The base of ``ApiServer`` and of its handler groups (``ListWatch``, ``Writes``,
    ``Subresources``)."""

    store: Store
    custom: CustomResources
    commit: GroupCommit
    escalation: EscalationCheck
    watch_queue_length: int
    _closing: asyncio.Event
    _wakes: set[asyncio.Event]
    _encoded: deque[WatchEvent]  # the events whose watch lines are kept (listwatch.py)
    _paged: OrderedDict[tuple[Any, ...], list[dict[str, Any]]]  # paged lists' matches (listwatch.py)

    def _out(self, t: Target, obj: dict[str, Any]) -> dict[str, Any]:
        """The stored object as this endpoint's version presents it (a custom resource's other
        versions: the same object under their apiVersion, conversion strategy None)."""
        conversion = CONVERSIONS.get((t.resource.group, t.resource.version))
        if conversion is not None:
            return conversion[0](obj)
        if t.resource.custom and obj.get("apiVersion") != t.resource.group_version:
            return {**obj, "apiVersion": t.resource.group_version}
        return obj

    def _printer(self, t: Target) -> Printer | None:
        """A custom resource's Table columns (its CRD's printer columns), else None."""
        return customresources.printer(self._custom(t)) if t.resource.custom else None

    def _custom(self, t: Target) -> CustomResource:
        """The served custom resource a target names (its CRD may have gone since routing)."""
        cr = self.custom.by_path(t.resource.group, t.resource.version, t.resource.plural)
        if cr is None:
            raise NotFound("the server could not find the requested resource")
        return cr

    def _in(self, t: Target, obj: dict[str, Any]) -> dict[str, Any]:
        conversion = CONVERSIONS.get((t.resource.group, t.resource.version))
        return conversion[1](obj) if conversion is not None else obj

    def _check_escalation(self, request: web.Request, t: Target, obj: dict[str, Any]) -> None:
        """Roles and bindings grant nothing their writer does not hold (``escalation.py``)."""
        user = request.get("user")
        if user is not None:
            self.escalation.check(user, t.resource.kind, obj)

    def _ns(self, t: Target) -> str:
        return (t.namespace or "default") if t.resource.namespaced else ""

    def _get(self, t: Target) -> dict[str, Any]:
        obj = self.store.try_get(t.resource.stored, self._ns(t), t.name or "")
        if obj is None:
            raise NotFound(
                f'{t.resource.qualified} "{t.name}" not found',
                details={"name": t.name, "group": t.resource.group, "kind": t.resource.plural},
            )
        return self._out(t, obj)

    def _check_kind(self, t: Target, body: dict[str, Any]) -> None:
        if t.resource.custom:
            customresources.check_kind(self._custom(t), body)
            return
        kind, api_version = body.get("kind"), body.get("apiVersion")
        r = t.resource
        if kind is not None and kind != r.kind:
            raise BadRequest(f'{kind} in version "{api_version or r.version}" cannot be handled as a {r.kind}')
        if api_version is not None and api_version != r.group_version:
            raise BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({r.group_version})"
            )

    def _check_namespace(self, t: Target, body: dict[str, Any]) -> None:
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        if t.resource.namespaced:
            ns = meta.get("namespace")
            if ns and ns != t.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = t.namespace
        else:
            meta.pop("namespace", None)

    def _selectors(self, request: web.Request, t: Target) -> tuple[Any, Any]:
        q = request.query
        return (
            parse_label_selector(q.get("labelSelector")),
            parse_field_selector(
                q.get("fieldSelector"), t.resource.stored, events_v1=t.resource.group == "events.k8s.io"
            ),
        )
