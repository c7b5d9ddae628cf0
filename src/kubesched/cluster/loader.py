"""Load manifests (multi-document YAML or JSON files, or directories of them) into objects.

Every problem is reported as an InputError naming the file, the object and the field; unknown
kinds are kept and warned about once per kind.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubesched.errors import InputError

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(slots=True)
class Manifest:
    obj: dict[str, Any]
    file: str
    index: int

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")

    @property
    def ref(self) -> str:
        meta = self.obj.get("metadata") or {}
        ns = meta.get("namespace")
        name = meta.get("name") or f"<document {self.index}>"
        return f"{self.kind} {ns}/{name}" if ns else f"{self.kind} {name}"


@dataclass(slots=True)
class LoadResult:
    manifests: list[Manifest] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _files(paths: Iterable[str]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(f for f in path.rglob("*") if f.is_file() and f.suffix in SUFFIXES))
        elif path.is_file():
            out.append(path)
        else:
            raise InputError("no such file or directory", file=str(p))
    return out


def _documents(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=str(path)) from None
    if path.suffix == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=str(path)
            ) from None
        return [doc]
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML{where}: {problem}", file=str(path)) from None


def load_paths(paths: Iterable[str]) -> LoadResult:
    """Read every document; ``List`` kinds are flattened."""
    result = LoadResult()
    for path in _files(paths):
        for i, doc in enumerate(_documents(path)):
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise InputError(
                    f"expected a Kubernetes object, got {type(doc).__name__}", file=str(path), obj=f"<document {i}>"
                )
            items = doc.get("items") if str(doc.get("kind", "")).endswith("List") else [doc]
            for item in items or []:
                if not isinstance(item, dict) or not item.get("kind"):
                    raise InputError("Required value: kind", file=str(path), obj=f"<document {i}>", field="kind")
                meta = item.get("metadata")
                if meta is not None and not isinstance(meta, dict):
                    raise InputError("expected an object", file=str(path), obj=f"<document {i}>", field="metadata")
                result.manifests.append(Manifest(item, str(path), i))
    return result


def warn(message: str) -> None:
    print(f"kubesched: warning: {message}", file=sys.stderr)
