"""Discovery and version documents: ``/version``, ``/api``, ``/apis``, per group-version
``APIResourceList`` and aggregated discovery (``apidiscovery.k8s.io`` v2 and v2beta1), and the
empty OpenAPI v2 document kubectl's client-side validation accepts."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from typing import Any

from kubesched import __version__
from kubesched.apiextensions.definitions import CustomResource
from kubesched.apiserver.resources import GROUPS, OFF_BY_DEFAULT, RESOURCES, SUBRESOURCE_INFO, Resource

# the release kubesched follows; the project's own version rides in gitCommit and buildDate
VERSION = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "36",
    "gitVersion": f"v1.37.2+kubesched-{__version__}",  # semver build metadata: this project's release
    "gitCommit": f"kubesched-{__version__}",
    "gitTreeState": "clean",
    "buildDate": "2026-11-25T00:00:00Z",
    "goVersion": "go1.26.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}

OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


Custom = Sequence[CustomResource]  # the versions the CRDs serve, besides the built-in resources
Off = frozenset[tuple[str, str]]  # built-in group versions not served (their feature gate is off)

# kube-aggregator's APIService priorities: a group's place in discovery (higher first) and a version's
# place in its group (higher first). Built-in ones from cmd/kube-apiserver/app/aggregator.go and
# pkg/controlplane/apiserver/aggregator.go (DefaultGenericAPIServicePriorities).
_PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("scheduling.k8s.io", "v1beta1"): (16600, 9),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("resource.k8s.io", "v1"): (16200, 21),
    # metrics-server's APIService (its deploy manifests), which serves metrics.k8s.io upstream
    ("metrics.k8s.io", "v1beta1"): (100, 100),
}
_CRD_PRIORITY = (1000, 100)  # crdregistration_controller.go: every CRD group version
_UNLISTED_PRIORITY = (1000, 15)  # aggregated/handler.go: a group version given no priority

# storageVersionHash is of the version kube-apiserver v1.37.2 stores a kind in, where that is not the
# version listed (its storage codec's choice, pkg/kubeapiserver/default_storage_factory_builder.go)
_STORED_AS = {
    ("events.k8s.io", "Event"): "v1",
    ("autoscaling", "HorizontalPodAutoscaler"): "autoscaling/v2",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "apiextensions.k8s.io/v1beta1",
    ("resource.k8s.io", "DeviceTaintRule"): "resource.k8s.io/v1beta2",
}


def _priority(group: str, version: str, custom: Custom) -> tuple[int, int]:
    if (group, version) in _PRIORITIES:
        return _PRIORITIES[group, version]
    if any(cr.resource.group == group and cr.resource.version == version for cr in custom):
        return _CRD_PRIORITY
    return _UNLISTED_PRIORITY


def _served_versions(custom: Custom, off: Off) -> list[tuple[str, str]]:
    builtin = [(g, v) for g, vs in GROUPS.items() for v in vs if g and (g, v) not in off]
    extra = {(cr.resource.group, cr.resource.version) for cr in custom if cr.resource.group not in GROUPS}
    return builtin + sorted(extra)


def _by_version_priority(group: str, versions: list[str], custom: Custom) -> list[str]:
    """A group's versions, preferred first: higher version priority, then Kubernetes version order
    (``version.CompareKubeAwareVersionStrings``)."""
    return sorted(versions, key=lambda v: (-_priority(group, v, custom)[1], version_priority(v)))


def _groups(custom: Custom, off: Off = OFF_BY_DEFAULT) -> dict[str, list[str]]:
    """The groups of ``/apis`` in kube-aggregator's order (``SortedByGroupAndVersion``: by group
    priority, ties by the APIService's name ``<version>.<group>``), each with its versions preferred
    first."""
    ordered = sorted(
        _served_versions(custom, off), key=lambda gv: (-_priority(gv[0], gv[1], custom)[0], f"{gv[1]}.{gv[0]}")
    )
    groups: dict[str, list[str]] = {}
    for g, v in ordered:
        groups.setdefault(g, []).append(v)
    return {g: _by_version_priority(g, vs, custom) for g, vs in groups.items()}


def _aggregated_groups(custom: Custom, off: Off) -> dict[str, list[str]]:
    """The groups of aggregated discovery (``calculateAPIGroupsLocked`` in aggregated/handler.go):
    by the highest group priority among a group's versions, ties by group name."""
    groups = _groups(custom, off)
    top = {g: max(_priority(g, v, custom)[0] for v in vs) for g, vs in groups.items()}
    return {g: groups[g] for g in sorted(groups, key=lambda g: (-top[g], g))}


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key: GA before beta before alpha, higher numbers first, others last by name."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor, "")


