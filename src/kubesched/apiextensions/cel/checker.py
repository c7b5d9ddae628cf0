"""cel-go's type checker (``checker/checker.go``) for a CRD's rules, as kube-apiserver runs it when the
CRD is written (``apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go``): fields a schema
does not declare, operators applied to types they have no overload for, names nothing declares, and
a rule that is not a bool or a messageExpression that is not a string, each with cel-go's words and
the ``ERROR: <input>:line:col:`` snippet it prints.

It refuses only what cel-go refuses: where it cannot tell (a ``dyn`` value, a library function whose
arguments it does not check) it lets the rule through, to fail when it runs if it must. Kubernetes'
ip, cidr, url, quantity and semver functions are checked overload by overload."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubesched.apiextensions.cel.decls import Decl
from kubesched.apiextensions.cel.formatting import CLAUSE_TYPES, FormatError, clauses, complaint
from kubesched.apiextensions.cel.named_formats import VALIDATORS
from kubesched.apiextensions.cel.syntax import ACCU, MAP_INSERT, OPT_INDEX, OPT_SELECT, Node, parse, snippet


@dataclass(frozen=True, slots=True)
class Type:
    """A CEL type: ``int``, ``list(string)``, a schema object's declared fields, ``dyn``; ``error``
    after a reported error, which like ``dyn`` matches anything so that one mistake is reported once."""

    name: str
    elem: Type | None = None  # list: the element; map: the value
    key: Type | None = None  # map
    decl: Decl | None = field(default=None, compare=False)  # object: its declared fields
    path: str = field(default="", compare=False)  # object: how messages name it

    def __str__(self) -> str:
        if self.name == "list":
            return f"list({self.elem})"
        if self.name == OPTIONAL:
            return f"{OPTIONAL}({self.elem})"
        if self.name == "map":
            return f"map({self.key}, {self.elem})"
        return self.path if self.name == "object" else self.name


OPTIONAL = "optional_type"  # cel-go's optional types (cel.OptionalTypes): its value's type is ``elem``
DYN, ERROR, BOOL, INT, UINT, DOUBLE, STRING, BYTES, NULL, TYPE = (
    Type(n) for n in ("dyn", "error", "bool", "int", "uint", "double", "string", "bytes", "null", "type")
)
TIMESTAMP, DURATION = Type("timestamp"), Type("duration")
NUMBERS = ("int", "uint", "double")
# types that match any other: dyn, an error already reported, and DRA's attribute values (the
# "unknown type" of an attribute, declared as google.protobuf.Any)
ANY = "google.protobuf.Any"
_OPEN = ("dyn", "error", ANY)


def of_decl(decl: Decl | None, path: str = "selfType") -> Type:
    """The CEL type of a schema node's ``DeclType``; an object is named by its path from ``self``
    (kube-apiserver's names add a random number to ``selfType``: ``selfType57131015.spec``)."""
    if decl is None:
        return DYN
    if decl.type_name:
        return Type(decl.type_name)
    if decl.kind == "list":
        return Type("list", of_decl(decl.elem, path))
    if decl.kind == "map":
        return Type("map", of_decl(decl.elem, path), STRING)
    if decl.kind == "object":
        return Type("object", decl=decl, path=path)
    return Type(decl.kind)


# the names kube-apiserver's CEL environment declares for a CRD's rules, besides the variables:
# the standard library, the type names, Kubernetes' libraries (apiserver/pkg/cel/library: lists,
# regex, urls, quantity, ip, cidr, format, semver, authz-free) and the cel-go extensions it adds
# (strings, sets, optional types, two-variable comprehensions, lists)
_TYPE_NAMES = {"int", "uint", "double", "string", "bytes", "bool", "null_type", "list", "map", "type", "dyn"}
_FUNCTIONS = {
    "size",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "duration",
    "timestamp",
    "dyn",
    "type",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    # cel-go ext.Strings
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "format",
    "quote",
    "reverse",
    # Kubernetes' lists, regex and URL libraries
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    # quantity
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
    "compareTo",
    "isLessThan",
    "isGreaterThan",
    # ip and cidr
    "ip",
    "isIP",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "isCanonical",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
    # format and semver
    "validate",
    "named",
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    # optional types, lists and two-variable comprehensions
    "hasValue",
    "value",
    "orValue",
    "or",
    "optMap",
    "optFlatMap",
    "slice",
    "flatten",
    "distinct",
    "sort",
    "sortBy",
    "range",
    "first",
    "last",
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
}
# functions named under a namespace (``sets.contains(a, b)``, ``optional.of(x)``)
# (Kubernetes' environment declares no ``math`` or ``base64``: cel-go's Math and Encoders extensions
# are not among its libraries, environment/base.go)
_NAMESPACES = {"sets", "optional", "strings", "format", "lists"}
_STRING_TESTS = ("startsWith", "endsWith", "contains", "matches")
_RETURNS = {
    "int": INT,
    "uint": UINT,
    "double": DOUBLE,
    "string": STRING,
    "bytes": BYTES,
    "bool": BOOL,
    "duration": DURATION,
    "timestamp": TIMESTAMP,
    "type": TYPE,
    "lowerAscii": STRING,
    "upperAscii": STRING,
    "trim": STRING,
    "replace": STRING,
    "substring": STRING,
    "charAt": STRING,
    "quote": STRING,
    "format": STRING,
    "join": STRING,
    "split": Type("list", STRING),
    "isURL": BOOL,
    "isQuantity": BOOL,
    "isIP": BOOL,
    "isCIDR": BOOL,
    "isSemver": BOOL,
    "isSorted": BOOL,
}


# Kubernetes' libraries whose values are objects of their own (k8s.io/apiserver/pkg/cel/library: ip.go,
# cidr.go, urls.go, quantity.go, semverlib.go): each function's overloads as (receiver or None for a
# global, parameter types, result); a call none of them takes is refused as cel-go refuses it
IP, CIDR, URL, QUANTITY, SEMVER, FORMAT = (
    Type(n)
    for n in (
        "net.IP",
        "net.CIDR",
        "kubernetes.URL",
        "kubernetes.Quantity",
        "kubernetes.Semver",
        "kubernetes.NamedFormat",
    )
)
_Overload = tuple[Type | None, tuple[Type, ...], Type]
_LIBRARY: dict[str, tuple[_Overload, ...]] = {
    "ip": ((None, (STRING,), IP), (CIDR, (), IP)),
    "family": ((IP, (), INT),),
    "isUnspecified": ((IP, (), BOOL),),
    "isLoopback": ((IP, (), BOOL),),
    "isLinkLocalMulticast": ((IP, (), BOOL),),
    "isLinkLocalUnicast": ((IP, (), BOOL),),
    "isGlobalUnicast": ((IP, (), BOOL),),
    "isIP": ((None, (STRING,), BOOL),),
    "cidr": ((None, (STRING,), CIDR),),
    "containsIP": ((CIDR, (STRING,), BOOL), (CIDR, (IP,), BOOL)),
    "containsCIDR": ((CIDR, (STRING,), BOOL), (CIDR, (CIDR,), BOOL)),
    "prefixLength": ((CIDR, (), INT),),
    "masked": ((CIDR, (), CIDR),),
    "isCIDR": ((None, (STRING,), BOOL),),
    "url": ((None, (STRING,), URL),),
    "getScheme": ((URL, (), STRING),),
    "getHost": ((URL, (), STRING),),
    "getHostname": ((URL, (), STRING),),
    "getPort": ((URL, (), STRING),),
    "getEscapedPath": ((URL, (), STRING),),
    "getQuery": ((URL, (), Type("map", Type("list", STRING), STRING)),),
    "isURL": ((None, (STRING,), BOOL),),
    "quantity": ((None, (STRING,), QUANTITY),),
    "isQuantity": ((None, (STRING,), BOOL),),
    "sign": ((None, (QUANTITY,), INT),),
    "isGreaterThan": ((QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)),
    "isLessThan": ((QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)),
    "compareTo": ((QUANTITY, (QUANTITY,), INT), (SEMVER, (SEMVER,), INT)),
    "asApproximateFloat": ((QUANTITY, (), DOUBLE),),
    "asInteger": ((QUANTITY, (), INT),),
    "isInteger": ((QUANTITY, (), BOOL),),
    "add": ((QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (INT,), QUANTITY)),
    "sub": ((QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (INT,), QUANTITY)),
    "semver": ((None, (STRING,), SEMVER), (None, (STRING, BOOL), SEMVER)),
    "isSemver": ((None, (STRING,), BOOL), (None, (STRING, BOOL), BOOL)),
    "major": ((SEMVER, (), INT),),
    "minor": ((SEMVER, (), INT),),
    "patch": ((SEMVER, (), INT),),
    "validate": ((FORMAT, (STRING,), Type(OPTIONAL, Type("list", STRING))),),
}
_LIBRARY_TYPES = {t.name for t in (IP, CIDR, URL, QUANTITY, SEMVER, FORMAT)}


def _library_call(fn: str, target: Type | None, args: list[Type]) -> Type | None:
    """The result of the first of ``fn``'s library overloads the call's types match (an open
    type matches any), None when none does."""
    for receiver, params, result in _LIBRARY[fn]:
        if (receiver is None) != (target is None) or len(params) != len(args):
            continue
        given = ([target] if target is not None else []) + args
        wanted = ([receiver] if receiver is not None else []) + list(params)
        if all(g.name in _OPEN or g.name == w.name for g, w in zip(given, wanted, strict=True)):
            return result
    return None


@dataclass(frozen=True, slots=True)
class Problem:
    offset: int
    message: str


class Checker:
    """One expression's check, ``self`` (and ``oldSelf``) of type ``root``."""

    def __init__(self, text: str, root: Type, variables: tuple[str, ...] = ("self", "oldSelf")) -> None:
        self.text = text
        self.root = root
        self.problems: list[Problem] = []
        self.scopes: list[dict[str, Type]] = [dict.fromkeys(variables, root)]
        self.types: dict[int, Type] = {}  # each node's type once checked, by id
        self.in_format = 0  # how many format calls enclose the node being checked
        self.shared_problems: dict[int, list[Problem]] = {}

    def report(self, node: Node, message: str) -> Type:
        self.problems.append(Problem(node.pos, message))
        return ERROR

    def no_overload(self, node: Node, fn: str, *args: Type, target: Type | None = None) -> Type:
        shown = ", ".join(str(a) for a in args)
        applied = f"{target}.({shown})" if target is not None else f"({shown})"
        return self.report(node, f"found no matching overload for '{fn}' applied to '{applied}'")

    def check(self, e: Node) -> Type:
        if not e.shared:
            t = self.types[id(e)] = self._check(e)
            return t
        # optMap's optional, referred to twice: cel-go checks its two copies, and reports what is
        # wrong in it twice; here it is checked once and its problems repeated
        if id(e) in self.types:
            self.problems.extend(self.shared_problems.get(id(e), ()))
            return self.types[id(e)]
        before = len(self.problems)
        t = self.types[id(e)] = self._check(e)
        self.shared_problems[id(e)] = self.problems[before:]
        return t

    def _check(self, e: Node) -> Type:
        if e.kind == "lit":
            return Type(e.lit_type) if e.lit_type else DYN
        if e.kind == "ident":
            return self._ident(e)
        if e.kind == "select":
            return self._select(e)
        if e.kind == "list":
            return self._list(e)
        if e.kind == "map":
            return self._map(e)
        if e.kind == "comp":
            return self._comp(e)
        if e.kind == "call":
            return self._call(e)
        for kid in e.kids:
            self.check(kid)
        return DYN

    def _ident(self, e: Node) -> Type:
        for scope in reversed(self.scopes):
            if e.value in scope:
                return scope[e.value]
        if e.value in _TYPE_NAMES:
            return TYPE
        return self.report(e, f"undeclared reference to '{e.value}' (in container '')")

    def _select(self, e: Node) -> Type:
        operand = e.kids[0]
        if operand.kind == "ident" and operand.value in _NAMESPACES and not self._declared(operand.value):
            return DYN  # a namespaced name, not a field
        t = self.check(operand)
        if t.name == OPTIONAL and not e.test_only:  # a field of an optional's value: optional too
            out = self._field(e, t.elem or DYN, str(e.value))
            return out if out.name == "error" else Type(OPTIONAL, out)
        out = self._field(e, t, str(e.value))
        return BOOL if e.test_only and out.name != "error" else out

    def _field(self, e: Node, t: Type, name: str) -> Type:
        """The type of field ``name`` of a value of type ``t``, or the error cel-go reports."""
        if t.name in _OPEN:
            return t
        if t.name == "object":
            assert t.decl is not None
            found = t.decl.member(name)
            if found is None:
                return self.report(e, f"undefined field '{name}'")
            return of_decl(found, f"{t.path}.{name}")
        if t.name == "map":
            return t.elem or DYN
        return self.report(e, f"type '{t}' does not support field selection")

    def _opt_index(self, e: Node) -> Type:
        """``a[?k]``: an optional of the element (of the optional's value, when ``a`` is one)."""
        t, key = self.check(e.kids[0]), self.check(e.kids[1])
        if t.name == "error" or key.name == "error":
            return ERROR
        over = t.elem or DYN if t.name == OPTIONAL else t
        out = _index(over, key)
        if out is None:
            return self.no_overload(e, OPT_INDEX, t, key)
        return Type(OPTIONAL, out)

    def _opt_select(self, e: Node) -> Type:
        """``a.?b``: an optional of the field (of the optional's value, when ``a`` is one)."""
        t = self.check(e.kids[0])
        if t.name == "error":
            return ERROR
        out = self._field(e, t.elem or DYN if t.name == OPTIONAL else t, str(e.kids[1].value))
        return out if out.name == "error" else Type(OPTIONAL, out)

    def _declared(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def _list(self, e: Node) -> Type:
        first: Type | None = None
        mismatched = False
        for i, kid in enumerate(e.kids):
            t = self.check(kid)
            if e.value and i in e.value:  # [?x]: x's value, when it has one
                t = self._optional_entry(kid, t)
            if first is None or first.name in _OPEN:
                first = t
            elif t.name not in _OPEN and not _same(first, t) and not mismatched:
                mismatched = True  # cel-go reports a list's first mismatch only
                if not self.in_format:
                    self.report(kid, f"expected type '{first}' but found '{t}'")
        return Type("list", first if first is not None else DYN)

    def _map(self, e: Node) -> Type:
        """A map literal's keys and values (its nodes alternate: key, value, key, ...)."""
        seen: list[Type | None] = [None, None]
        for i, kid in enumerate(e.kids):
            t = self.check(kid)
            if e.value and i % 2 and i // 2 in e.value:  # {?k: v}: v's value, when it has one
                t = self._optional_entry(kid, t)
            first = seen[i % 2]
            if first is None or first.name in _OPEN:
                seen[i % 2] = t
            elif t.name not in _OPEN and not _same(first, t) and not self.in_format:
                self.report(kid, f"expected type '{first}' but found '{t}'")
        return Type("map", seen[1] or DYN, seen[0] or DYN)

    def _optional_entry(self, kid: Node, t: Type) -> Type:
        """An optional entry's type is its optional's value's; an entry that is not optional is
        refused as cel-go refuses it."""
        if t.name == OPTIONAL:
            return t.elem or DYN
        if t.name not in _OPEN:
            self.report(kid, f"expected type '{OPTIONAL}({t})' but found '{t}'")
        return t

    def _comp(self, e: Node) -> Type:
        rng, init, cond, step, result = e.kids
        over = self.check(rng)
        value = DYN  # a two-variable comprehension's second variable
        if over.name == "list":
            var = INT if e.iter_var2 else over.elem or DYN
            value = over.elem or DYN
        elif over.name == "map":
            var, value = over.key or DYN, over.elem or DYN
        elif over.name in _OPEN:
            var = DYN
        else:
            self.report(
                rng,
                f"expression of type '{over}' cannot be the range of a comprehension (must be list, map, or dynamic)",
            )
            var = DYN
        accu = {"all": BOOL, "exists": BOOL, "exists_one": INT, "existsOne": INT}.get(e.macro)
        if e.macro == "filter":
            accu = Type("list", var)
        accu = accu or self.check(init)
        scope = {e.iter_var: var, e.accu_var: accu}
        if e.iter_var2:
            scope[e.iter_var2] = value
        self.scopes.append(scope)
        try:
            self.check(cond)
            stepped = self.check(step)
            if e.macro in ("map", "transformList", "transformMap", "transformMapEntry"):
                self.scopes[-1][e.accu_var] = stepped
            return self.check(result)
        finally:
            self.scopes.pop()

    def _call(self, e: Node) -> Type:
        fn = e.value
        if fn == OPT_SELECT:
            return self._opt_select(e)
        if fn == OPT_INDEX:
            return self._opt_index(e)
        if fn == "format" and e.target and len(e.kids) == 2 and e.kids[1].kind == "list":
            return self._format(e)
        named = e.target and e.kids[0].kind == "ident" and e.kids[0].value in _NAMESPACES
        if named and e.kids[0].value == "optional" and not self._declared("optional"):
            if fn == "unwrap" and len(e.kids) == 2:
                return self._unwrap(e, e.kids[1], None)
            if fn not in ("of", "ofNonZeroValue", "none"):
                return self.report(e, f"undeclared reference to 'optional.{fn}' (in container '')")
            return self._optional_made(f"optional.{fn}", e.kids[1:])
        if fn == "unwrapOpt" and e.target and len(e.kids) == 1:
            return self._unwrap(e, e.kids[0], e.kids[0])
        if named and e.kids[0].value == "format" and not self._declared("format"):
            return self._named_format(e, fn, e.kids[1:])
        if fn in ("optional.of", "optional.none"):  # optMap's and optFlatMap's expansions
            return self._optional_made(fn, e.kids)
        if named and not self._declared(e.kids[0].value):
            for arg in e.kids[1:]:
                self.check(arg)
            return DYN
        args = [self.check(k) for k in e.kids]
        if fn in ("_&&_", "_||_"):
            for kid, t in zip(e.kids, args, strict=True):
                if t.name not in (*_OPEN, "bool"):
                    self.report(kid, f"expected type 'bool' but found '{t}'")
            return BOOL
        if fn == "@not_strictly_false":
            return BOOL
        if fn == "@sortByAssociatedKeys":  # sortBy's expansion: the list sorted by keys of one comparable type
            key = args[1].elem if args[1].name == "list" else None
            if args[1].name in _OPEN or key is None or key.name in (*_OPEN, *_SORTABLE):
                return args[0]
            return self.no_overload(e, fn, *args[1:], target=args[0])
        if fn == MAP_INSERT:  # transformMap's step: (map, key, value); transformMapEntry's: (map, map)
            if len(args) == 3:
                return Type("map", args[1], args[2])
            return args[1] if args[1].name == "map" else DYN
        if e.target and args[0].name == "error" and fn not in _FUNCTIONS and fn not in _LIBRARY:
            # an undeclared receiver (``math.greatest``: no such namespace here) and a function
            # nothing declares: cel-go names both
            return self.report(e, f"undeclared reference to '{fn}' (in container '')")
        if any(t.name == "error" for t in args):
            return _OPERATOR_RESULTS.get(fn, ERROR)
        if fn in _OPERATORS:
            out = _OPERATORS[fn](*args)
            if fn == "_+_" and out is not None and e.kids[0].kind == "ident" and e.kids[0].value == ACCU:
                self._unify_accumulator(out)
            return out if out is not None else self.no_overload(e, fn, *args)
        if e.target and fn in _OPTIONAL_CALLS:
            return self._optional_call(e, fn, args[0], args[1:])
        if fn == "size":
            if len(args) == 1 and args[0].name in ("string", "bytes", "list", "map", *_OPEN):
                return INT
            if e.target:
                return self.no_overload(e, fn, *args[1:], target=args[0])
            return self.no_overload(e, fn, *args)
        if e.target and fn in _STRING_TESTS and args[0].name == "string":
            if len(args) != 2 or args[1].name not in ("string", *_OPEN):
                return self.no_overload(e, fn, *args[1:], target=args[0])
            if fn == "matches":
                self._regex(e.kids[1])
            return BOOL
        if not e.target and fn == "matches" and len(args) == 2 and args[1].name == "string":
            self._regex(e.kids[1])
            return BOOL
        if fn in _LIBRARY or (fn == "string" and any(t.name in _LIBRARY_TYPES for t in args)):
            target, rest = (args[0], args[1:]) if e.target else (None, args)
            if fn == "string":  # ip and cidr to string; the standard conversions are not checked here
                return STRING
            result = _library_call(fn, target, rest)
            return result if result is not None else self.no_overload(e, fn, *rest, target=target)
        if fn not in _FUNCTIONS:
            return self.report(e, f"undeclared reference to '{fn}' (in container '')")
        if fn == "dyn":
            return DYN
        return _RETURNS.get(fn, BOOL if fn in _STRING_TESTS else DYN)

    def _named_format(self, e: Node, fn: str, kids: list[Node]) -> Type:
        """Kubernetes' format library: ``format.dns1123Label()`` and its siblings, a format;
        ``format.named(name)``, an optional of one."""
        args = [self.check(k) for k in kids]
        if fn == "named" and len(args) == 1 and args[0].name in ("string", *_OPEN):
            return Type(OPTIONAL, FORMAT)
        if fn in VALIDATORS and not args:
            return FORMAT
        if fn == "named" or fn in VALIDATORS:
            return self.no_overload(e, f"format.{fn}", *args)
        # not a function of the library: cel-go reads ``format`` as a variable, and the call as a
        # member function, and declares neither
        self.report(e.kids[0], "undeclared reference to 'format' (in container '')")
        return self.report(e, f"undeclared reference to '{fn}' (in container '')")

    def _optional_made(self, fn: str, kids: list[Node]) -> Type:
        """``optional.of(x)``, ``optional.ofNonZeroValue(x)``: an optional of x's type;
        ``optional.none()``: of any type."""
        args = [self.check(k) for k in kids]
        if fn in ("optional.of", "optional.ofNonZeroValue") and len(args) == 1:
            return Type(OPTIONAL, args[0])
        return Type(OPTIONAL, DYN)

    def _unify_accumulator(self, grown: Type) -> None:
        """A list macro's step ``@result + [e]``: cel-go binds the accumulator's element type to
        e's when the addition type-checks, so the accumulator read later in the step (map's
        filtering form: ``p ? @result + [e] : @result``) is a list of e's type."""
        for scope in reversed(self.scopes):
            if ACCU in scope:
                held = scope[ACCU]
                if held.name == "list" and (held.elem is None or held.elem.name in _OPEN) and grown.name == "list":
                    scope[ACCU] = grown
                return

    def _unwrap(self, e: Node, arg: Node, target: Node | None) -> Type:
        """``optional.unwrap(l)`` and ``l.unwrapOpt()``: the values of a list of optionals, those
        that have one (cel-go's optional library, version 2). kubesched's runtime holds a list of
        optionals only as it is written, so ``l`` must be a list literal or a ``map`` macro
        (``unwrapped_operand``); cel-go takes any list of optionals."""
        t = self.check(arg)
        if t.name == "error":
            return ERROR
        elem = t.elem if t.name == "list" else None
        if t.name not in _OPEN and (elem is None or elem.name not in (OPTIONAL, *_OPEN)):
            if target is not None:
                return self.no_overload(e, "unwrapOpt", target=t)
            return self.no_overload(e, "optional.unwrap", t)
        if unwrapped_operand(arg) is None:  # a dyn value too: nothing here could run it
            fn = "unwrapOpt" if target is not None else "optional.unwrap"
            return self.report(e, f"{fn} runs here only on a list literal or a map macro's list, not on '{t}'")
        if elem is None or elem.name != OPTIONAL:
            return Type("list", DYN)
        return Type("list", elem.elem or DYN)

    def _optional_call(self, e: Node, fn: str, target: Type, args: list[Type]) -> Type:
        """A list's ``first()`` and ``last()``, and an optional's ``hasValue()``, ``value()``,
        ``orValue(x)``, ``or(o)`` (cel-go's optional library, version 2)."""
        if target.name in _OPEN:
            return Type(OPTIONAL, DYN) if fn in ("first", "last", "or") else BOOL if fn == "hasValue" else DYN
        if fn in ("first", "last"):
            if target.name == "list" and not args:
                return Type(OPTIONAL, target.elem or DYN)
            return self.no_overload(e, fn, *args, target=target)
        if target.name != OPTIONAL:
            return self.no_overload(e, fn, *args, target=target)
        inner = target.elem or DYN
        if fn == "hasValue" and not args:
            return BOOL
        if fn == "value" and not args:
            return inner
        if fn == "orValue" and len(args) == 1 and _same(inner, args[0]):
            return inner if inner.name not in _OPEN else args[0]
        if fn == "or" and len(args) == 1 and args[0].name in (OPTIONAL, *_OPEN) and _same(target, args[0]):
            return target
        return self.no_overload(e, fn, *args, target=target)

    def _format(self, e: Node) -> Type:
        """``<string>.format([...])``: the list literal may mix types (the format validator exempts
        it from the homogeneous-literal check), and a literal format string is parsed now, each
        clause against its argument's type (``stringFormatValidator``, ext/formatting.go)."""
        # a literal anywhere inside a format call may mix types (cel-go's inExemptFunction)
        self.in_format += 1
        try:
            target = self.check(e.kids[0])
            elements = [self.check(k) for k in e.kids[1].kids]
        finally:
            self.in_format -= 1
        if target.name == "error" or any(t.name == "error" for t in elements):
            return ERROR
        if target.name not in ("string", *_OPEN):
            return self.no_overload(e, "format", Type("list", DYN), target=target)
        if e.kids[0].kind == "lit" and e.kids[0].lit_type == "string":
            self._format_clauses(e, str(e.kids[0].value), e.kids[1].kids)
        return STRING

    def _format_clauses(self, e: Node, text: str, nodes: list[Node]) -> None:
        try:
            found = clauses(text)
        except FormatError as exc:
            self.report(e, str(exc))
            return
        for index, (letter, _precision) in enumerate(found):
            if index >= len(nodes):
                self.report(e, f"index {index} out of range")
                return
            bad = self._unformattable(nodes[index], CLAUSE_TYPES.get(letter))
            if bad is not None:
                node, t = bad
                self.report(node, f"error during formatting: {complaint(letter, _type_name(t))}")
                return
        if len(nodes) > len(found):
            self.report(e, f"too many arguments supplied to string.format (expected {len(found)}, got {len(nodes)})")

    def _unformattable(self, node: Node, accepted: tuple[str, ...] | None) -> tuple[Node, Type] | None:
        """The argument (or, for ``%s``, the element of a literal list or map) of a type the clause
        does not take (``verifyTypeOneOf``, ``verifyString``)."""
        t = self.types.get(id(node), DYN)
        if t.name in _OPEN:
            return None
        if accepted is not None:
            return None if t.name in accepted else (node, t)
        if t.name not in _FORMATTABLE:
            return node, t
        if node.kind in ("list", "map"):
            for kid in node.kids:
                bad = self._unformattable(kid, None)
                if bad is not None:
                    return bad
        return None

    def _regex(self, arg: Node) -> None:
        """A literal pattern is compiled when the rule is (cel-go's ``matches`` validator, RE2)."""
        if arg.kind != "lit" or arg.lit_type != "string":
            return
        from kubesched.apiextensions import patterns

        try:
            patterns.compiled(str(arg.value))
        except patterns.PatternError:
            self.report(arg, "invalid matches argument")


def unwrapped_operand(arg: Node) -> Node | None:
    """The list of optionals ``optional.unwrap`` and ``unwrapOpt`` can run on here: a list
    literal, or a one-variable ``map`` macro's comprehension (its values written as filtered and
    mapped); None for any other."""
    if arg.kind == "list" or (arg.kind == "comp" and arg.macro == "map" and not arg.iter_var2):
        return arg
    return None


# what sort and sortBy's keys may be (ext/lists.go's comparableTypes)
_SORTABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
# the optional library's member functions (and the lists' first and last, which yield optionals)
_OPTIONAL_CALLS = frozenset({"first", "last", "hasValue", "value", "orValue", "or"})
# what ``%s`` takes (``verifyString``)
_FORMATTABLE = frozenset(
    {"list", "map", "int", "uint", "double", "bool", "string", "timestamp", "bytes", "duration", "type", "null"}
)


def _type_name(t: Type) -> str:
    return "null_type" if t.name == "null" else str(t) if t.name == "object" else t.name


def _same(a: Type, b: Type) -> bool:
    """Whether two types are one for an overload taking (A, A): ``dyn`` and an empty literal's
    element type match anything; objects are compared by nothing they can tell apart here."""
    if a.name in _OPEN or b.name in _OPEN:
        return True
    if a.name != b.name:
        return False
    if a.name in ("list", "map", OPTIONAL):
        return _same(a.elem or DYN, b.elem or DYN) and _same(a.key or DYN, b.key or DYN)
    return True


def _equality(a: Type, b: Type) -> Type | None:
    if a.name == "null" or b.name == "null":
        other = b if a.name == "null" else a
        return None if other.name in (*NUMBERS, "string", "bool") else BOOL
    return BOOL if _same(a, b) else None


def _ordering(a: Type, b: Type) -> Type | None:
    if a.name in _OPEN or b.name in _OPEN:
        return BOOL
    if a.name in NUMBERS and b.name in NUMBERS:  # cross-type numeric comparisons are on
        return BOOL
    if a.name == b.name and a.name in ("string", "bytes", "bool", "timestamp", "duration"):
        return BOOL
    return None


def _open(a: Type, b: Type) -> Type | None:
    if a.name in _OPEN:
        return b if b.name not in _OPEN else DYN
    if b.name in _OPEN:
        return a
    return None


def _add(a: Type, b: Type) -> Type | None:
    if (out := _open(a, b)) is not None:
        return out
    if a.name == b.name and a.name in (*NUMBERS, "string", "bytes", "duration"):
        return a
    if a.name == b.name == "list":
        return a if (a.elem or DYN).name not in _OPEN else b
    if {a.name, b.name} == {"timestamp", "duration"}:
        return TIMESTAMP
    return None


def _subtract(a: Type, b: Type) -> Type | None:
    if (out := _open(a, b)) is not None:
        return out
    if a.name == b.name and a.name in (*NUMBERS, "duration"):
        return a
    if a.name == "timestamp" and b.name == "timestamp":
        return DURATION
    if a.name == "timestamp" and b.name == "duration":
        return TIMESTAMP
    return None


def _arithmetic(a: Type, b: Type) -> Type | None:
    if (out := _open(a, b)) is not None:
        return out
    return a if a.name == b.name and a.name in NUMBERS else None


def _modulo(a: Type, b: Type) -> Type | None:
    if (out := _open(a, b)) is not None:
        return out
    return a if a.name == b.name and a.name in ("int", "uint") else None


def _index(a: Type, b: Type) -> Type | None:
    if a.name in _OPEN:
        return DYN
    if a.name == OPTIONAL:  # an element of an optional's value: optional too (optional chaining)
        inner = _index(a.elem or DYN, b)
        return Type(OPTIONAL, inner) if inner is not None else None
    if a.name == "list" and b.name in ("int", *_OPEN):
        return a.elem or DYN
    if a.name == "map" and _same(a.key or DYN, b):
        return a.elem or DYN
    return None


def _in(a: Type, b: Type) -> Type | None:
    if b.name in _OPEN:
        return BOOL
    if b.name == "list" and _same(a, b.elem or DYN):
        return BOOL
    if b.name == "map" and _same(a, b.key or DYN):
        return BOOL
    return None


def _not(a: Type) -> Type | None:
    return BOOL if a.name in ("bool", *_OPEN) else None


def _negate(a: Type) -> Type | None:
    return a if a.name in ("int", "double", *_OPEN) else None


def _conditional(c: Type, a: Type, b: Type) -> Type | None:
    if c.name not in ("bool", *_OPEN) or not _same(a, b):
        return None
    return a if a.name not in _OPEN else b


_OPERATORS: dict[str, Callable[..., Type | None]] = {
    "_==_": _equality,
    "_!=_": _equality,
    "_<_": _ordering,
    "_<=_": _ordering,
    "_>_": _ordering,
    "_>=_": _ordering,
    "_+_": _add,
    "_-_": _subtract,
    "_*_": _arithmetic,
    "_/_": _arithmetic,
    "_%_": _modulo,
    "_[_]": _index,
    "@in": _in,
    "!_": _not,
    "-_": _negate,
    "_?_:_": _conditional,
}
# what an operator yields when an argument is already an error (nothing more is reported)
_OPERATOR_RESULTS = {
    "_==_": BOOL,
    "_!=_": BOOL,
    "_<_": BOOL,
    "_<=_": BOOL,
    "_>_": BOOL,
    "_>=_": BOOL,
    "@in": BOOL,
    "!_": BOOL,
}


def problems(text: str, root: Decl | None, variables: tuple[str, ...] = ("self", "oldSelf")) -> tuple[str, Type]:
    """The errors cel-go's checker reports for ``text`` with ``variables`` declared as ``root`` (a
    CRD rule's ``self`` and ``oldSelf``, DRA's ``device``): one display string, empty when there are
    none, and the expression's type."""
    checker = Checker(text, of_decl(root, variables[0] if variables[0] != "self" else "selfType"), variables)
    out = checker.check(parse(text))
    found = sorted(checker.problems, key=lambda p: p.offset)
    return "\n".join(snippet(text, p.offset, p.message) for p in found), out
