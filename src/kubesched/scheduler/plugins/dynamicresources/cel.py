"""Device selectors in CEL, as ``k8s.io/dynamic-resource-allocation/cel`` evaluates them: one
variable, ``device``, with ``driver``, ``attributes`` and ``capacity`` (maps by domain, then by
name; an unqualified name belongs to the driver's domain) and ``allowMultipleAllocations``;
Kubernetes' quantity library (``quantity("40Gi")``, ``compareTo``, ``isGreaterThan``...) and
``semver`` for version attributes. Expressions are compiled once (cel-python, imported only
when a selector is first evaluated) and evaluated once per device, cached by the caller.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity


class CELError(Exception):
    """A selector that does not compile, fails at run time or does not return a bool."""


@functools.total_ordering
class Quantity:
    """Kubernetes' CEL quantity type (``k8s.io/apiserver/pkg/cel/library/quantity.go``)."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)


@functools.total_ordering
class Semver:
    """``semver("1.2.3")`` (``library/semverlib.go``): compared by major, minor, patch, prerelease."""

    __slots__ = ("key", "text")
    _RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")

    def __init__(self, text: str) -> None:
        m = self._RE.match(text)
        if m is None:
            raise CELError(f"could not parse {text!r} as semver")
        self.text = text
        self.key = (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) is None, m.group(4) or "")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.key == other.key

    def __lt__(self, other: Semver) -> bool:
        return self.key < other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _functions() -> dict[str, Any]:
    from celpy import celtypes

    def quantity(text: Any) -> Quantity:
        try:
            return Quantity(parse_quantity(str(text)))
        except QuantityError as exc:
            raise ValueError(str(exc)) from None

    def compare(a: Any, b: Any) -> Any:
        return (
            celtypes.IntType((a.value > b.value) - (a.value < b.value))
            if isinstance(a, Quantity)
            else celtypes.IntType((a.key > b.key) - (a.key < b.key))
        )

    return {
        "quantity": quantity,
        "isQuantity": lambda t: celtypes.BoolType(_is_quantity(str(t))),
        "compareTo": compare,
        "isGreaterThan": lambda a, b: celtypes.BoolType(compare(a, b) > 0),
        "isLessThan": lambda a, b: celtypes.BoolType(compare(a, b) < 0),
        "asInteger": lambda q: celtypes.IntType(int(q.value)),
        "isInteger": lambda q: celtypes.BoolType(q.value.denominator == 1),
        "asApproximateFloat": lambda q: celtypes.DoubleType(float(q.value)),
        "sign": lambda q: celtypes.IntType((q.value > 0) - (q.value < 0)),
        "add": lambda a, b: Quantity(a.value + (b.value if isinstance(b, Quantity) else Fraction(int(b)))),
        "sub": lambda a, b: Quantity(a.value - (b.value if isinstance(b, Quantity) else Fraction(int(b)))),
        "semver": lambda t: Semver(str(t)),
        "isSemver": lambda t: celtypes.BoolType(Semver._RE.match(str(t)) is not None),
        "major": lambda v: celtypes.IntType(v.key[0]),
        "minor": lambda v: celtypes.IntType(v.key[1]),
        "patch": lambda v: celtypes.IntType(v.key[2]),
    }


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


@functools.cache
def environment() -> Any:
    """celpy's Environment, made once a process: making one sets the interpreter's recursion limit
    to 2,500, and the CRD rules' walkers (``apiextensions/cel/syntax.py``), in the same process,
    need the higher one they set; it is put back."""
    import sys

    import celpy

    limit = sys.getrecursionlimit()
    env = celpy.Environment()
    sys.setrecursionlimit(max(limit, sys.getrecursionlimit()))
    return env


@functools.lru_cache(maxsize=1024)
def compile_selector(expression: str) -> Any:
    """A runnable program for the expression (compiled once, as upstream's CEL cache keeps them)."""
    env = environment()
    try:
        ast = env.compile(expression)
    except Exception as exc:  # celpy's CELParseError and lark's errors
        raise CELError(f"compilation failed: {str(exc).splitlines()[0]}") from None
    return env.program(ast, functions=_functions())


def device_activation(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """The ``device`` variable for one device of a ResourceSlice (``allowMultipleAllocations``
    false unless the device says so: ``dynamic-resource-allocation/cel/compile.go``)."""
    from celpy import celtypes

    S = celtypes.StringType
    attributes: dict[Any, dict[Any, Any]] = {}
    for name, raw in (device.get("attributes") or {}).items():
        domain, _, ident = str(name).rpartition("/")
        domain = domain or driver
        value: Any
        if not isinstance(raw, dict):
            continue
        if "int" in raw:
            value = celtypes.IntType(int(raw["int"]))
        elif "bool" in raw:
            value = celtypes.BoolType(bool(raw["bool"]))
        elif "string" in raw:
            value = S(str(raw["string"]))
        elif "version" in raw:
            value = Semver(str(raw["version"]))
        else:
            continue
        attributes.setdefault(S(domain), {})[S(ident)] = value
    capacity: dict[Any, dict[Any, Any]] = {}
    for name, raw in (device.get("capacity") or {}).items():
        domain, _, ident = str(name).rpartition("/")
        domain = domain or driver
        qty = raw.get("value") if isinstance(raw, dict) else raw
        try:
            if qty is None:
                continue
            capacity.setdefault(S(domain), {})[S(ident)] = Quantity(parse_quantity(qty))
        except (QuantityError, TypeError):
            continue
    return {
        "device": celtypes.MapType(
            {
                S("driver"): S(driver),
                S("attributes"): celtypes.MapType({k: celtypes.MapType(v) for k, v in attributes.items()}),
                S("capacity"): celtypes.MapType({k: celtypes.MapType(v) for k, v in capacity.items()}),
                S("allowMultipleAllocations"): celtypes.BoolType(device.get("allowMultipleAllocations") is True),
            }
        )
    }


def evaluate(expression: str, activation: dict[str, Any]) -> bool:
    """The selector's verdict for one device; CELError for any failure (``CEL runtime error``)."""
    program = compile_selector(expression)
    try:
        result = program.evaluate(activation)
    except Exception as exc:  # celpy.CELEvalError and anything a function raised
        detail = exc.args[0] if exc.args else exc
        raise CELError(f"CEL runtime error: {detail}") from None
    if isinstance(result, Exception):
        raise CELError(f"CEL runtime error: {result.args[0] if result.args else result}")
    if not isinstance(result, bool) and type(result).__name__ != "BoolType":
        raise CELError(f"CEL result of type {type(result).__name__} is not a bool")
    return bool(result)
