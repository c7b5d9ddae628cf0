"""cel-go's cost model (``checker/cost.go``) over a rule's AST: the range of what an evaluation can
cost, with sizes from the schema (``sizeEstimator``, when a CRD is written) or from the value about
to be evaluated (an upper bound for that value, before it runs)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.apiextensions.cel.decls import Decl
from kubesched.apiextensions.cel.limits import (
    LIST_CREATE,
    MAP_CREATE,
    MAX_UINT64,
    REGEX_LENGTH,
    STRING_TRAVERSAL,
    STRUCT_CREATE,
)
from kubesched.apiextensions.cel.named_formats import VALIDATORS
from kubesched.apiextensions.cel.syntax import ACCU, Node, parse

# the sizes of an actual value's paths (``["self", "items", "@items"]``), None where it has none
Sizes = Callable[[list[str]], "Range | None"]


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


_SCALAR_TYPES = ("bool", "double", "duration", "int", "timestamp", "uint")


@dataclass(slots=True)
class _Var:
    path: list[str] | None
    size: Range | None
    entry: tuple[str, Range, Range] | None  # (container kind, key size, value size)
    type: str = "dyn"


class Coster:
    """``coster``: the cost range of one expression whose ``self`` is ``root``."""

    def __init__(
        self, root: Decl | None, value_sizes: Sizes | None = None, roots: tuple[str, ...] = ("self", "oldSelf")
    ) -> None:
        self.root = root
        self.roots = roots  # the variables ``root`` declares (a CRD rule's self, DRA's device)
        self.value_sizes = value_sizes
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, tuple[str, Range, Range]] = {}
        self.types: dict[int, str] = {}
        # an optional's value where it is known (``optional.of(x)``, optMap's result): its
        # ``value()`` and ``orValue()`` are of that type, as cel-go's checker types them
        self.optionals: dict[int, Node] = {}
        self.shared_costs: dict[int, Range] = {}
        self.scopes: dict[str, list[_Var]] = {}

    # types, as far as the cost needs them: the declared type of a path, else what a literal or
    # a function yields, else dyn
    def _decl_of(self, path: list[str] | None) -> Decl | None:
        if not path or path[0] not in self.roots:
            return None
        return self._declared(path)

    def _declared(self, path: list[str]) -> Decl | None:
        """The declared node a path names below its root variable (whatever that is called)."""
        node: Decl | None = self.root
        for name in path[1:]:
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            else:
                node = node.member(name) if node.kind == "object" else None
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
        """``sizeEstimator.EstimateSize``: [0, MaxElements] of the declared node a path names
        (or the most the value has there, when costing an actual value)."""
        if self.value_sizes is not None:
            return self.value_sizes(path) if path else None
        node = self._declared(path) if path else None
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
        if e.shared:  # referred to twice by optMap's expansion: counted twice, walked once
            found = self.shared_costs.get(id(e))
            if found is None:
                found = self.shared_costs[id(e)] = self._cost(e)
            return found
        return self._cost(e)

    def _cost(self, e: Node) -> Range:
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
        if e.test_only:  # PresenceTestHasCost(false): has() adds nothing, and yields a bool
            self.types[id(e)] = "bool"
            return self.cost(operand)
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
        if rng.kind == "list" and not rng.kids and cond.kind == "lit" and cond.value is False and e.accu_var != ACCU:
            return self._bind(e)
        total = self.cost(rng).add(self.cost(init))
        self._push(e.accu_var, _Var(self._path(init), self.size(init), self.entry(init), self.type_of(init)))
        entry = self.entry(rng)
        container = entry[0] if entry is not None else self.type_of(rng)
        rpath = self._path(rng)
        if e.iter_var2:  # pushIterKey and pushIterValue: (index or key, value)
            key_sub, value_sub = ("@indices", "@items") if container == "list" else ("@keys", "@values")
            self._push(e.iter_var, self._iter_var(rpath, key_sub, entry[1] if entry else None, container))
            self._push(e.iter_var2, self._iter_var(rpath, value_sub, entry[2] if entry else None, container))
        else:  # pushIterSingle
            if container == "list":
                size, sub = (entry[2] if entry is not None else None), "@items"
            else:
                size, sub = (entry[1] if entry is not None else None), "@keys"
            self._push(e.iter_var, self._iter_var(rpath, sub, size, container))
        loop = self.cost(cond)
        step_cost = self.cost(step)
        self._pop(e.iter_var)
        if e.iter_var2:
            self._pop(e.iter_var2)
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

    def _bind(self, e: Node) -> Range:
        """``costBind``: a name bound to a value (sortBy's and optMap's expansions): the empty
        range, the value, and the result with the name bound, whose size the binding takes."""
        rng, init, _cond, _step, result = e.kids
        total = self.cost(rng).add(self.cost(init))
        self._push(e.accu_var, _Var(self._path(init), self.size(init), self.entry(init), self.type_of(init)))
        total = total.add(self.cost(result))
        self._pop(e.accu_var)
        size, entry = self.size(result), self.entry(result)
        if size is not None:
            self.sizes[id(e)] = size
        if entry is not None:
            self.entries[id(e)] = entry
        self.types[id(e)] = self.type_of(result)
        if id(result) in self.optionals:  # optFlatMap's binding: the optional its expression made
            self.optionals[id(e)] = self.optionals[id(result)]
        return total

    def _iter_var(self, rpath: list[str] | None, sub: str, size: Range | None, container: str) -> _Var:
        """An iteration variable: its path under the range (``@items``, ``@keys``, ...) and size."""
        decl = self._decl_of([*(rpath or []), sub])
        if decl is not None:
            kind = decl.kind
        elif sub == "@indices":
            kind = "int"
        else:
            kind = "string" if container == "map" and sub == "@keys" else "dyn"
        return _Var([*(rpath or []), sub], size, None, kind)

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
        namespace = str(target.value) if target is not None and target.kind == "ident" else ""
        if fn in NAMESPACED.get(namespace, ()) or fn in _RUNTIME_NAMESPACED.get(namespace, ()):
            fn, target = f"{namespace}.{fn}", None  # a namespaced function (sets.contains), no receiver
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
        self._optional(e, fn, target, args)
        if result_size is None:
            result_size = self.size(e)
        if result_size is not None:
            self.sizes[id(e)] = result_size
        if fn == "reverse" and target is not None:  # a string's or a list's, as it was
            self.types.setdefault(id(e), self.type_of(target))
        self.types.setdefault(id(e), _RESULT_TYPES.get(fn, "dyn") if fn != "_+_" else self._add_type(args))
        return total.add(fn_cost)

    def _optional(self, e: Node, fn: str, target: Node | None, args: list[Node]) -> None:
        """Which value an optional holds, and the type and size of ``value()`` read from it."""
        if len(args) == 1 and fn in ("optional.of", "optional.ofNonZeroValue"):
            self.optionals[id(e)] = args[0]
        elif fn == "_?_:_" and len(args) == 3 and id(args[1]) in self.optionals:
            self.optionals[id(e)] = self.optionals[id(args[1])]
        elif fn in ("value", "orValue") and target is not None and id(target) in self.optionals:
            inner = self.optionals[id(target)]
            self.types[id(e)] = self.type_of(inner)  # its type; cel-go estimates no size through it

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
            if fn == "_==_" and len(kinds) == 1 and kinds <= {"net.IP", "net.CIDR"}:
                return fixed(1).add(summed), None  # addresses compared as bytes (library/cost.go)
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
    "sets.contains": "bool",
    "sets.intersects": "bool",
    "sets.equivalent": "bool",
    "startsWith": "bool",
    "endsWith": "bool",
    "contains": "bool",
    "int": "int",
    "uint": "uint",
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "duration": "duration",
    "timestamp": "timestamp",
    "lowerAscii": "string",
    "upperAscii": "string",
    "trim": "string",
    "replace": "string",
    "substring": "string",
    "join": "string",
    "split": "list",
    "indexOf": "int",
    "lastIndexOf": "int",
    "ip": "net.IP",
    "cidr": "net.CIDR",
    "masked": "net.CIDR",
    "slice": "list",
    "flatten": "list",
    "distinct": "list",
    "sort": "list",
    "lists.range": "list",
}


# the namespaced functions of cel-go's extensions Kubernetes' environment declares (ext.Sets), and
# the sets functions' cost factors
NAMESPACED = {
    "sets": frozenset({"contains", "equivalent", "intersects"}),
    "lists": frozenset({"range"}),
    "strings": frozenset({"quote"}),
    "format": frozenset({*VALIDATORS, "named"}),  # Kubernetes' format library (library/format.go)
}
# functions under a namespace the runtime has as they are written (``optional.of(x)``): cel-go
# resolves them as one global name, with no cost for the namespace
_RUNTIME_NAMESPACED = {"optional": frozenset({"of", "ofNonZeroValue", "none", "unwrap"})}
MAX_NAME_FORMAT_REGEX_SIZE = 128  # apiserver/pkg/cel/limits.go
_SETS_FACTORS = {"sets.contains": 1.0, "sets.intersects": 1.0, "sets.equivalent": 2.0}


def _library_cost(c: Coster, fn: str, target: Node | None, args: list[Node]) -> tuple[Range, Range | None] | None:
    """The Kubernetes CEL libraries' estimates (``EstimateCallCost``, apiserver/pkg/cel/library/
    cost.go): the cost and, where it says, the result's size; None where it leaves the call to
    cel-go's default of one."""
    st = STRING_TRAVERSAL
    if fn == "validate" and target is not None and len(args) == 1:  # a named format's regex, estimated long
        return c.size_or_unknown(args[0]).factor(st).factor(MAX_NAME_FORMAT_REGEX_SIZE * REGEX_LENGTH), None
    lists = _lists_cost(c, fn, target, args)
    if lists is not None:
        return lists
    if fn in _SETS_FACTORS and len(args) == 2:
        # cel-go's ext/sets.go (estimateSetsCost): one per call and the product of the two
        # lists' sizes, twice for equivalent (each list looked up in the other)
        product = c.size_or_unknown(args[0]).mul(c.size_or_unknown(args[1]))
        return product.factor(_SETS_FACTORS[fn]).add(fixed(1)), None
    if target is None:
        if fn in ("url", "cidr", "isIP", "isCIDR", "ip", "quantity", "isQuantity", "semver", "isSemver") and args:
            sz = c.size_or_unknown(args[0])
            return sz.factor(st), (sz if fn == "url" else None)
        return None
    if fn in ("lowerAscii", "upperAscii", "trim", "substring"):
        sz = c.size_or_unknown(target)
        return sz.factor(st), sz
    if fn in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        element = _list_element(c, target)
        if element is None:  # a string's indexOf and lastIndexOf
            return c.size_or_unknown(target).factor(st), None
        kind, size = element
        each = fixed(1).add(size.factor(st)) if kind in ("string", "bytes") else fixed(1)
        return c.size_or_unknown(target).mul(each), None
    if fn == "replace" and len(args) >= 2:
        return _replace(c.size_or_unknown(target), c.size_or_unknown(args[0]), c.size_or_unknown(args[1]))
    if fn == "split":
        sz = c.size_or_unknown(target)
        most = sz.hi
        if len(args) > 1 and args[1].kind == "lit" and args[1].lit_type == "int":
            # a negative limit (split all) read as uint64, as library/cost.go converts it
            most = int(args[1].value) % (MAX_UINT64 + 1)
        return sz.factor(2 * st), Range(0, most)
    if fn == "join":
        listed = c.size_or_unknown(target)
        element = _list_element(c, target)
        sz = listed.mul(element[1]) if element is not None else ZERO
        if args:
            separators = Range(max(listed.lo - 1, 0), max(listed.hi - 1, 0))
            sz = sz.add(c.size_or_unknown(args[0]).mul(separators))
        return sz.factor(st), sz
    if fn in ("find", "findAll") and args:
        sz = c.size_or_unknown(target)
        per_char = sz.add(fixed(1)).factor(st)
        return per_char.mul(c.size_or_unknown(args[0]).factor(REGEX_LENGTH)), Range(0, sz.hi)
    if fn == "ip":  # a cidr's ip(): a field
        return fixed(1), None
    if fn in ("containsIP", "containsCIDR") and args:
        address = Range(4, 16)  # the bytes of an IPv4 or IPv6 address
        compared = address.add(address).factor(st)
        if fn == "containsCIDR":
            compared = compared.add(address.factor(st)).add(fixed(1))
        if c.type_of(args[0]) == "string":  # the string parsed first
            compared = compared.add(c.size_or_unknown(args[0]).factor(st))
        return compared, None
    return None


