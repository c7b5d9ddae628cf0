"""The estimated cost of a CRD's CEL rules, checked when the CRD is written, as kube-apiserver
estimates it: cel-go's static cost model (``checker/cost.go``) over the rule's macro-expanded
AST, with sizes from the schema as apiextensions-apiserver declares them
(``apiserver/pkg/cel/common/schemas.go`` ``SchemaDeclType``, ``schema/cel/compilation.go``
``sizeEstimator``), times how often the rule can run (``maxCardinality``), against the limits of
``apiextensions/validation/validation.go`` with its messages.

Only the cost is estimated here: the rules are parsed by cel-python (``rules.py``); an expression
that parser refuses is reported as a compilation failure, not costed."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubesched.apiextensions.structural import FieldError

# apiserver/pkg/apis/cel/config.go and apiextensions/validation/validation.go
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
PER_EXPRESSION_LIMIT = 10_000_000  # StaticEstimatedCostLimit
CRD_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit
MAX_UINT64 = 2**64 - 1
# cel-go common/cost.go
STRING_TRAVERSAL = 0.1
REGEX_LENGTH = 0.25
LIST_CREATE, MAP_CREATE, STRUCT_CREATE = 10, 30, 40
# apiserver/pkg/cel/limits.go
MIN_STRING, MIN_BOOL, MIN_NUMBER = 2, 4, 1
MIN_DURATION_JSON, MAX_DURATION_JSON, JSON_DATE, MIN_DATETIME_JSON, MAX_DATETIME_JSON = 3, 32, 12, 21, 32


# -- sizes and costs: [min, max] ranges that saturate at 2**64-1 ------------------------------------


@dataclass(frozen=True, slots=True)
class Range:
    lo: int
    hi: int

    def add(self, o: Range) -> Range:
        return Range(min(self.lo + o.lo, MAX_UINT64), min(self.hi + o.hi, MAX_UINT64))

    def mul(self, o: Range) -> Range:
        return Range(min(self.lo * o.lo, MAX_UINT64), min(self.hi * o.hi, MAX_UINT64))

    def factor(self, f: float) -> Range:
        return Range(_by_factor(self.lo, f), _by_factor(self.hi, f))

    def union(self, o: Range) -> Range:
        return Range(min(self.lo, o.lo), max(self.hi, o.hi))


def _by_factor(x: int, f: float) -> int:
    """``multiplyByCostFactor``: x*f rounded up, in float64 as Go computes it."""
    xf = float(x)
    if xf > 0 and f > 0 and xf > MAX_UINT64 / f:
        return MAX_UINT64
    c = math.ceil(xf * f)
    return MAX_UINT64 if c >= 2.0**64 else int(c)


def fixed(n: int) -> Range:
    return Range(n, n)


ZERO = fixed(0)
UNKNOWN = Range(0, MAX_UINT64)


# -- the schema as CEL declares it -----------------------------------------------------------------


@dataclass(slots=True)
class Decl:
    """A ``DeclType``: the CEL type of a schema node, with the most elements (items, properties,
    string length) it can hold and the fewest bytes it serializes to."""

    kind: str  # object, map, list, string, bytes, int, double, bool, dyn, duration, timestamp
    max_elements: int = 0
    min_size: int = 0
    fields: dict[str, Decl] = field(default_factory=dict)
    elem: Decl | None = None
    key: Decl | None = None


def _max_string(schema: dict[str, Any]) -> int:
    """``estimateMaxStringLengthPerRequest``."""
    if schema.get("x-kubernetes-int-or-string"):
        return MAX_REQUEST_SIZE_BYTES - 2
    return {"duration": MAX_DURATION_JSON, "date": JSON_DATE, "date-time": MAX_DATETIME_JSON}.get(
        str(schema.get("format") or ""), MAX_REQUEST_SIZE_BYTES - 2
    )


def _with_type_and_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """``WithTypeAndObjectMeta``: a resource root declares kind, apiVersion and metadata's names."""
    props = dict(schema.get("properties") or {})
    string = {"type": "string"}
    props["kind"] = string
    props["apiVersion"] = string
    props["metadata"] = {"type": "object", "properties": {"name": string, "generateName": string}}
    return {**schema, "properties": props}


