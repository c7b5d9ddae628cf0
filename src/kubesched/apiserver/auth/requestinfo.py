"""What a request asks to do, as RBAC sees it (``endpoints/request/requestinfo.go``): a resource
request (verb, API group and version, resource, subresource, namespace, name) for the paths
under ``/api`` and ``/apis`` that name a resource, else a non-resource request (the lowercased
method and the path). A namespace's ``status`` and ``finalize`` are its subresources; a list or
watch whose field selector names one object (``metadata.name=``) is about that name."""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.validation import path_segment_errors
from kubesched.apiserver.auth.rbac import Attributes, UserInfo
from kubesched.apiserver.handlers.request import parse_bool

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
NAMESPACE_SUBRESOURCES = ("status", "finalize")


def _selected_name(field_selector: str | None) -> str:
    """``RequiresExactMatch("metadata.name")`` of a field selector, when it is a valid name."""
    for term in (field_selector or "").split(","):
        key, op, value = term.partition("==") if "==" in term else term.partition("=")
        if op and key.strip() == "metadata.name" and not key.strip().endswith("!"):
            name = value.strip()
            return name if name and not path_segment_errors(name) else ""
    return ""


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
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method in ("GET", "HEAD"):
        verb = "get" if name else ("watch" if parse_bool(query.get("watch")) else "list")
        if not name:
            name = _selected_name(query.get("fieldSelector"))
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
