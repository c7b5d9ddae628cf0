"""Dataclasses that write their ``__init__`` out (``init=False``: mypyc compiles a class's own
``__init__``, not the one a dataclass generates) keep it in step with their fields: the same
names in the same order, the same defaults, a ``default_factory`` field defaulting to None and
filled in, and every field assigned. Read from the sources, so it holds on either path."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "kubesched"


def _written_out() -> list[tuple[Path, ast.ClassDef]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for dec in node.decorator_list:
                if (
                    isinstance(dec, ast.Call)
                    and getattr(dec.func, "id", "") == "dataclass"
                    and any(k.arg == "init" and getattr(k.value, "value", True) is False for k in dec.keywords)
                ):
                    found.append((path, node))
    return found


CLASSES = _written_out()


def test_the_hot_dataclasses_are_found() -> None:
    names = {c.name for _, c in CLASSES}
    assert {"PodInfo", "Status", "QueuedPodInfo", "WatchEvent", "Diagnosis"} <= names


@pytest.mark.parametrize(("path", "cls"), CLASSES, ids=[c.name for _, c in CLASSES])
def test_written_out_init_matches_the_fields(path: Path, cls: ast.ClassDef) -> None:
    fields: list[tuple[str, str | None, bool]] = []  # name, default source, has a factory
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            if ast.unparse(st.annotation).startswith("ClassVar"):
                continue
            value = st.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                kw = {k.arg: k.value for k in value.keywords}
                if "default_factory" in kw:
                    fields.append((st.target.id, "None", True))
                else:
                    fields.append((st.target.id, ast.unparse(kw["default"]) if "default" in kw else None, False))
            else:
                fields.append((st.target.id, ast.unparse(value) if value is not None else None, False))
    init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    params = init.args.args[1:]
    defaults = [None] * (len(params) - len(init.args.defaults)) + [ast.unparse(d) for d in init.args.defaults]
    assert [(p.arg, d) for p, d in zip(params, defaults, strict=True)] == [(n, d) for n, d, _ in fields], (
        f"{path.name}: {cls.name}.__init__'s parameters differ from its fields"
    )
    assigned = {
        t.attr
        for st in ast.walk(init)
        if isinstance(st, ast.Assign)
        for t in st.targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    assert assigned == {n for n, _, _ in fields}, f"{path.name}: {cls.name}.__init__ leaves a field unset"