def decl_type(schema: Any, root: bool = False) -> Decl | None:
    """``SchemaDeclType``: None where CEL cannot see the node (no type)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("x-kubernetes-int-or-string"):
        ml = schema.get("maxLength")
        return Decl("dyn", max(int(ml), 0) * 4 if isinstance(ml, int) else _max_string(schema), 1)
    if root:
        schema = _with_type_and_meta(schema)
    t = schema.get("type")
    if t == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return None
        elem = decl_type(items, bool(items.get("x-kubernetes-embedded-resource")))
        if elem is None:
            return None
        mi = schema.get("maxItems")
        n = max(int(mi), 0) if isinstance(mi, int) else (MAX_REQUEST_SIZE_BYTES - 2) // (elem.min_size + 1)
        return Decl("list", n, 2, elem=elem)
    if t == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            val = decl_type(extra, bool(extra.get("x-kubernetes-embedded-resource")))
            if val is None:
                return None
            mp = schema.get("maxProperties")
            n = max(int(mp), 0) if isinstance(mp, int) else (MAX_REQUEST_SIZE_BYTES - 2) // (val.min_size + 6)
            return Decl("map", n, 2, elem=val, key=Decl("string", 0, MIN_STRING))
        fields: dict[str, Decl] = {}
        required = set(schema.get("required") or ())
        min_size = 2
        for name, prop in (schema.get("properties") or {}).items():
            ft = decl_type(prop, bool(isinstance(prop, dict) and prop.get("x-kubernetes-embedded-resource")))
            if ft is None:
                continue
            fields[name] = ft
            if name in required and "default" not in prop:
                min_size += len(name) + ft.min_size + 4
        return Decl("object", 0, min_size, fields=fields)
    if t == "string":
        fmt = schema.get("format")
        ml = schema.get("maxLength")
        if fmt == "byte":
            return Decl("bytes", max(int(ml), 0) if isinstance(ml, int) else _max_string(schema), MIN_STRING)
        if fmt == "duration":
            return Decl("duration", _max_string(schema), MIN_DURATION_JSON)
        if fmt == "date":
            return Decl("timestamp", _max_string(schema), JSON_DATE)
        if fmt == "date-time":
            return Decl("timestamp", _max_string(schema), MIN_DATETIME_JSON)
        if isinstance(ml, int):
            n = max(ml, 0) * 4
        elif schema.get("enum"):
            n = max((len(v) for v in schema["enum"] if isinstance(v, str)), default=0)
        else:
            n = _max_string(schema)
        return Decl("string", n, MIN_STRING)
    if t == "boolean":
        return Decl("bool", 0, MIN_BOOL)
    if t == "number":
        return Decl("double", 0, MIN_NUMBER)
    if t == "integer":
        return Decl("int", 0, MIN_NUMBER)
    return None


# -- the AST, macros expanded as cel-go's parser expands them --------------------------------------


@dataclass(eq=False, slots=True)
class Node:
    kind: str  # lit, ident, select, call, list, map, comp
    value: Any = None  # lit: the Python value; ident: the name; select: the field; call: the function
    kids: list[Node] = field(default_factory=list)  # select: [operand]; call: [target?] + args
    target: bool = False  # call: a member call (kids[0] is the target)
    test_only: bool = False  # select: has()
    lit_type: str = ""  # lit: int, uint, double, string, bytes, bool, null
    # comp:
    iter_var: str = ""
    accu_var: str = ""


ACCU = "@result"


def _comp(iter_var: str, rng: Node, accu_init: Node, cond: Node, step: Node, result: Node) -> Node:
    return Node("comp", kids=[rng, accu_init, cond, step, result], iter_var=iter_var, accu_var=ACCU)


def _call(fn: str, *args: Node) -> Node:
    return Node("call", fn, list(args))


def _lit(v: Any, t: str) -> Node:
    return Node("lit", v, lit_type=t)


def _ident(name: str) -> Node:
    return Node("ident", name)


def _macro(name: str, target: Node, args: list[Node]) -> Node | None:
    """cel-go's ``parser/macro.go`` expansions of the member macros."""
    if len(args) != 2 or args[0].kind != "ident":
        return None
    v, p = args[0].value, args[1]
    accu = _ident(ACCU)
    if name == "all":
        return _comp(v, target, _lit(True, "bool"), _call("@not_strictly_false", accu), _call("_&&_", accu, p), accu)
    if name == "exists":
        cond = _call("@not_strictly_false", _call("!_", accu))
        return _comp(v, target, _lit(False, "bool"), cond, _call("_||_", accu, p), accu)
    if name == "exists_one":
        step = _call("_?_:_", p, _call("_+_", accu, _lit(1, "int")), _ident(ACCU))
        return _comp(v, target, _lit(0, "int"), _lit(True, "bool"), step, _call("_==_", _ident(ACCU), _lit(1, "int")))
    if name == "map":
        step = _call("_+_", accu, Node("list", kids=[p]))
        return _comp(v, target, Node("list"), _lit(True, "bool"), step, _ident(ACCU))
    if name == "filter":
        step = _call("_?_:_", p, _call("_+_", accu, Node("list", kids=[_ident(v)])), _ident(ACCU))
        return _comp(v, target, Node("list"), _lit(True, "bool"), step, _ident(ACCU))
    return None


