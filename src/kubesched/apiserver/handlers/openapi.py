"""``/openapi/v2`` and ``/openapi/v3``: kube-apiserver v1.37.2's own documents (``openapi/recorded.py``)
less the paths of what this server does not serve (``openapi/prune.py``; scheduling.k8s.io/v1beta1
while GenericWorkload is off), with each established CRD's (``openapi/custom.py``); encoded as Go's
encoding/json writes them, and each ``/openapi/v3`` entry hashed as kube-openapi's handler3 does
(the SHA-512 of the document's bytes), so a document served unchanged is byte for byte upstream's."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from kubesched.apiextensions.definitions import CustomResource
from kubesched.apiserver.handlers import discovery
from kubesched.apiserver.openapi import custom as custom_docs
from kubesched.apiserver.openapi import recorded
from kubesched.apiserver.openapi.prune import keep_paths, resource_of
from kubesched.apiserver.resources import GROUPS, OFF_BY_DEFAULT, GroupVersions

# non-resource paths kube-apiserver documents and this server serves (not /logs, not the service
# account issuer's /.well-known/openid-configuration and /openid/v1/jwks: docs/cluster.md)
_NON_RESOURCE = ("/api/", "/apis/", "/version/")
_GO_ESCAPED = ("<", ">", "&", "\u2028", "\u2029")  # encoding/json's HTML-safe escapes


def encode(doc: Any) -> bytes:
    """Go's ``json.Marshal`` of a document: compact, keys in the order held, ``<``, ``>`` and ``&``
    escaped as ``\\u003c``, ``\\u003e``, ``\\u0026`` (and U+2028, U+2029)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    for raw in _GO_ESCAPED:
        text = text.replace(raw, f"\\u{ord(raw):04x}")
    return text.encode()


@cache
def _served(off: GroupVersions) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """The built-in group versions discovery lists, and each ``(group version, resource)`` in them."""
    versions: set[str] = set()
    resources: set[tuple[str, str]] = set()
    for group, gv_list in GROUPS.items():
        for version in gv_list:
            listed = discovery.resource_list(group, version, (), off)
            if listed is not None:
                versions.add(listed["groupVersion"])
                resources |= {(listed["groupVersion"], r["name"]) for r in listed["resources"]}
    return frozenset(versions), frozenset(resources)


def _path_served(path: str, off: GroupVersions) -> bool:
    """Whether this server serves a documented path: a listed resource's, a served group's or group
    version's discovery, or one of the non-resource paths it has."""
    versions, resources = _served(off)
    resource = resource_of(path)
    if resource is not None:
        return resource in resources
    if path in _NON_RESOURCE:
        return True
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        return "/".join(parts[1:]) in versions
    if parts[0] == "apis" and len(parts) == 2:
        return any(v.startswith(parts[1] + "/") for v in versions)
    if parts[0] == "apis" and len(parts) == 3:
        return f"{parts[1]}/{parts[2]}" in versions
    return False


def _index_served(entry: str, off: GroupVersions) -> bool:
    """Whether a ``/openapi/v3`` entry (``api/v1``, ``apis/apps``, ``version``) is served here."""
    return _path_served(f"/{entry}/", off)


@cache
def _builtin_v3(entry: str, off: GroupVersions) -> bytes | None:
    if not _index_served(entry, off):
        return None
    doc = recorded.v3_document(entry)
    if doc is None:
        return None
    kept = keep_paths(doc, lambda p: _path_served(p, off))
    if kept is doc:
        text = recorded.v3_text(entry)
        assert text is not None
        return text.encode()
    return encode(kept)


def _custom_by_version(custom: Sequence[CustomResource]) -> dict[str, list[CustomResource]]:
    out: dict[str, list[CustomResource]] = {}
    for cr in custom:
        out.setdefault(f"apis/{cr.resource.group}/{cr.resource.version}", []).append(cr)
    return out


def _digest(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest().upper()


@cache
def _builtin_index(off: GroupVersions) -> dict[str, str]:
    out = {}
    for entry in recorded.v3_paths():
        body = _builtin_v3(entry, off)
        if body is not None:
            out[entry] = _digest(body)
    return out


# the last documents built for a set of CRDs, by what else they depend on: the registry hands out the
# same CustomResource objects until a CRD changes, so a build is reused while they are the same ones
_LAST: dict[Any, tuple[tuple[CustomResource, ...], bytes]] = {}


def _memo(key: Any, custom: Sequence[CustomResource], build: Callable[[], bytes]) -> bytes:
    last = _LAST.get(key)
    if last is not None and len(last[0]) == len(custom) and all(a is b for a, b in zip(last[0], custom, strict=True)):
        return last[1]
    body = build()
    _LAST[key] = (tuple(custom), body)
    return body


def _custom_v3(entry: str, served: list[CustomResource]) -> bytes:
    return _memo(("v3", entry), served, lambda: encode(custom_docs.v3_document(served)))


def v3_index(custom: Sequence[CustomResource] = (), off: GroupVersions = OFF_BY_DEFAULT) -> dict[str, Any]:
    """``/openapi/v3``: each document's relative URL with the hash of its content, by path."""
    digests = dict(_builtin_index(off))
    for entry, served in _custom_by_version(custom).items():
        if entry not in digests:
            digests[entry] = _digest(_custom_v3(entry, served))
    return {"paths": {e: {"serverRelativeURL": f"/openapi/v3/{e}?hash={d}"} for e, d in sorted(digests.items())}}


def v3_lookup(
    rest: list[str], custom: Sequence[CustomResource] = (), off: GroupVersions = OFF_BY_DEFAULT
) -> bytes | None:
    """The document at ``/openapi/v3/<rest>``, a custom resource's group version included, or None."""
    entry = "/".join(rest)
    body = _builtin_v3(entry, off)
    if body is not None:
        return body
    served = _custom_by_version(custom).get(entry)
    return _custom_v3(entry, served) if served else None


@cache
def _builtin_v2(off: GroupVersions) -> dict[str, Any]:
    return keep_paths(recorded.v2_document(), lambda p: _path_served(p, off))


def v2_document(custom: Sequence[CustomResource] = (), off: GroupVersions = OFF_BY_DEFAULT) -> bytes:
    """``/openapi/v2`` (JSON): the built-in paths and definitions served, and every CRD's."""
    return _memo(("v2", off), custom, lambda: encode(custom_docs.merged_v2(_builtin_v2(off), list(custom))))