def _lists_cost(c: Coster, fn: str, target: Node | None, args: list[Node]) -> tuple[Range, Range] | None:
    """cel-go's lists extension (ext/lists.go, ``ListsVersion(3)`` in Kubernetes' environment):
    one per call, a list created, and the result's size by the call's factor (the square of the
    list's for distinct and sort, which compare the elements with each other)."""

    def allocating(factor: float, size: Range) -> tuple[Range, Range]:  # estimateAllocatingListCall
        return size.factor(factor).add(fixed(1 + LIST_CREATE)), size

    if target is None:
        if fn == "lists.range" and len(args) == 1:
            return allocating(1, fixed(_uint_literal(args[0], MAX_UINT64)))
        return None
    if fn == "slice" and len(args) == 2:
        sz = c.size_or_unknown(target)
        start, end = _uint_literal(args[0], 0), _uint_literal(args[1], sz.hi)
        return allocating(1, fixed((end - start) % (MAX_UINT64 + 1)))
    if fn == "flatten" and len(args) <= 1:
        depth = _uint_literal(args[0], MAX_UINT64) if args else 1
        return allocating(depth, c.size_or_unknown(target))
    if fn == "reverse" and not args and c.type_of(target) == "list":  # a string's is cel-go's default
        return allocating(1, c.size_or_unknown(target))
    if fn == "@sortByAssociatedKeys" and len(args) == 1:  # sortBy: by the size of its keys' list
        sz = c.size_or_unknown(args[0])
        key = _sort_by_key(args[0])
        textual = key is not None and c.type_of(key) in ("string", "bytes")
        return allocating(2 + STRING_TRAVERSAL if textual else 2, sz.mul(sz))
    if fn in ("distinct", "sort") and not args:
        sz = c.size_or_unknown(target)
        element = _list_element(c, target) if fn == "sort" else None
        textual = element is not None and element[0] in ("string", "bytes")
        return allocating(2 + STRING_TRAVERSAL if textual else 2, sz.mul(sz))
    return None


