"""The resources the embedded API server serves (``api.kinds``), indexed by path and kind, with
the groups' versions, how each subresource is offered in discovery, and the group versions served
only with a feature gate."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api.kinds import ALL_VERBS, RESOURCES, Resource

__all__ = [
    "ALL_VERBS",
    "BY_KIND",
    "BY_PATH",
    "GATED",
    "GROUPS",
    "OFF_BY_DEFAULT",
    "RESOURCES",
    "SUBRESOURCE_INFO",
    "Resource",
    "disabled_versions",
]

BY_PATH: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES if (not r.group or r.kind != "Event") and not r.virtual}
GROUPS: dict[str, list[str]] = {}
for _r in RESOURCES:
    GROUPS.setdefault(_r.group, [])
    if _r.version not in GROUPS[_r.group]:
        GROUPS[_r.group].append(_r.version)

# how each subresource is offered in discovery: (kind, group, version, verbs)
SUBRESOURCE_INFO: dict[str, tuple[str | None, str, str, tuple[str, ...]]] = {
    "status": (None, "", "", ("get", "patch", "update")),
    "resize": (None, "", "", ("get", "patch", "update")),
    "ephemeralcontainers": (None, "", "", ("get", "patch", "update")),
    "binding": ("Binding", "", "v1", ("create",)),
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "scale": ("Scale", "autoscaling", "v1", ("get", "patch", "update")),
    "finalize": (None, "", "", ("update",)),
    "log": ("Pod", "", "v1", ("get",)),
    "exec": ("PodExecOptions", "", "v1", ("create", "get")),
    "attach": ("PodAttachOptions", "", "v1", ("create", "get")),
    "portforward": ("PodPortForwardOptions", "", "v1", ("create", "get")),
    "token": ("TokenRequest", "authentication.k8s.io", "v1", ("create",)),
}

# group versions kube-apiserver v1.37.2 serves only when their feature gate is on (and, being beta,
# asked for with --runtime-config): workload-aware scheduling's Workload and PodGroup. Off, a CRD's
# kind of the same name (scheduler-plugins' PodGroup) is what kubectl finds
GATED: dict[tuple[str, str], str] = {("scheduling.k8s.io", "v1beta1"): "GenericWorkload"}
GroupVersions = frozenset[tuple[str, str]]


def disabled_versions(enabled: Callable[[str], bool]) -> GroupVersions:
    """The gated group versions whose gate is off."""
    return frozenset(gv for gv, gate in GATED.items() if not enabled(gate))


OFF_BY_DEFAULT: GroupVersions = disabled_versions(lambda gate: False)
