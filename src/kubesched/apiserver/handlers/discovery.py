"""Discovery and version documents: ``/version``, ``/api``, ``/apis``, per group-version
``APIResourceList`` and aggregated discovery (``apidiscovery.k8s.io`` v2 and v2beta1), and the
empty OpenAPI v2 document kubectl's client-side validation accepts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kubesched import __version__
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


Custom = Sequence[Resource]  # the custom resources the CRDs serve, besides the built-in ones
Off = frozenset[tuple[str, str]]  # built-in group versions not served (their feature gate is off)


def _groups(custom: Custom, off: Off = OFF_BY_DEFAULT) -> dict[str, list[str]]:
    """Every group's versions, preferred first: the built-in groups, then the CRDs' groups with
    their versions in Kubernetes version priority (``version.CompareKubeAwareVersionStrings``)."""
    groups = {g: [v for v in vs if (g, v) not in off] for g, vs in GROUPS.items()}
    groups = {g: vs for g, vs in groups.items() if vs}
    extra: dict[str, list[str]] = {}
    for r in custom:
        if r.group not in GROUPS and r.version not in extra.setdefault(r.group, []):
            extra[r.group].append(r.version)
    for g in sorted(extra):
        groups[g] = sorted(extra[g], key=version_priority)
    return groups


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
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, v) for g, v in groups.items() if g]}


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


def _resources(group: str, version: str, custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> list[Resource]:
    builtin = () if (group, version) in off else RESOURCES
    return [r for r in (*builtin, *custom) if r.group == group and r.version == version]


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


def aggregated(legacy: bool, version: str, custom: Custom = (), off: Off = OFF_BY_DEFAULT) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (legacy) or ``/apis``; ``version`` v2 or v2beta1."""
    every = _groups(custom, off)
    groups = [""] if legacy else [g for g in every if g]
    items = []
    for g in groups:
        versions = []
        for v in every[g]:
            resources = []
            for r in _resources(g, v, custom, off):
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