def _sort_by_key(keys: Node) -> Node | None:
    """The key expression of sortBy's keys, the map its expansion makes (``[key]`` in its step)."""
    if keys.kind != "comp":
        return None
    step = keys.kids[3]
    if step.kind == "call" and len(step.kids) == 2 and step.kids[1].kind == "list" and step.kids[1].kids:
        return step.kids[1].kids[0]
    return None


def _uint_literal(node: Node, default: int) -> int:
    """``nodeAsUintValue`` (ext/costs.go): an int literal argument's value (0 when negative), else
    ``default``."""
    if node.kind == "lit" and node.lit_type == "int":
        return max(int(node.value), 0)
    return default


def _list_element(c: Coster, target: Node) -> tuple[str, Range] | None:
    """``listElementNode``: the kind and size of a list's elements, where the target is a list."""
    path = c._path(target)
    if path is not None and c.type_of(target) == "list":
        decl = c._decl_of([*path, "@items"])
        size = c._estimate_size([*path, "@items"])
        kind = decl.kind if decl is not None else "dyn"
        if size is None:
            size = fixed(1) if kind in _SCALAR_TYPES else UNKNOWN
        return kind, size
    entry = c.entry(target)
    if entry is not None and entry[0] == "list":
        kinds = {c.type_of(k) for k in target.kids} if target.kind == "list" else set()
        return (kinds.pop() if len(kinds) == 1 else "dyn"), entry[2]
    return None


