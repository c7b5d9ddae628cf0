"""Extended resources backed by DRA (KEP-5004, ``DRAExtendedResource``, beta and on by default in
v1.36): a pod asks for ``example.com/gpu: 1`` (or ``deviceclass.resource.kubernetes.io/<class>: 1``),
no node advertises it, and a DeviceClass names it in ``spec.extendedResourceName``: NodeResourcesFit
leaves the resource to DynamicResources, which allocates devices of that class through a claim the
scheduler creates for the pod.

- ``ExtendedResourceResolver``: ``deviceclass/extendedresourcecache``: each class answers to its
  implicit name ``deviceclass.resource.kubernetes.io/<name>``; an explicit name claimed by several
  classes goes to the newest, the alphabetically first name breaking ties (``betterDeviceClass``).
- ``is_dra_extended_resource_name``: ``schedutil.IsDRAExtendedResourceName``.
- ``requests_and_mappings``: ``createRequestsAndMappings`` of
  ``framework/plugins/dynamicresources/extendeddynamicresources.go``: one ExactCount request per
  container and resource (``container-<i>-request-<j>``: i over init containers then containers, j
  the resource's place among the container's sorted request names); a non-sidecar init container
  reuses the requests of the long-lived containers after it before asking for more, and only the
  largest of the init containers' own requests is kept.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.api.quantity import value
from kubesched.api.validation import label_key_errors
from kubesched.framework.handle import Handle
from kubesched.scheduler.listers import Listers

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # resourceapi.ExtendedResourceClaimAnnotation
SPECIAL_CLAIM_NAME = "<extended-resources>"  # specialClaimInMemName: never a valid name


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: not native (a domain other than kubernetes.io) and a
    qualified name also under the ``requests.`` quota prefix."""
    if "/" not in name or name.split("/")[0].endswith("kubernetes.io"):
        return False
    return not label_key_errors("requests." + name)  # a qualified name, as label keys are


def is_dra_extended_resource_name(name: str) -> bool:
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


class ExtendedResourceResolver:
    """Extended resource name → DeviceClass, from the DeviceClasses the informer holds."""

    def __init__(self, classes: Sequence[Mapping[str, Any]]) -> None:
        self._by_name: dict[str, Mapping[str, Any]] = {}
        explicit: dict[str, Mapping[str, Any]] = {}
        for c in classes:
            meta = c.get("metadata") or {}
            name = str(meta.get("name") or "")
            self._by_name[DEVICE_CLASS_PREFIX + name] = c
            wanted = (c.get("spec") or {}).get("extendedResourceName")
            if wanted:
                best = explicit.get(str(wanted))
                if best is None or _better(c, best):
                    explicit[str(wanted)] = c
        self._by_name.update(explicit)

    def class_for(self, resource: str) -> Mapping[str, Any] | None:
        return self._by_name.get(resource)

    def __bool__(self) -> bool:
        return bool(self._by_name)


def _better(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``betterDeviceClass``: the newer class, then the alphabetically lower name."""
    ta = str((a.get("metadata") or {}).get("creationTimestamp") or "")
    tb = str((b.get("metadata") or {}).get("creationTimestamp") or "")
    if ta != tb:
        return ta > tb  # RFC 3339 in UTC compares as text
    return str(a["metadata"]["name"]) < str(b["metadata"]["name"])


def _count(raw: Any) -> int:
    try:
        return int(value(raw))
    except (TypeError, ValueError):
        return 0


def _container_request(
    index: int, container: Mapping[str, Any], resource: str, class_name: str, reusable: list[dict[str, Any] | None]
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """``createResourceRequestAndMappings`` for one container and resource."""
    requests = (container.get("resources") or {}).get("requests") or {}
    if resource not in requests:
        return None, []
    want = _count(requests[resource])
    if want == 0:
        return None, []
    mappings: list[dict[str, str]] = []
    have = 0
    for r in reusable:
        if r is None:
            continue
        have += int(r["exactly"]["count"])
        mappings.append(
            {"containerName": str(container.get("name")), "resourceName": resource, "requestName": r["name"]}
        )
        if have >= want:
            return None, mappings
    position = sorted(str(k) for k in requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": want - have},
    }
    mappings.append({"containerName": str(container.get("name")), "resourceName": resource, "requestName": name})
    return request, mappings


def requests_and_mappings(
    pod: Mapping[str, Any], extended: Mapping[str, int], resolver: ExtendedResourceResolver
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The special claim's device requests and the pod's ``extendedResourceClaimStatus.requestMappings``."""
    spec = pod.get("spec") or {}
    inits = list(spec.get("initContainers") or [])
    containers = inits + list(spec.get("containers") or [])
    long_lived = [i for i, c in enumerate(containers) if i >= len(inits) or (c or {}).get("restartPolicy") == "Always"]
    short_lived = [i for i in range(len(inits)) if i not in long_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(extended):
        cls = resolver.class_for(resource)
        if cls is None:
            continue
        class_name = str(cls["metadata"]["name"])
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            req, maps = _container_request(i, containers[i], resource, class_name, [])
            long_requests[i] = req
            long_mappings.extend(maps)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            req, maps = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if req is not None:
                short_names.add(req["name"])
                if largest is None or largest["exactly"]["count"] < req["exactly"]["count"]:
                    largest = req
            short_mappings.extend(maps)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for m in short_mappings:
                if m["requestName"] in short_names:
                    m["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r["name"])
    return requests, mappings


def resolver_for(handle: Handle | None) -> ExtendedResourceResolver | None:
    """The resolver over the scheduler's DeviceClass informer, rebuilt when a class changed;
    shared by NodeResourcesFit and DynamicResources through the framework handle."""
    listers = handle.listers if handle is not None else None
    if not isinstance(listers, Listers):
        return None
    version = listers.versions.get("DeviceClass", 0)
    cached = _RESOLVERS.get(listers)
    if cached is None or cached[0] != version:
        cached = _RESOLVERS[listers] = (version, ExtendedResourceResolver(listers.all("DeviceClass")))
    return cached[1]


# per scheduler (its listers): the DeviceClass version a resolver was built from, and the resolver
_RESOLVERS: weakref.WeakKeyDictionary[Listers, tuple[int, ExtendedResourceResolver]] = weakref.WeakKeyDictionary()
