"""CEL rules compiled off the API server's event loop. kube-apiserver compiles a CRD's rules on the
writing request's own goroutine, so a slow compile holds that request alone; here one event loop
serves every client, and celpy parses a rule of 100,000 code points (cel-go's limit) in over a
second. A write that brings rules not compiled yet (a CRD, or a custom object after a restart)
compiles them first on one worker thread; the loop serves the others meanwhile (the thread gives
up the interpreter every few milliseconds), and the write then finds every rule in the caches."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubesched.apiextensions.cel import crd, runtime, syntax

_KEYS = ("rule", "messageExpression")
_READY_SIZE = 4096  # as compile_rule's cache
_ready: dict[str, None] = {}  # the texts compiled, oldest first
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def rule_texts(doc: Any) -> list[str]:
    """Every rule and messageExpression a CRD, a schema or a patch of one holds (a JSON patch's
    value at a path ending in ``/rule`` or ``/messageExpression`` too), without recursion."""
    found: list[str] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _KEYS and isinstance(value, str):
                    found.append(value)
                elif isinstance(value, dict | list):
                    stack.append(value)
            path, value = node.get("path"), node.get("value")
            if isinstance(path, str) and path.rsplit("/", 1)[-1] in _KEYS and isinstance(value, str):
                found.append(value)
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
    return found


def schemas(crd_doc: Any) -> list[dict[str, Any]]:
    """The openAPIV3Schema of each version of a CRD's body."""
    spec = crd_doc.get("spec") if isinstance(crd_doc, dict) else None
    versions = spec.get("versions") if isinstance(spec, dict) else None
    out = []
    for v in versions if isinstance(versions, list) else []:
        schema = ((v.get("schema") or {}) if isinstance(v, dict) else {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            out.append(schema)
    return out


_by_schema: dict[int, tuple[Any, list[str]]] = {}  # a served schema's texts, by the schema's id


def schema_texts(schema: Any) -> list[str]:
    """``rule_texts`` of a served custom resource's schema, found once per schema."""
    hit = _by_schema.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    if len(_by_schema) > _READY_SIZE:
        _by_schema.clear()
    texts = rule_texts(schema)
    _by_schema[id(schema)] = (schema, texts)
    return texts


def ready(texts: Iterable[str]) -> bool:
    """Whether every text has been compiled here already."""
    return all(t in _ready for t in texts)


def compile_all(texts: list[str], checked: list[dict[str, Any]]) -> None:
    """Parse, compile and type each text (errors are kept by the caches, to be reported by the
    write), and check each schema's rules and costs as a CRD write does (``crd.cel_errors``).

    The collector is paused meanwhile: parsing 100,000 code points makes a million objects, and
    the full collections they set off would hold the interpreter, and so the loop, for a tenth of
    a second each (what the parse leaves is freed by reference counting). What stays (the ASTs,
    100,000 objects for such a rule) is then moved to the oldest generation at once (``freeze``
    then ``unfreeze``, each a splice of lists), not walked by the young collections that would
    otherwise follow, 70-200 ms each; cyclic garbage moved with it waits for a full collection."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        for text in texts:
            # a failure is cached too, for the write to report: the AST's own failure is asked for
            # by the type check and the cost model, and a rule that parses may not compile
            with contextlib.suppress(Exception):
                runtime.compile_rule(text)
            with contextlib.suppress(Exception):
                syntax.parse(text)
            with _lock:
                _ready[text] = None
                while len(_ready) > _READY_SIZE:
                    del _ready[next(iter(_ready))]
        for schema in checked:
            with contextlib.suppress(Exception):  # the write's own validation meets it and answers
                crd.cel_errors(schema, crd.SCHEMA_PATH)
    finally:
        syntax.parse_tree.cache_clear()  # the compiled rules and their ASTs are what stays
        if gc.get_freeze_count() == 0:  # (a process that froze its start-up state keeps it so)
            gc.freeze()
            gc.unfreeze()
        if collecting:
            gc.enable()


async def compiled_off_loop(texts: list[str], checked: list[dict[str, Any]] | None = None) -> None:
    """``compile_all`` on the worker thread, unless every text is compiled already and there is no
    schema to check."""
    global _pool
    if not checked and ready(texts):
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cel-compile")
    await asyncio.get_running_loop().run_in_executor(_pool, compile_all, texts, checked or [])