_BINARY = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


def _literal(token: Any) -> Node:
    text = str(token)
    kind = token.type
    if kind == "UINT_LIT":
        return _lit(1, "uint")
    if kind == "INT_LIT":
        return _lit(1, "int")
    if kind == "FLOAT_LIT":
        return _lit(1.0, "double")
    if kind == "BOOL_LIT":
        return _lit(text == "true", "bool")
    if kind == "NULL_LIT":
        return _lit(None, "null")
    if kind == "BYTES_LIT":
        import celpy.evaluation

        try:
            value = bytes(celpy.evaluation.celbytes(token))
        except Exception:
            value = text[3:-1].encode()
        return _lit(value, "bytes")
    import celpy.evaluation

    try:
        s = str(celpy.evaluation.celstr(token))
    except Exception:
        s = text[1:-1]
    return _lit(s, "string")


def convert(tree: Any) -> Node:
    """celpy's lark parse tree as cel-go's AST (macros expanded)."""
    from lark import Token

    kids = [c for c in tree.children if c is not None]
    rule = tree.data
    if rule == "expr":
        if len(kids) == 1:
            return convert(kids[0])
        return _call("_?_:_", *(convert(k) for k in kids))
    if rule in ("conditionalor", "conditionaland"):
        if len(kids) == 1:
            return convert(kids[0])
        return _call("_||_" if rule == "conditionalor" else "_&&_", convert(kids[0]), convert(kids[1]))
    if rule in ("relation", "addition", "multiplication"):
        if len(kids) == 1:
            return convert(kids[0])
        op = kids[0]
        return _call(_BINARY[op.data], convert(op.children[0]), convert(kids[1]))
    if rule == "unary":
        if len(kids) == 1:
            return convert(kids[0])
        return _call("!_" if kids[0].data == "unary_not" else "-_", convert(kids[1]))
    if rule in ("member", "primary"):
        return convert(kids[0])
    if rule == "member_dot":
        operand = convert(kids[0])
        return Node("select", str(kids[1]), [operand])
    if rule == "member_dot_arg":
        target, name = convert(kids[0]), str(kids[1])
        args = [convert(k) for k in kids[2].children] if len(kids) > 2 else []
        expanded = _macro(name, target, args)
        if expanded is not None:
            return expanded
        return Node("call", name, [target, *args], target=True)
    if rule == "member_index":
        return _call("_[_]", convert(kids[0]), convert(kids[1]))
    if rule == "member_object":
        inits = kids[1].children if len(kids) > 1 else []
        return Node("struct", kids=[convert(k) for k in inits if not isinstance(k, Token)])
    if rule == "ident":
        return _ident(str(kids[0]))
    if rule == "dot_ident":
        return _ident(str(kids[0]))
    if rule in ("ident_arg", "dot_ident_arg"):
        name = str(kids[0])
        args = [convert(k) for k in kids[1].children] if len(kids) > 1 else []
        if name == "has" and len(args) == 1 and args[0].kind == "select":
            sel = args[0]
            return Node("select", sel.value, sel.kids, test_only=True)
        return Node("call", name, args)
    if rule == "paren_expr":
        return convert(kids[0])
    if rule == "list_lit":
        return Node("list", kids=[convert(k) for k in kids[0].children] if kids else [])
    if rule == "map_lit":
        return Node("map", kids=[convert(k) for k in kids[0].children] if kids else [])
    if rule == "literal":
        return _literal(kids[0])
    raise ValueError(f"unknown CEL parse node {rule}")


