"""kube-apiserver v1.37.2's OpenAPI documents as it serves them (``scripts/gen_openapi.py`` records
them from the binary, serving scheduling.k8s.io/v1beta1: with the default flags its documents are the
same less that group version), and the template CRDs' documents."""

from __future__ import annotations

import json
import lzma
from functools import cache
from pathlib import Path
from typing import Any

_DATA = Path(__file__).resolve().parent / "recorded.json.xz"


@cache
def _recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(lzma.decompress(_DATA.read_bytes()))
    return data


def v3_paths() -> list[str]:
    """The documents ``/openapi/v3`` lists."""
    return list(_recorded()["v3"])


def v3_text(path: str) -> str | None:
    """The JSON text kube-apiserver serves at ``/openapi/v3/<path>``."""
    text: str | None = _recorded()["v3"].get(path)
    return text


def v3_document(path: str) -> dict[str, Any] | None:
    text = v3_text(path)
    return None if text is None else dict(json.loads(text))


def v2_document() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_recorded()["v2"])
    return doc


def crd_template(namespaced: bool) -> dict[str, Any]:
    """The template CRD's ``v3`` document text and ``v2`` paths and definitions."""
    template: dict[str, Any] = _recorded()["crd"]["Namespaced" if namespaced else "Cluster"]
    return template
