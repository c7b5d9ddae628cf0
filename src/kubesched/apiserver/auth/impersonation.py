"""User impersonation (``apiserver/pkg/endpoints/filters/impersonation.go``): the ``Impersonate-User``,
``Impersonate-Group``, ``Impersonate-Uid`` and ``Impersonate-Extra-<key>`` headers (what ``kubectl
--as``, ``--as-group`` and ``--as-uid`` send) make a request act as another user, when the
requester may ``impersonate`` each of them: ``users`` (or ``serviceaccounts`` in their namespace),
``groups``, ``uids`` and ``userextras/<key>``. A denial is kube-apiserver's 403 for the first
impersonation refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from kubesched.api.errors import BadRequest, Forbidden
from kubesched.apiserver.auth.rbac import Attributes, Authorizer, UserInfo, forbidden_message

USER = "Impersonate-User"
GROUP = "Impersonate-Group"
UID = "Impersonate-Uid"
EXTRA_PREFIX = "Impersonate-Extra-"
SA_PREFIX = "system:serviceaccount:"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
AUTHN_GROUP = "authentication.k8s.io"


def _requests(headers: Any) -> tuple[str, list[str], str, dict[str, list[str]]] | None:
    """The impersonation the headers ask for, or None when they ask for none."""
    user = headers.get(USER, "")
    groups = list(headers.getall(GROUP, [])) if hasattr(headers, "getall") else []
    uid = headers.get(UID, "")
    extra: dict[str, list[str]] = {}
    for key in headers:
        if key.lower().startswith(EXTRA_PREFIX.lower()):
            # the key is percent-encoded and case-insensitive on the wire (lowercased, as upstream)
            name = unquote(key[len(EXTRA_PREFIX) :]).lower()
            values = headers.getall(key, []) if hasattr(headers, "getall") else [headers[key]]
            extra.setdefault(name, [])
            extra[name] += [v for v in values if v not in extra[name]]
    if not user and not groups and not uid and not extra:
        return None
    if not user:  # buildImpersonationRequests
        asked = [f"Group {g}" for g in groups] + [f"UID {uid}"] * bool(uid) + [f"Extra {k}" for k in extra]
        raise BadRequest(f"requested [{', '.join(asked)}] without impersonating a user")
    return user, groups, uid, extra


def impersonate(headers: Mapping[str, str], requester: UserInfo, authorizer: Authorizer) -> UserInfo:
    """The user the request acts as: ``requester`` itself without impersonation headers, else the
    impersonated user once every part of it is authorized for ``requester``."""
    asked = _requests(headers)
    if asked is None:
        return requester
    name, groups, uid, extra = asked
    checks: list[Attributes] = []
    if name.startswith(SA_PREFIX) and name.count(":") == 3:
        namespace, sa = name[len(SA_PREFIX) :].split(":", 1)
        checks.append(_attrs(requester, "serviceaccounts", sa, namespace=namespace))
    else:
        checks.append(_attrs(requester, "users", name))
    checks += [_attrs(requester, "groups", g) for g in groups]
    if uid:
        checks.append(_attrs(requester, "uids", uid, group=AUTHN_GROUP))
    for key, values in extra.items():
        checks += [_attrs(requester, "userextras", v, group=AUTHN_GROUP, sub=key) for v in values]
    for attrs in checks:
        if not authorizer.allowed(attrs):
            qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
            details: dict[str, Any] = {"name": attrs.name, "kind": attrs.resource}
            if attrs.api_group:
                details["group"] = attrs.api_group
            raise Forbidden(forbidden_message(attrs, qualified), details=details)
    if not groups and name.startswith(SA_PREFIX) and name.count(":") == 3:
        namespace = name[len(SA_PREFIX) :].split(":", 1)[0]
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    if name != ANONYMOUS and not any(g in (AUTHENTICATED, UNAUTHENTICATED) for g in groups):
        groups.append(AUTHENTICATED)
    return UserInfo(name, uid=uid, groups=tuple(groups), extra={k: tuple(v) for k, v in extra.items()})


def _attrs(
    requester: UserInfo, resource: str, name: str, *, namespace: str = "", group: str = "", sub: str = ""
) -> Attributes:
    return Attributes(
        requester,
        "impersonate",
        True,
        api_group=group,
        api_version="v1",
        resource=resource,
        subresource=sub,
        namespace=namespace,
        name=name,
    )