# -- the cost model (checker/cost.go) ----------------------------------------------------------------

_SCALAR_TYPES = ("bool", "double", "duration", "int", "timestamp", "uint")


@dataclass(slots=True)
class _Var:
    path: list[str] | None
    size: Range | None
    entry: tuple[str, Range, Range] | None  # (container kind, key size, value size)
    type: str = "dyn"


class Coster:
    """``coster``: the cost range of one expression whose ``self`` is ``root``."""

    def __init__(self, root: Decl | None) -> None:
        self.root = root
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, tuple[str, Range, Range]] = {}
        self.types: dict[int, str] = {}
        self.decls: dict[int, Decl | None] = {}
        self.scopes: dict[str, list[_Var]] = {}

    # types, as far as the cost needs them: the declared type of a path, else what a literal or
    # a function yields, else dyn
    def _decl_of(self, path: list[str] | None) -> Decl | None:
        if not path or self.root is None or path[0] not in ("self", "oldSelf"):
            return None
        node: Decl | None = self.root
        for name in path[1:]:
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            else:
                node = node.fields.get(name) if node.kind == "object" else None
        return node

    def type_of(self, e: Node) -> str:
        if id(e) in self.types:
            return self.types[id(e)]
        if e.kind == "lit":
            return e.lit_type
        if e.kind == "list":
            return "list"
        if e.kind == "map":
            return "map"
        if e.kind == "ident":
            v = self._peek(e.value)
            if v is not None:
                return v.type
        decl = self._decl_of(self._path(e))
        return decl.kind if decl is not None else "dyn"

    def _peek(self, name: str) -> _Var | None:
        stack = self.scopes.get(name)
        return stack[-1] if stack else None

    def _push(self, name: str, var: _Var) -> None:
        self.scopes.setdefault(name, []).append(var)

    def _pop(self, name: str) -> None:
        self.scopes[name].pop()

    def _path(self, e: Node) -> list[str] | None:
        if e.kind == "ident":
            v = self._peek(e.value)
            if v is not None:
                return v.path
        return self.paths.get(id(e))

    def _estimate_size(self, path: list[str] | None) -> Range | None:
        """``sizeEstimator.EstimateSize``: [0, MaxElements] of the declared node a path names."""
        if not path or self.root is None:
            return None
        node: Decl | None = self.root
        for name in path[1:]:
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            else:
                node = node.fields.get(name) if node.kind == "object" else None
        return None if node is None else Range(0, node.max_elements)

    def size(self, e: Node) -> Range | None:
        """``computeSize``."""
        if id(e) in self.sizes:
            return self.sizes[id(e)]
        if e.kind == "lit":
            if e.lit_type == "string":
                return fixed(len(e.value))
            if e.lit_type == "bytes":
                return fixed(len(e.value))
            return fixed(1)
        if e.kind == "list":
            return fixed(len(e.kids))
        if e.kind == "map":
            return fixed(len(e.kids) // 2)
        est = self._estimate_size(self._path(e))
        if est is not None:
            self.sizes[id(e)] = est
            return est
        if self.type_of(e) in _SCALAR_TYPES:
            return fixed(1)
        if e.kind == "ident":
            v = self._peek(e.value)
            if v is not None and v.size is not None:
                return v.size
        return None

    def size_or_unknown(self, e: Node) -> Range:
        s = self.size(e)
        return UNKNOWN if s is None else s

    def entry(self, e: Node) -> tuple[str, Range, Range] | None:
        if id(e) in self.entries:
            return self.entries[id(e)]
        if e.kind == "ident":
            v = self._peek(e.value)
            if v is not None and v.entry is not None:
                return v.entry
        return None

    def cost(self, e: Node) -> Range:
        if e.kind == "lit":
            return ZERO
        if e.kind == "ident":
            v = self._peek(e.value)
            self.paths[id(e)] = list(v.path or []) if v is not None else [e.value]
            return fixed(1)
        if e.kind == "select":
            return self._select(e)
        if e.kind == "call":
            return self._call(e)
        if e.kind == "list":
            total = ZERO
            item: Range | None = None
            for k in e.kids:
                total = total.add(self.cost(k))
                s = self.size_or_unknown(k)
                item = s if item is None else item.union(s)
            self.entries[id(e)] = ("list", fixed(1), item if item is not None else ZERO)
            return total.add(fixed(LIST_CREATE))
        if e.kind == "map":
            total = ZERO
            ks: Range | None = None
            vs: Range | None = None
            for i in range(0, len(e.kids), 2):
                total = total.add(self.cost(e.kids[i])).add(self.cost(e.kids[i + 1]))
                a, b = self.size_or_unknown(e.kids[i]), self.size_or_unknown(e.kids[i + 1])
                ks = a if ks is None else ks.union(a)
                vs = b if vs is None else vs.union(b)
            self.entries[id(e)] = ("map", ks or ZERO, vs or ZERO)
            return total.add(fixed(MAP_CREATE))
        if e.kind == "struct":
            total = ZERO
            for k in e.kids:
                total = total.add(self.cost(k))
            return total.add(fixed(STRUCT_CREATE))
        if e.kind == "comp":
            return self._comprehension(e)
        return ZERO

    def _select(self, e: Node) -> Range:
        operand = e.kids[0]
        if e.test_only:
            return self.cost(operand)  # PresenceTestHasCost(false): has() adds nothing
        total = self.cost(operand)
        if self.type_of(operand) in ("map", "object"):  # a field of a map or an object costs one
            total = total.add(fixed(1))
        path = self._path(operand)
        self.paths[id(e)] = [*(path or []), e.value]
        decl = self._decl_of(self.paths[id(e)])
        if decl is not None:
            self.types[id(e)] = decl.kind
        return total

    def _comprehension(self, e: Node) -> Range:
        rng, init, cond, step, result = e.kids
        total = self.cost(rng).add(self.cost(init))
        self._push(e.accu_var, _Var(self._path(init), self.size(init), self.entry(init), self.type_of(init)))
        # pushIterSingle
        entry = self.entry(rng)
        container = entry[0] if entry is not None else self.type_of(rng)
        if container == "list":
            size, sub = (entry[2] if entry is not None else None), "@items"
        else:
            size, sub = (entry[1] if entry is not None else None), "@keys"
        rpath = self._path(rng)
        elem_decl = self._decl_of([*(rpath or []), sub])
        elem_type = elem_decl.kind if elem_decl is not None else ("string" if container == "map" else "dyn")
        self._push(e.iter_var, _Var([*(rpath or []), sub], size, None, elem_type))
        loop = self.cost(cond)
        step_cost = self.cost(step)
        self._pop(e.iter_var)
        total = total.add(self.cost(result))
        self._pop(e.accu_var)
        count = self.size_or_unknown(rng)
        total = total.add(count.mul(step_cost.add(loop)))
        if init.kind == "lit":
            s = self.size(init)
            if s is not None:
                self.sizes[id(e)] = s
            self.types[id(e)] = init.lit_type
        elif init.kind in ("list", "map"):
            self.sizes[id(e)] = count
            self.types[id(e)] = init.kind
            se = self.entry(step)
            if se is not None:
                self.entries[id(e)] = se
        return total

    def _call(self, e: Node) -> Range:
        fn = e.value
        if fn == "dyn" and len(e.kids) == 1:
            c = self.cost(e.kids[0])
            s = self.size(e.kids[0])
            if s is not None:
                self.sizes[id(e)] = s
            return fixed(1).add(c)
        target = e.kids[0] if e.target else None
        args = e.kids[1:] if e.target else e.kids
        arg_costs = [self.cost(a) for a in args]
        total = ZERO
        if target is not None:
            total = total.add(self.cost(target))
        fn_cost, result_size = self._function(e, fn, target, args, arg_costs)
        if fn == "_[_]" and args:
            ent = self.entry(args[0])
            if ent is not None:
                result_size = ent[2]
            path = self._path(args[0])
            kind = self.type_of(args[0])
            self.paths[id(e)] = [*(path or []), "@values" if kind == "map" else "@items"]
            decl = self._decl_of(self.paths[id(e)])
            if decl is not None:
                self.types[id(e)] = decl.kind
        if result_size is None:
            result_size = self.size(e)
        if result_size is not None:
            self.sizes[id(e)] = result_size
        self.types.setdefault(id(e), _RESULT_TYPES.get(fn, "dyn") if fn != "_+_" else self._add_type(args))
        return total.add(fn_cost)

    def _add_type(self, args: list[Node]) -> str:
        kinds = {self.type_of(a) for a in args}
        return kinds.pop() if len(kinds) == 1 else "dyn"

    def _function(
        self, e: Node, fn: str, target: Node | None, args: list[Node], arg_costs: list[Range]
    ) -> tuple[Range, Range | None]:
        """``functionCost`` for the overloads the rule's operand types allow (a dyn operand
        allows several: the union of their costs, as cel-go takes)."""
        summed = ZERO
        for c in arg_costs:
            summed = summed.add(c)
        if fn in ("_&&_", "_||_"):
            lhs, rhs = arg_costs
            return Range(lhs.lo, lhs.add(rhs).hi), None
        if fn == "_?_:_":
            size = self.size_or_unknown(args[1]).union(self.size_or_unknown(args[2]))
            a, b = self.entry(args[1]), self.entry(args[2])
            if a is not None and b is not None:
                self.entries[id(e)] = (a[0], a[1].union(b[1]), a[2].union(b[2]))
            return arg_costs[0].add(arg_costs[1].union(arg_costs[2])), size
        if fn in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"):
            kinds = {self.type_of(a) for a in args}
            lhs, rhs = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            smallest = min(lhs.hi, rhs.hi)
            traversal = Range(1 if smallest > 0 else 0, smallest).factor(STRING_TRAVERSAL).add(summed)
            if fn in ("_==_", "_!=_") or kinds & {"string", "bytes"}:
                return traversal, None
            if "dyn" in kinds:  # the scalar and the string overloads both apply
                return traversal.union(fixed(1).add(summed)), None
            return fixed(1).add(summed), None
        if fn == "_+_" and len(args) == 2:
            kinds = {self.type_of(a) for a in args}
            lhs, rhs = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            size = lhs.add(rhs)
            a, b = self.entry(args[0]), self.entry(args[1])
            if a is not None and b is not None:
                self.entries[id(e)] = (a[0], a[1].union(b[1]), a[2].union(b[2]))
            if kinds & {"string", "bytes", "dyn"} and not kinds & {"list"}:
                string_cost = size.factor(STRING_TRAVERSAL).add(summed)
                if kinds <= {"string", "bytes"}:
                    return string_cost, size
                return string_cost.union(fixed(1).add(summed)), size
            if kinds & {"list"}:
                return fixed(1).add(summed), size
            return fixed(1).add(summed), None
        if fn in ("startsWith", "endsWith") and target is not None and len(args) == 1:
            return self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL).add(summed), None
        if fn == "@in" and len(args) == 2:
            if self.type_of(args[1]) in ("list", "dyn"):
                return self.size_or_unknown(args[1]).factor(1).add(summed), None
            return fixed(1).add(summed), None
        if fn == "matches" and ((target is not None and len(args) == 1) or (target is None and len(args) == 2)):
            subject, regex = (target, args[0]) if target is not None else (args[0], args[1])
            str_cost = self.size_or_unknown(subject).add(fixed(1)).factor(STRING_TRAVERSAL)
            regex_cost = self.size_or_unknown(regex).factor(REGEX_LENGTH)
            return str_cost.mul(regex_cost).add(summed), None
        if fn == "contains" and target is not None and len(args) == 1:
            whole = self.size_or_unknown(target).factor(STRING_TRAVERSAL)
            part = self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL)
            return whole.mul(part).add(summed), None
        library = _library_cost(self, fn, target, args)
        if library is not None:
            return library[0].add(summed), library[1]
        return fixed(1).add(summed), None


