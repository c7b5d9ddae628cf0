"""A DRA device selector type-checked and costed as kube-apiserver compiles it
(``k8s.io/dynamic-resource-allocation/cel``, ``compile.go``):
the ``device`` variable declared as upstream declares it, every map and string bounded by the
ResourceSlice limits (32 attributes or capacities per domain and device, domains of 63 bytes, ids of
32, attribute values of 64), costed by the same cel-go model as CRD rules. kube-apiserver refuses a
selector whose estimate exceeds ``CELSelectorExpressionMaxCost``
(``pkg/apis/resource/validation``: "too complex, exceeds cost limit")."""

from __future__ import annotations

from kubesched.apiextensions.cel import checker
from kubesched.apiextensions.cel.cost import estimated_cost
from kubesched.apiextensions.cel.decls import Decl
from kubesched.apiextensions.cel.syntax import syntax_error

_PER_DEVICE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_DOMAIN = Decl("string", max_elements=63)  # DeviceMaxDomainLength
_ID = Decl("string", max_elements=32)  # DeviceMaxIDLength
_ATTRIBUTE = Decl("dyn", max_elements=64, type_name=checker.ANY)  # DeviceAttributeMaxValueLength
_QUANTITY = Decl("dyn", max_elements=0, type_name="kubernetes.Quantity")
DEVICE = Decl(
    "object",
    fields={
        "driver": Decl("string", max_elements=63),  # DriverNameMaxLength
        "attributes": Decl(
            "map", max_elements=_PER_DEVICE, key=_DOMAIN, elem=Decl("map", _PER_DEVICE, key=_ID, elem=_ATTRIBUTE)
        ),
        "capacity": Decl(
            "map", max_elements=_PER_DEVICE, key=_DOMAIN, elem=Decl("map", _PER_DEVICE, key=_ID, elem=_QUANTITY)
        ),
        "allowMultipleAllocations": Decl("bool", max_elements=1),
    },
)


def selector_cost(expression: str) -> int | None:
    """The estimated most a selector costs, or None when it does not parse (compilation's error
    is not judged here)."""
    try:
        return estimated_cost(expression, DEVICE, roots=("device",))
    except Exception:  # a parse error: no estimate
        return None


def selector_problem(expression: str) -> str | None:
    """Why kube-apiserver refuses to compile a selector (``compile.go``: the parser, cel-go's
    checker, then the output type, a bool or an attribute's unknown type), None when it compiles.
    A parse error is shaped as cel-go's, without the list of what it expected."""
    try:
        found, out = checker.problems(expression, DEVICE, ("device",))
    except Exception as exc:  # celpy's CELParseError, lark's errors
        return f"compilation failed: {syntax_error(expression, exc)}"
    if found:
        return f"compilation failed: {found}"
    if out.name not in ("bool", "dyn", "error", checker.ANY):
        return f"must evaluate to bool or the unknown type, not {out}"
    return None
