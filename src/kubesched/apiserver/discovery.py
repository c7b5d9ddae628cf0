"""Discovery and version documents: ``/version``, ``/api``, ``/apis``, per group-version
``APIResourceList`` and aggregated discovery (``apidiscovery.k8s.io`` v2 and v2beta1), and the
empty OpenAPI v2 document kubectl's client-side validation accepts."""

from __future__ import annotations

from typing import Any

from kubesched import __version__
from kubesched.apiserver.resources import GROUPS, RESOURCES, SUBRESOURCE_INFO, Resource

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


def _group(name: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in GROUPS[name]]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in GROUPS if g]}


def api_group(name: str) -> dict[str, Any] | None:
    if not name or name not in GROUPS:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


def _names(r: Resource, entry: dict[str, Any]) -> dict[str, Any]:
    """Add the short names and categories kubectl resolves (``po``, ``all``) to a discovery entry."""
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    return entry


def _resources(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES if r.group == group and r.version == version]


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    found = _resources(group, version)
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
        for sub in r.subresources:
            kind, g, v, verbs = SUBRESOURCE_INFO[sub]
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
    if group == "" and version == "v1":
        items.append(
            {"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding", "verbs": ["create"]}
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }


def aggregated(legacy: bool, version: str) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (legacy) or ``/apis``; ``version`` v2 or v2beta1."""
    groups = [""] if legacy else [g for g in GROUPS if g]
    items = []
    for g in groups:
        versions = []
        for v in GROUPS[g]:
            resources = []
            for r in _resources(g, v):
                entry = _names(
                    r,
                    {
                        "resource": r.plural,
                        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                        "scope": "Namespaced" if r.namespaced else "Cluster",
                        "singularResource": r.singular,
                        "verbs": list(r.verbs),
                    },
                )
                subs = []
                for sub in r.subresources:
                    kind, sg, sv, verbs = SUBRESOURCE_INFO[sub]
                    subs.append(
                        {
                            "subresource": sub,
                            "responseKind": {
                                "group": sg if kind else r.group,
                                "version": sv or r.version,
                                "kind": kind or r.kind,
                            },
                            "verbs": list(verbs),
                        }
                    )
                if subs:
                    entry["subresources"] = subs
                resources.append(entry)
            versions.append({"version": v, "freshness": "Current", "resources": resources})
        items.append({"metadata": {"name": g, "creationTimestamp": None}, "versions": versions})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