# the result type of the functions whose operands' type does not decide it
_RESULT_TYPES = {
    "size": "int",
    "_==_": "bool",
    "_!=_": "bool",
    "_<_": "bool",
    "_<=_": "bool",
    "_>_": "bool",
    "_>=_": "bool",
    "_&&_": "bool",
    "_||_": "bool",
    "!_": "bool",
    "@in": "bool",
    "@not_strictly_false": "bool",
    "matches": "bool",
    "startsWith": "bool",
    "endsWith": "bool",
    "contains": "bool",
    "int": "int",
    "uint": "uint",
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "lowerAscii": "string",
    "upperAscii": "string",
    "trim": "string",
    "replace": "string",
    "substring": "string",
    "join": "string",
    "split": "list",
    "indexOf": "int",
    "lastIndexOf": "int",
}


def _library_cost(c: Coster, fn: str, target: Node | None, args: list[Node]) -> tuple[Range, Range | None] | None:
    """The Kubernetes CEL libraries' estimates (``apiserver/pkg/cel/library/cost.go``) for the
    string functions CRD rules use most; other library functions cost one, as cel-go's default."""
    if target is None:
        return None
    if fn in ("lowerAscii", "upperAscii", "trim") and not args:
        sz = c.size_or_unknown(target)
        return sz.factor(STRING_TRAVERSAL), sz
    if fn in ("indexOf", "lastIndexOf") and c.type_of(target) in ("string", "dyn"):
        return c.size_or_unknown(target).factor(STRING_TRAVERSAL), None
    if fn == "substring":
        sz = c.size_or_unknown(target)
        return sz.factor(STRING_TRAVERSAL), sz
    return None