def _replace(sz: Range, old: Range, new: Range) -> tuple[Range, Range]:
    """``replace``'s estimate: a traversal and the result's construction, and the result's size
    from the most and fewest replacements the sizes allow."""
    if old.lo == 0:  # an empty string replaced: around every character
        most, kept_most = (min(sz.hi + 1, MAX_UINT64), sz.hi)
    elif new.hi <= old.lo:
        most, kept_most = 0, sz.hi
    else:
        most, kept_most = math.ceil(sz.hi / old.lo), 0
    if old.hi == 0:
        fewest, kept_fewest = (min(sz.lo + 1, MAX_UINT64), sz.lo)
    elif old.hi <= new.lo:
        fewest, kept_fewest = 0, sz.lo
    else:
        fewest, kept_fewest = math.ceil(sz.lo / old.hi), 0
    size = Range(fewest, most).mul(new).add(Range(kept_fewest, kept_most))
    return sz.factor(2 * STRING_TRAVERSAL), size


def estimated_cost(
    expression: str, root: Decl | None, sizes: Sizes | None = None, roots: tuple[str, ...] = ("self", "oldSelf")
) -> int:
    """The most an expression can cost for a ``self`` (or ``roots``) of the declared type
    (``Range.hi``); ``sizes``: the sizes of an actual value's paths instead of the declared maxima."""
    return Coster(root, sizes, roots).cost(parse(expression)).hi
