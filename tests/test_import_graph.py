"""The package's import graph has no cycles: every import of every module under src/kubesched,
at module level, under TYPE_CHECKING or inside a function (and the packages each import runs
first), points one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "kubesched"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The kubesched modules ``name`` imports (``from a import b`` counts ``a.b`` when that is a
    module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("kubesched")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if not base.startswith("kubesched"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in known else base)
    # importing a.b.c runs the packages a and a.b first
    out |= {".".join(m.split(".")[:i]) for m in set(out) for i in range(1, m.count(".") + 1)}
    return {m for m in out if m in known and m != name and not name.startswith(m + ".")}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports(path, name, known) for name, path in mods.items()}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(g[n]):
            if state.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_the_import_graph_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    g = graph()
    assert len(g) > 100 and g["kubesched.framework.interface"]  # the graph was read
    cycle = find_cycle(g)
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.parametrize("public", ["kubesched.framework"])
def test_the_public_framework_depends_on_no_scheduler_internals(public):
    g = graph()
    inside = {m for m in g if m == public or m.startswith(public + ".")}
    reached = set(inside)
    todo = list(inside)
    while todo:
        for m in g[todo.pop()]:
            if m not in reached:
                reached.add(m)
                todo.append(m)
    internal = sorted(
        m for m in reached if m.startswith(("kubesched.scheduler", "kubesched.apiserver", "kubesched.app"))
    )
    assert internal == []


# -- declarative import rules, in the spirit of upstream's .import-restrictions -----------------------
# (who, what it must not import, why)
RULES: list[tuple[str, tuple[str, ...], str]] = [
    (
        "kubesched.framework",
        (
            "kubesched.cluster",
            "kubesched.scheduler",
            "kubesched.apiserver",
            "kubesched.controllers",
            "kubesched.kubelet",
            "kubesched.embedded",
            "kubesched.app",
        ),
        "plugins see the framework alone; it never reaches the cluster or the scheduler's internals",
    ),
    (
        "kubesched.scheduler",
        (
            "kubesched.apiserver",
            "kubesched.controllers",
            "kubesched.kubelet",
            "kubesched.embedded",
            "kubesched.app",
            "kubesched.ui",
            "kubesched.testing",
        ),
        "the scheduler talks to a cluster only through the client interface",
    ),
    ("kubesched.apiserver", ("kubesched.kubelet", "kubesched.scheduler"), "the API server serves; it runs no node"),
    (
        "kubesched.api",
        (
            "kubesched.cluster",
            "kubesched.client",
            "kubesched.controllers",
            "kubesched.apiserver",
            "kubesched.scheduler",
            "kubesched.kubelet",
            "kubesched.embedded",
            "kubesched.app",
        ),
        "the API's types and rules stand below everything that uses them",
    ),
    ("kubesched.planning", ("kubesched.testing", "kubesched.apiserver"), "planning runs the embedded cluster"),
    ("kubesched.replay", ("kubesched.testing", "kubesched.apiserver"), "replay runs the embedded cluster"),
]
OUT_OF_TREE = [
    PACKAGE.parent.parent / "plugins" / "gpushare" / "src",
    PACKAGE.parent.parent / "examples" / "plugins" / "src",
]
PLUGIN_MAY_IMPORT = ("kubesched.framework", "kubesched.api")


def violations(g: dict[str, set[str]], rules: list[tuple[str, tuple[str, ...], str]]) -> list[str]:
    out = []
    for who, forbidden, why in rules:
        for module, targets in sorted(g.items()):
            if module != who and not module.startswith(who + "."):
                continue
            for target in sorted(targets):
                if any(target == f or target.startswith(f + ".") for f in forbidden):
                    out.append(f"{module} imports {target}: {why}")
    return out


def test_the_rules_catch_a_planted_arrow():
    planted = {"kubesched.framework.interface": {"kubesched.cluster.store"}, "kubesched.api.pod": {"kubesched.errors"}}
    assert violations(planted, RULES) == [
        "kubesched.framework.interface imports kubesched.cluster.store: "
        "plugins see the framework alone; it never reaches the cluster or the scheduler's internals"
    ]


def test_the_import_rules_hold():
    assert violations(graph(), RULES) == []


def test_out_of_tree_plugins_import_only_the_framework_and_the_api():
    found = []
    for root in OUT_OF_TREE:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and not node.level
                    else []
                )
                for name in names:
                    if name.startswith("kubesched.") and not name.startswith(PLUGIN_MAY_IMPORT):
                        found.append(f"{path.relative_to(root)}: {name}")
    assert found == []
    assert any(root.is_dir() for root in OUT_OF_TREE)