# -- the checks when a CRD is written --------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _ast(expression: str) -> Node:
    from celpy.celparser import CELParser

    return convert(CELParser().parse(expression))


def estimated_cost(expression: str, root: Decl | None) -> int:
    """The most an expression can cost for a ``self`` of the declared type (``Range.hi``)."""
    return Coster(root).cost(_ast(expression)).hi


def cost_message(what: str, cost: int, limit: int) -> str:
    """``getCostErrorMessage``."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (
        f"{what} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )


def _nodes(schema: dict[str, Any], path: str, cardinality: int | None, root: bool) -> Iterator[Any]:
    """Each schema node with its path, how many times it can occur (None: unbounded) and whether
    it is a resource's root (``CELSchemaContext.childContext``)."""
    yield schema, path, cardinality, root
    if cardinality is not None:
        t = schema.get("type")
        if t == "array":
            mi = schema.get("maxItems")
            cardinality = cardinality * max(mi, 0) if isinstance(mi, int) else None
        elif t == "object" and isinstance(schema.get("additionalProperties"), dict):
            mp = schema.get("maxProperties")
            cardinality = cardinality * max(mp, 0) if isinstance(mp, int) else None
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield from _nodes(sub, f"{path}.properties[{name}]", cardinality, _embedded(sub))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _nodes(items, f"{path}.items", cardinality, _embedded(items))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _nodes(extra, f"{path}.additionalProperties", cardinality, _embedded(extra))