def _group(name: str, versions_of: list[str]) -> dict[str, Any]:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions_of]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> dict[str, Any]:
    groups = _groups(custom, off)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, v) for g, v in groups.items()]}


def api_group(name: str, custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> dict[str, Any] | None:
    groups = _groups(custom, off)
    if not name or name not in groups:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, groups[name])}


def _names(r: Resource, entry: dict[str, Any]) -> dict[str, Any]:
    """Add the short names and categories kubectl resolves (``po``, ``all``) to a discovery entry."""
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    return entry


# core/v1 bindings: a create-only resource beside pods/binding (pkg/registry/core/rest/storage_core.go)
_BINDINGS = Resource("", "v1", "bindings", "Binding", True, "binding", verbs=("create",), virtual=True)


def _resources(group: str, version: str, custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> list[Resource]:
    """A group version's resources by name, as the API installer registers their paths."""
    builtin = () if (group, version) in off else (*RESOURCES, _BINDINGS)
    every = (*builtin, *(cr.resource for cr in custom))
    return sorted((r for r in every if r.group == group and r.version == version), key=lambda r: r.plural)


def storage_version_hash(r: Resource, custom: Custom = ()) -> str:
    """``discovery.StorageVersionHash``: 8 bytes of the SHA-256 of the stored group/version/kind,
    base64; empty for what is not stored (reviews, bindings, component statuses)."""
    if r.virtual:
        return ""
    stored = _STORED_AS.get((r.group, r.kind)) or r.group_version
    if r.custom:
        storage = next((cr.storage_version for cr in custom if cr.resource is r), r.version)
        stored = f"{r.group}/{storage}"
    group, _, version = stored.rpartition("/")
    digest = hashlib.sha256(f"{group}/{version}/{r.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _subresources(r: Resource) -> list[tuple[str, str | None, str, str, tuple[str, ...]]]:
    """A resource's subresources, (name, kind, group, version, verbs) with the kind None when it is
    the resource's own: a built-in resource's by name (the installer's sorted paths), a CRD's status
    before scale (customresource_discovery_controller.go)."""
    return [(sub, *SUBRESOURCE_INFO[sub]) for sub in (r.subresources if r.custom else sorted(r.subresources))]


def resource_list(group: str, version: str, custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> dict[str, Any] | None:
    found = _resources(group, version, custom, off)
    if not found:
        return None
    items: list[dict[str, Any]] = []
    for r in found:
        entry = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        items.append(_names(r, entry))
        if svh := storage_version_hash(r, custom):
            entry["storageVersionHash"] = svh
        for sub, kind, g, v, verbs in _subresources(r):
            s: dict[str, Any] = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind or r.kind,
                "verbs": list(verbs),
            }
            if g:
                s.update(group=g, version=v)
            items.append(s)
    if not group:  # the legacy list has no apiVersion (the core group's installer leaves it unset)
        return {"kind": "APIResourceList", "groupVersion": version, "resources": items}
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}", "resources": items}


def _response_kind(r: Resource, kind: str | None = None, group: str = "", version: str = "") -> dict[str, str]:
    """Which kind a resource or subresource answers with. A built-in one names its group and version
    only when they are not the group version's (``eviction`` is policy/v1's); a CRD's always does
    (customresource_discovery_controller.go)."""
    if group:
        return {"group": group, "version": version, "kind": kind or r.kind}
    if r.custom:
        return {"group": r.group, "version": r.version, "kind": kind or r.kind}
    return {"group": "", "version": "", "kind": kind or r.kind}


def aggregated(legacy: bool, version: str, custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (legacy) or ``/apis``; ``version`` v2 or v2beta1."""
    groups = {"": ["v1"]} if legacy else _aggregated_groups(custom, off)
    items = []
    for g, group_versions in groups.items():
        versions = []
        for v in group_versions:
            resources = []
            for r in _resources(g, v, custom, off):
                entry = _names(
                    r,
                    {
                        "resource": r.plural,
                        "responseKind": _response_kind(r),
                        "scope": "Namespaced" if r.namespaced else "Cluster",
                        "singularResource": r.singular,
                        "verbs": list(r.verbs),
                    },
                )
                subs = [
                    {"subresource": sub, "responseKind": _response_kind(r, kind, sg, sv), "verbs": list(verbs)}
                    for sub, kind, sg, sv, verbs in _subresources(r)
                ]
                if subs:
                    entry["subresources"] = subs
                resources.append(entry)
            versions.append({"version": v, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": g} if g else {}, "versions": versions})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
