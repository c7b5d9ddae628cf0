"""Load manifests (multi-document YAML or JSON files, or directories of them) into objects.

Every problem is reported as an InputError naming the file, the object and the field; unknown
kinds are kept and warned about once per kind.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kubesched.cluster.store import is_namespaced
from kubesched.errors import InputError, one_line

try:
    YAML_LOADER: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    YAML_LOADER = yaml.SafeLoader

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
MAX_FILE_BYTES = 256 * 1024 * 1024
# Our own nesting limit for manifests, below every parser's: libyaml 0.2.6 (in PyYAML 6.0.4's
# wheels) refuses flow collections nested 1,000 deep, older builds overflowed the C stack past
# about 20,000, and CPython's json decoder recurses once per level under a recursion limit of
# 1,000. Enforced by our own scan, so the answer never depends on the installed parser.
MAX_NESTING_DEPTH = 500
MAX_ALIAS_EXPANSION = 10_000_000


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
        ns = meta.get("namespace") or ("default" if is_namespaced(self.kind) else None)
        name = meta.get("name") or f"<document {self.index}>"
        return f"{self.kind} {ns}/{name}" if ns else f"{self.kind} {name}"


@dataclass(slots=True)
class LoadResult:
    manifests: list[Manifest] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _files(paths: Iterable[str]) -> list[Path | None]:
    """The files to read, in order; ``None`` stands for standard input (``-``)."""
    out: list[Path | None] = []
    for p in paths:
        if p == STDIN:
            out.append(None)
            continue
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(f for f in path.rglob("*") if f.is_file() and f.suffix in SUFFIXES))
        elif path.is_file():
            out.append(path)
        else:
            raise InputError("no such file or directory", file=str(p))
    return out


def _read(path: Path | None) -> tuple[str, str]:
    """(name for messages, text), refusing files over MAX_FILE_BYTES before reading them whole."""
    name = "<stdin>" if path is None else str(path)
    try:
        if path is None:
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with path.open("rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(
                f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; split it into several files", file=name
            )
        return name, data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=name) from None


def _yaml_depth_bound(text: str) -> int:
    """An upper bound of a YAML stream's nesting, cheap to compute: flow collections cannot nest
    deeper than their opening brackets, block collections than twice the indentation plus the
    compact ``- `` and ``? `` entries of one line."""
    flow = text.count("[") + text.count("{")
    if flow > MAX_NESTING_DEPTH:
        return flow
    lines = text.splitlines()
    indent = max((len(line) - len(line.lstrip(" ")) for line in lines), default=0)
    compact = max((line.count("-") + line.count("?") for line in lines), default=0)
    return flow + 2 * indent + compact + 2


def _too_deep(name: str, line: int, column: int) -> InputError:
    return InputError(f"nested more than {MAX_NESTING_DEPTH} levels deep at line {line} column {column}", file=name)


def check_yaml_structure(text: str, name: str) -> None:
    """Refuse, before anything composes it, a stream nested deeper than MAX_NESTING_DEPTH or whose
    aliases expand it past MAX_ALIAS_EXPANSION nodes (a "billion laughs": SafeLoader shares the
    aliased node, but everything that walks the objects afterwards would not). Only streams
    whose cheap depth bound is high, or that have anchors and aliases, are scanned event by
    event; the event parser keeps no stack of its own, so the scan cannot overflow one."""
    if _yaml_depth_bound(text) <= MAX_NESTING_DEPTH and not ("&" in text and "*" in text):
        return
    starts = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    sizes: dict[str, int] = {}  # anchor -> nodes its value expands to
    stack: list[list[Any]] = [[0, None]]  # per open collection: [expanded nodes, anchor]
    try:
        for event in yaml.parse(text, Loader=YAML_LOADER):
            if isinstance(event, starts):
                stack.append([1, event.anchor])
                if len(stack) - 1 > MAX_NESTING_DEPTH:
                    mark = event.start_mark
                    raise _too_deep(name, mark.line + 1 if mark else 0, mark.column + 1 if mark else 0)
                continue
            if isinstance(event, ends):
                size, anchor = stack.pop()
            elif isinstance(event, yaml.ScalarEvent):
                size, anchor = 1, event.anchor
            elif isinstance(event, yaml.AliasEvent):
                size, anchor = sizes.get(event.anchor or "", 1), None
            else:
                continue
            if anchor:
                sizes[anchor] = size
            stack[-1][0] += size
            if stack[0][0] + sum(frame[0] for frame in stack[1:]) > MAX_ALIAS_EXPANSION:
                raise InputError(f"aliases expand the document past {MAX_ALIAS_EXPANSION:,} nodes", file=name)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if "nesting depth" in str(getattr(exc, "problem", "")) and mark is not None:
            # a parser whose own cap is lower than ours: still our message, at its position
            raise _too_deep(name, mark.line + 1, mark.column + 1) from None
        return  # malformed: the loader reports it with its position


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def json_depth(data: bytes) -> int:
    """How deep a JSON text nests: the running count of brackets outside strings (exact for valid
    JSON, and for invalid JSON how deep a decoder gets before it fails), in one numpy pass."""
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING_DEPTH:
        return 0
    codes = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    step = np.isin(codes, _OPENERS).astype(np.int32) - np.isin(codes, _CLOSERS).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


_OPENERS = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSERS = np.frombuffer(b"]}", dtype=np.uint8)


def _documents(path: Path | None) -> tuple[str, list[Any]]:
    name, text = _read(path)
    if path is not None and path.suffix == ".json":
        if json_depth(text.encode()) > MAX_NESTING_DEPTH:
            raise InputError(f"nested more than {MAX_NESTING_DEPTH} levels deep", file=name)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=name) from None
        return name, [doc]
    check_yaml_structure(text, name)
    try:
        return name, list(yaml.load_all(text, Loader=YAML_LOADER))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML{where}: {problem}", file=name) from None
    except RecursionError:  # not reached below MAX_NESTING_DEPTH; kept so no parser change can crash us
        raise InputError(f"nested more than {MAX_NESTING_DEPTH} levels deep", file=name) from None


def load_paths(paths: Iterable[str]) -> LoadResult:
    """Read every document; ``List`` kinds are flattened; ``-`` reads standard input."""
    result = LoadResult()
    for path in _files(paths):
        name, docs = _documents(path)
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise InputError(
                    f"expected a Kubernetes object, got {type(doc).__name__}", file=name, obj=f"<document {i}>"
                )
            items = doc.get("items") if str(doc.get("kind", "")).endswith("List") else [doc]
            if not isinstance(items, list):
                raise InputError("expected a list", file=name, obj=f"<document {i}>", field="items")
            for item in items or []:
                if not isinstance(item, dict) or not item.get("kind"):
                    raise InputError("Required value: kind", file=name, obj=f"<document {i}>", field="kind")
                if not isinstance(item["kind"], str):
                    raise InputError("expected a string", file=name, obj=f"<document {i}>", field="kind")
                meta = item.get("metadata")
                if meta is not None and not isinstance(meta, dict):
                    raise InputError("expected an object", file=name, obj=f"<document {i}>", field="metadata")
                result.manifests.append(Manifest(item, name, i))
    return result


def warn(message: str) -> None:
    print(f"kubesched: warning: {one_line(message)}", file=sys.stderr)
