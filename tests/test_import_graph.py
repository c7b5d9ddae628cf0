"""The package's import graph has no cycles: every import of every module under src/kubesched,
at module level, under TYPE_CHECKING or inside a function (and the packages each import runs
first), points one way; and every import is on the allow-list of its room (the
``.import-restrictions`` file of each folder of src/kubesched, as upstream's import-boss reads
them), checked with a planted arrow."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

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


# -- allow-list import rules, one file per room, as upstream's .import-restrictions -----------------
@dataclass(frozen=True)
class Rule:
    """One rule of a room's file: imports matching ``selector`` (by modules matching ``importers``)
    must start with one of ``allowed``; ``room`` is the file's package, whose modules are always
    allowed."""

    room: str
    selector: re.Pattern[str]
    allowed: tuple[str, ...]
    importers: re.Pattern[str] | None = None

    def applies_to(self, module: str) -> bool:
        inside = self.room == "kubesched" or module == self.room or module.startswith(self.room + ".")
        return inside and (self.importers is None or self.importers.search(module) is not None)

    def allows(self, target: str) -> bool:
        if self.selector.search(target) is None:
            return True
        if self.room != "kubesched" and (target == self.room or target.startswith(self.room + ".")):
            return True

        def under(prefix: str) -> bool:
            return target == prefix or target.startswith(prefix + ".")

        # a package is run by importing any module below it: allowed where something below it is
        return any(under(a) or a.startswith(target + ".") for a in self.allowed)


def restrictions() -> list[Rule]:
    rules = []
    for path in sorted(PACKAGE.rglob(".import-restrictions")):
        room = module_name(path.parent / "__init__.py")
        for r in yaml.safe_load(path.read_text())["rules"]:
            importers = re.compile(r["importers"]) if r.get("importers") else None
            rules.append(Rule(room, re.compile(r["selectorRegexp"]), tuple(r["allowedPrefixes"]), importers))
    return rules


def violations(g: dict[str, set[str]], rules: list[Rule]) -> list[str]:
    out = []
    for module, targets in sorted(g.items()):
        mine = [r for r in rules if r.applies_to(module)]
        for target in sorted(targets):
            for r in mine:
                if not r.allows(target):
                    out.append(f"{module} imports {target}: not on the allow-list of {r.room}")
    return out


def test_every_room_has_its_allow_list():
    rooms = {module_name(p / "__init__.py") for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    have = {r.room for r in restrictions()}
    assert rooms | {"kubesched"} == have


def test_the_rules_catch_a_planted_arrow():
    """A store import planted in the scheduler's cache, a scheduler import in the public framework,
    an entry point imported by a room: each is refused by name."""
    planted = {
        "kubesched.scheduler.cache": {"kubesched.cluster.store", "kubesched.framework.status"},
        "kubesched.framework.interface": {"kubesched.scheduler.queue"},
        "kubesched.replay.runner": {"kubesched.testing"},
        "kubesched.api.pod": {"kubesched.errors"},
    }
    assert violations(planted, restrictions()) == [
        "kubesched.framework.interface imports kubesched.scheduler.queue: not on the allow-list of kubesched.framework",
        "kubesched.replay.runner imports kubesched.testing: not on the allow-list of kubesched",
        "kubesched.replay.runner imports kubesched.testing: not on the allow-list of kubesched.replay",
        "kubesched.scheduler.cache imports kubesched.cluster.store: not on the allow-list of kubesched.scheduler",
    ]


def test_the_import_rules_hold():
    assert violations(graph(), restrictions()) == []


OUT_OF_TREE = [
    PACKAGE.parent.parent / "plugins" / "gpushare" / "src",
    PACKAGE.parent.parent / "examples" / "plugins" / "src",
]
PLUGIN_MAY_IMPORT = ("kubesched.framework", "kubesched.api", "kubesched.gpus")


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


def test_nothing_outside_the_scheduler_reaches_into_its_parts():
    """Drivers, planners, the UI and explain use the Scheduler's face (``has_active``, ``flush``,
    ``node_table``, ``queued``...), never its queue, cache, algorithm or watch."""
    reach = re.compile(r"(?<!kubesched\.)\bsched(?:uler)?\.(queue|cache|algorithm|_watch)\b")
    found = [
        f"{path.relative_to(SRC)}:{i}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "scheduler" not in path.relative_to(PACKAGE).parts[:1]
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if reach.search(line)
    ]
    assert found == []