def _embedded(schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-kubernetes-embedded-resource"))


_COSTED = (("rule", "estimated rule cost"), ("messageExpression", "estimated messageExpression cost"))
_CONTRIBUTED = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"


def cost_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """The rules whose estimated cost exceeds the per-rule limit, then, if all of them together
    exceed the CRD's, the most expensive (up to four, each 1% of the limit or more) and the total."""
    errors: list[FieldError] = []
    total = 0
    expensive: list[tuple[int, str]] = []
    for node, at, cardinality, root in _nodes(schema, path, 1, True):
        rules = node.get("x-kubernetes-validations")
        if not rules:
            continue
        decl = decl_type(node, root)
        if decl is None:
            continue
        times = cardinality if cardinality is not None else MAX_REQUEST_SIZE_BYTES // (decl.min_size + 1)
        for i, rule in enumerate(rules):
            for key, what in _COSTED:
                text = rule.get(key) if isinstance(rule, dict) else None
                if not isinstance(text, str) or not text:
                    continue
                try:
                    base = estimated_cost(text, decl)
                except Exception:
                    continue  # not parsed: reported as a compilation failure
                cost = 0 if base == 0 else min(base * times, MAX_UINT64)
                where = f"{at}.x-kubernetes-validations[{i}].{key}"
                if cost > PER_EXPRESSION_LIMIT:
                    message = cost_message(what, cost, PER_EXPRESSION_LIMIT)
                    errors.append(FieldError(where, "FieldValueForbidden", f"Forbidden: {message}"))
                total = min(total + cost, MAX_UINT64)
                if cost >= CRD_LIMIT // 100:
                    expensive.append((cost, where))
    if total > CRD_LIMIT:
        expensive.sort(key=lambda x: -x[0])
        for _, where in expensive[:4]:
            errors.append(FieldError(where, "FieldValueForbidden", f"Forbidden: {_CONTRIBUTED}"))
        what = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
        errors.append(FieldError(path, "FieldValueForbidden", f"Forbidden: {cost_message(what, total, CRD_LIMIT)}"))
    return errors
