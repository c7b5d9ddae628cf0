"""The resources the embedded API server serves (``api.kinds``), indexed by path and kind, with
the groups' versions and how each subresource is offered in discovery."""

from __future__ import annotations

from kubesched.api.kinds import ALL_VERBS, RESOURCES, Resource

__all__ = ["ALL_VERBS", "BY_KIND", "BY_PATH", "GROUPS", "RESOURCES", "SUBRESOURCE_INFO", "Resource"]

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
