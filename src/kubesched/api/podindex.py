"""Pods by node name, kept from the pods a consumer lists and watches: client-go's Indexer with
the ``nodeName`` index kube-controller-manager and the kubelet use to find a node's pods
without listing every pod."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PodsByNode:
    """The (namespace, name) of each bound pod under its node (a bound pod never moves)."""

    def __init__(self) -> None:
        self._on: dict[str, dict[tuple[str, str], None]] = {}

    def track(self, pod: Mapping[str, Any], *, deleted: bool) -> str | None:
        """Index a listed or watched pod (``deleted``: it is gone); its node's name, if bound."""
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return None
        meta = pod.get("metadata") or {}
        key = (meta.get("namespace") or "default", meta.get("name") or "")
        if not deleted:
            self._on.setdefault(node, {})[key] = None
            return str(node)
        on = self._on.get(node)
        if on is not None:
            on.pop(key, None)
            if not on:
                del self._on[node]
        return str(node)

    def keys(self, node: str) -> list[tuple[str, str]]:
        """The node's pods as (namespace, name), a copy the caller may change the store under."""
        return list(self._on.get(node, ()))
