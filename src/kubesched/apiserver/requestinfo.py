"""What a request asks to do, as RBAC sees it (``endpoints/request/requestinfo.go``): a resource
request (verb, API group and version, resource, subresource, namespace, name) for the paths
under ``/api`` and ``/apis`` that name a resource, else a non-resource request (the lowercased
method and the path)."""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.apiserver.rbac import Attributes, UserInfo

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def _true(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return Attributes(user, method.lower(), False, path=path or "/")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method in ("GET", "HEAD"):
        verb = "get" if name else ("watch" if _true(query.get("watch")) else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return Attributes(
        user,
        verb,
        True,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
        path=path,
    )
