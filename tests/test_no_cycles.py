"""The per-pod paths leave nothing for the cyclic collector: what a pod's scheduling, binding,
status writes and deletion allocate is freed by reference counting when it is done. A closure in
a compiled module holds its environment and the environment the closure, so a nested function on
such a path left a cycle per pod, and over a run the collector's walks of everything that piled
up between collections cost a fifth of the scheduler's CPU (docs/benchmarks.md)."""

from __future__ import annotations

import ast
import gc
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers import make_node, make_pod
from kubesched.testing import Cluster


def _ours(o: object) -> bool:
    if isinstance(o, types.FunctionType):
        return o.__module__.startswith("kubesched")
    return type(o).__module__.startswith("kubesched")


@contextmanager
def cyclic_garbage() -> Iterator[list[str]]:
    """The kubesched objects (and functions) the collector finds unreachable in the block."""
    found: list[str] = []
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(sorted({type(o).__qualname__ for o in gc.garbage if _ours(o)}))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_pods_life_in_process_leaves_no_cycles() -> None:
    """Bound (pods/binding), unschedulable (its PodScheduled condition written), results written,
    deleted gracefully (marked, then ended by the hollow kubelet), and a preemption's deletion."""
    c = Cluster(make_node("n1", cpu="2"), results=True, workloads=True)
    with cyclic_garbage() as found:
        c.create(make_pod("a", cpu="1"), make_pod("b", cpu="1"), make_pod("big", cpu="4"))
        c.settle()
        c.advance(1)
        c.store.delete("Pod", "default", "a")
        c.advance(40)
        urgent = make_pod("urgent", cpu="2")
        urgent["spec"]["priority"] = 1000
        c.create(urgent)
        c.settle()
        c.advance(40)
    assert c.store.try_get("Pod", "default", "a") is None
    assert c.node_of("big") is None
    assert c.node_of("urgent") == "n1"  # b was preempted for it
    assert found == []


# nested functions left in compiled modules: each runs once per profile or per node change, not per
# pod (events_to_register builds the queueing hints when a profile starts; metrics wraps plugins once;
# the queue's comparator is made once; the node table grows and drops columns on node changes)
SETUP_CLOSURES = {
    "kubesched.scheduler.metrics": {"framework_recorders"},
    "kubesched.scheduler.queue": {"__init__"},
    "kubesched.scheduler.nodetable": {"_grow_rows", "remove_node"},
}


def _closures(path: Path) -> set[str]:
    """The functions of a module that define a function inside them (methods included)."""
    found: set[str] = set()

    def visit(node: ast.AST, outer: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if outer is not None:
                    found.add(outer)
                visit(child, outer or child.name)
            elif isinstance(child, ast.ClassDef):
                visit(child, None)
            else:
                visit(child, outer)

    visit(ast.parse(path.read_text()), None)
    return found


def test_compiled_modules_define_no_closures_on_a_pods_path() -> None:
    """Every nested function in a compiled module is a cycle each time its outer function runs;
    those left run at set-up (plugins' events_to_register) or on node changes, never per pod."""
    from kubesched.compiled import MODULES

    src = Path(__file__).resolve().parent.parent / "src"
    found: dict[str, set[str]] = {}
    for module in MODULES:
        path = src.joinpath(*module.split(".")).with_suffix(".py")
        if not path.exists():
            path = src.joinpath(*module.split("."), "__init__.py")
        outer = {name for name in _closures(path) if name != "events_to_register"}
        outer -= SETUP_CLOSURES.get(module, set())
        if outer:
            found[module] = outer
    assert found == {}
