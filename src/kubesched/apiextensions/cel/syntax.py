"""A CEL expression as cel-go's parser hands it to the checker: celpy's lark parse tree turned into
cel-go's AST, with the macros (``all``, ``exists``, ``exists_one``, ``map``, ``filter``, ``has``)
expanded as ``parser/macro.go`` expands them, so the cost model walks the same shape."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _OutcomeCache(Generic[T]):
    """A function of one rule's text with its last answers kept, failures too."""

    def __init__(self, fn: Callable[[str], T], maxsize: int) -> None:
        self._fn = fn
        self._outcome = functools.lru_cache(maxsize=maxsize)(self._run)
        functools.update_wrapper(self, fn)

    def _run(self, text: str) -> tuple[bool, Any]:
        try:
            return True, self._fn(text)
        except Exception as exc:
            return False, _detached(exc)

    def __call__(self, text: str) -> T:
        ok, value = self._outcome(text)
        if ok:
            return value  # type: ignore[no-any-return, unused-ignore]
        raise value.with_traceback(None)

    def cache_clear(self) -> None:
        self._outcome.cache_clear()


def _detached(exc: BaseException) -> BaseException:
    """The failure without what it would keep alive: its frames (and the tree in them) and a
    parser's state (lark's errors hold the parse's stacks); the token, the position and what was
    expected stay, for ``syntax_error``. What it was raised in handling becomes its cause: raised
    again from the cache inside another ``except``, its context would be that one's."""
    if exc.__cause__ is None and exc.__context__ is not None:
        exc.__cause__ = exc.__context__
    seen: BaseException | None = exc
    while seen is not None:
        seen.__traceback__ = None
        for heavy in ("state", "interactive_parser"):
            if getattr(seen, heavy, None) is not None:
                setattr(seen, heavy, None)
        seen = seen.__cause__ or seen.__context__
    return exc


def outcome_cached(maxsize: int) -> Callable[[Callable[[str], T]], _OutcomeCache[T]]:
    """``functools.lru_cache`` that keeps a failure too: a rule that does not parse or compile is
    asked about several times in one write (its compilation, its type check, its cost), and a
    failure found after parsing 100,000 code points is not to be found again each time."""

    def cached(fn: Callable[[str], T]) -> _OutcomeCache[T]:
        return _OutcomeCache(fn, maxsize)

    return cached


@dataclass(eq=False, slots=True)
class Node:
    kind: str  # lit, ident, select, call, list, map, comp
    # lit: the Python value; ident: the name; select: the field; call: the function; list and map:
    # the optional entries' places (``[?x]``, ``{?k: v}``), None when there are none
    value: Any = None
    kids: list[Node] = field(default_factory=list)  # select: [operand]; call: [target?] + args
    target: bool = False  # call: a member call (kids[0] is the target)
    test_only: bool = False  # select: has()
    lit_type: str = ""  # lit: int, uint, double, string, bytes, bool, null
    # comp:
    iter_var: str = ""
    iter_var2: str = ""  # comp: the second variable of a two-variable comprehension (the value)
    accu_var: str = ""
    macro: str = ""  # comp: the macro it expands (all, exists, exists_one, map, filter)
    pos: int = 0  # the offset cel-go's errors point at: an operator, a '.', a call's '(', else the start
    # a node a macro's expansion refers to twice (optMap's optional: its hasValue() and value()), where
    # cel-go copies it; the walkers keep what they found for it the first time, so that a chain of
    # such calls is walked in linear time, not twice a link
    shared: bool = False


ACCU = "@result"


def _comp(iter_var: str, rng: Node, accu_init: Node, cond: Node, step: Node, result: Node, iter_var2: str = "") -> Node:
    kids = [rng, accu_init, cond, step, result]
    return Node("comp", kids=kids, iter_var=iter_var, iter_var2=iter_var2, accu_var=ACCU)


def _call(fn: str, *args: Node, pos: int = 0) -> Node:
    return Node("call", fn, list(args), pos=pos)


def _lit(v: Any, t: str, pos: int = 0) -> Node:
    return Node("lit", v, lit_type=t, pos=pos)


def _ident(name: str, pos: int = 0) -> Node:
    return Node("ident", name, pos=pos)


def _at(node: Node, pos: int) -> Node:
    """The nodes a macro made (position -1) placed at ``pos`` (the macro call's '('), as cel-go's
    macro expander places the nodes it makes; the caller's own nodes keep theirs."""
    node.pos = pos
    for kid in node.kids:
        if kid.pos < 0:
            _at(kid, pos)
    return node


def _macro(name: str, target: Node, args: list[Node], pos: int = 0) -> Node | None:
    """cel-go's ``parser/macro.go`` expansions of the member macros; the nodes they make are at the
    call's position."""
    made = _macro_nodes(name, target, args)
    if made is None:
        return None
    made.macro = name
    return _at(made, pos)


# the two-variable comprehensions (cel-go's ext/comprehensions.go, in Kubernetes' environment
# since 1.32): (index or key, value) pairs; the transforms take an optional filter before the
# transform
TWO_VARIABLE = {"all": 3, "exists": 3, "existsOne": 3, "exists_one": 3}
TRANSFORMS = ("transformList", "transformMap", "transformMapEntry")
MAP_INSERT = "cel.@mapInsert"
OPT_SELECT = "_?._"  # optional field selection, a.?b (cel-go's operators.OptSelect)
OPT_INDEX = "_[?_]"  # optional index, a[?k] (operators.OptIndex)


def _two_variable(name: str, target: Node, args: list[Node]) -> Node | None:
    """``ext/comprehensions.go``'s expansions: the same comprehensions as the one-variable macros,
    with a second iteration variable; transformMap and transformMapEntry insert into a map."""
    if len(args) < 3 or args[0].kind != "ident" or args[1].kind != "ident" or args[0].value == args[1].value:
        return None
    k, v = str(args[0].value), str(args[1].value)
    if ACCU in (k, v) or "__result__" in (k, v):
        return None
    m = -1
    accu = _ident(ACCU, m)
    if TWO_VARIABLE.get(name) == len(args):
        p = args[2]
        if name == "all":
            step = _call("_&&_", accu, p, pos=m)
            return _comp(k, target, _lit(True, "bool", m), _call("@not_strictly_false", accu, pos=m), step, accu, v)
        if name == "exists":
            cond = _call("@not_strictly_false", _call("!_", accu, pos=m), pos=m)
            return _comp(k, target, _lit(False, "bool", m), cond, _call("_||_", accu, p, pos=m), accu, v)
        step = _call("_?_:_", p, _call("_+_", accu, _lit(1, "int", m), pos=m), _ident(ACCU, m), pos=m)
        result = _call("_==_", _ident(ACCU, m), _lit(1, "int", m), pos=m)
        return _comp(k, target, _lit(0, "int", m), _lit(True, "bool", m), step, result, v)
    if name not in TRANSFORMS or len(args) not in (3, 4):
        return None
    keep, made = (args[2], args[3]) if len(args) == 4 else (None, args[2])
    if name == "transformList":
        init = Node("list", pos=m)
        step = _call("_+_", accu, Node("list", kids=[made], pos=m), pos=m)
    elif name == "transformMap":
        init = Node("map", pos=m)
        step = _call(MAP_INSERT, accu, _ident(k, m), made, pos=m)
    else:
        init = Node("map", pos=m)
        step = _call(MAP_INSERT, accu, made, pos=m)
    if keep is not None:
        step = _call("_?_:_", keep, step, _ident(ACCU, m), pos=m)
    return _comp(k, target, init, _lit(True, "bool", m), step, _ident(ACCU, m), v)


class MacroError(ValueError):
    """A macro call cel-go's parser refuses (``parser/macro.go``, ``ext/comprehensions.go``): its
    variable not a simple name, two variables of one name, the accumulator's name; the message is
    cel-go's, with its line and caret."""


# the accumulator's name a rule can spell (parser.AccumulatorName)
_ACCUMULATOR = "__result__"
_QUANTIFIERS = ("all", "exists", "exists_one")


def _malformed_macro(name: str, args: list[Node]) -> tuple[Node, str] | None:
    """The argument and cel-go's complaint when a member macro's call cannot be expanded."""
    one = (name in _QUANTIFIERS and len(args) == 2) or (name == "filter" and len(args) == 2)
    one = (
        one
        or (name == "map" and len(args) in (2, 3))
        or (name in ("sortBy", "optMap", "optFlatMap") and len(args) == 2)
    )
    if one:
        if args[0].kind != "ident":
            if name in _QUANTIFIERS:
                said = "argument must be a simple name"
            elif name in ("optMap", "optFlatMap"):
                said = f"{name}() variable name must be a simple identifier"
            else:
                said = "argument is not an identifier"
            return args[0], said
        if args[0].value == _ACCUMULATOR and name not in ("optMap", "optFlatMap"):
            return args[0], "iteration variable overwrites accumulator variable"
        return None
    if TWO_VARIABLE.get(name) == len(args) or (name in TRANSFORMS and len(args) in (3, 4)):
        for arg in args[:2]:
            if arg.kind != "ident":
                return arg, "argument must be a simple name"
        if args[0].value == args[1].value:
            return args[1], f"duplicate variable name: {args[0].value}"
        for arg in args[:2]:
            if arg.value == _ACCUMULATOR:
                return arg, "iteration variable overwrites accumulator variable"
    return None


def _macro_nodes(name: str, target: Node, args: list[Node]) -> Node | None:
    if name == "map" and len(args) == 3 and args[0].kind == "ident":  # MapFilterMacro: map(x, p, e)
        v, m = args[0].value, -1
        step = _call("_+_", _ident(ACCU, m), Node("list", kids=[args[2]], pos=m), pos=m)
        step = _call("_?_:_", args[1], step, _ident(ACCU, m), pos=m)
        return _comp(v, target, Node("list", pos=m), _lit(True, "bool", m), step, _ident(ACCU, m))
    if len(args) >= 3:
        return _two_variable(name, target, args)
    if len(args) != 2 or args[0].kind != "ident":
        return None
    v, p = args[0].value, args[1]
    accu = _ident(ACCU, -1)
    m = -1  # placed by _at
    if name == "all":
        step = _call("_&&_", accu, p, pos=m)
        return _comp(v, target, _lit(True, "bool", m), _call("@not_strictly_false", accu, pos=m), step, accu)
    if name == "exists":
        cond = _call("@not_strictly_false", _call("!_", accu, pos=m), pos=m)
        return _comp(v, target, _lit(False, "bool", m), cond, _call("_||_", accu, p, pos=m), accu)
    if name == "exists_one":
        step = _call("_?_:_", p, _call("_+_", accu, _lit(1, "int", m), pos=m), _ident(ACCU, m), pos=m)
        result = _call("_==_", _ident(ACCU, m), _lit(1, "int", m), pos=m)
        return _comp(v, target, _lit(0, "int", m), _lit(True, "bool", m), step, result)
    if name == "map":
        step = _call("_+_", accu, Node("list", kids=[p], pos=m), pos=m)
        return _comp(v, target, Node("list", pos=m), _lit(True, "bool", m), step, _ident(ACCU, m))
    if name == "filter":
        kept = _call("_+_", accu, Node("list", kids=[_ident(v, m)], pos=m), pos=m)
        step = _call("_?_:_", p, kept, _ident(ACCU, m), pos=m)
        return _comp(v, target, Node("list", pos=m), _lit(True, "bool", m), step, _ident(ACCU, m))
    if name == "sortBy":
        return _sort_by(v, target, p)
    if name in ("optMap", "optFlatMap"):
        return _opt_map(name, v, target, p)
    return None


SORT_BY_INPUT = "@__sortBy_input__"


def _bind(var: str, init: Node, result: Node) -> Node:
    """cel-go's binding of a name to a value (a comprehension over an empty list whose
    accumulator is the name), as sortBy and optMap expand to."""
    m = -1
    kids = [Node("list", pos=m), init, _lit(False, "bool", m), _ident(var, m), result]
    return Node("comp", kids=kids, iter_var="#unused", accu_var=var, pos=m)


def _sort_by(v: str, target: Node, key: Node) -> Node:
    """``ext/lists.go``'s sortByMacro: the list bound to a name, sorted by the keys its elements
    map to."""
    m = -1
    step = _call("_+_", _ident(ACCU, m), Node("list", kids=[key], pos=m), pos=m)
    keys = _comp(v, _ident(SORT_BY_INPUT, m), Node("list", pos=m), _lit(True, "bool", m), step, _ident(ACCU, m))
    keys.macro = "map"
    sorted_ = Node("call", "@sortByAssociatedKeys", [_ident(SORT_BY_INPUT, m), keys], target=True, pos=m)
    return _bind(SORT_BY_INPUT, target, sorted_)


def _opt_map(name: str, v: str, target: Node, made: Node) -> Node:
    """cel-go's optMap and optFlatMap (``cel/library.go``): when the optional has a value, the
    expression with the variable bound to it (wrapped in ``optional.of`` for optMap), else none."""
    m = -1
    target.shared = True
    has = Node("call", "hasValue", [target], target=True, pos=m)
    value = Node("call", "value", [target], target=True, pos=m)
    bound = _bind(v, value, made)
    if name == "optMap":
        bound = _call("optional.of", bound, pos=m)
    return _call("_?_:_", has, bound, _call("optional.none", pos=m), pos=m)


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


def _number(text: str) -> int:
    """An integer literal's value (decimal or 0x hexadecimal): what a literal argument says, as
    split's limit bounds its result's size in cel-go's estimate."""
    try:
        return int(text, 16) if text[:2].lower() == "0x" else int(text)
    except ValueError:
        return 1


def _literal(token: Any) -> Node:
    text = str(token)
    kind = token.type
    if kind == "UINT_LIT":
        return _lit(_number(text.rstrip("uU")), "uint")
    if kind == "INT_LIT":
        return _lit(_number(text), "int")
    if kind == "FLOAT_LIT":
        try:
            return _lit(float(text), "double")
        except ValueError:
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


def _start(x: Any) -> int:
    at = x.start_pos if hasattr(x, "start_pos") else getattr(x.meta, "start_pos", None)
    return int(at or 0)


def _end(x: Any) -> int:
    at = x.end_pos if hasattr(x, "end_pos") else getattr(x.meta, "end_pos", None)
    return int(at or 0)


def _next(text: str, at: int) -> int:
    """The offset of the first character from ``at`` that is not white space or a comment: where
    the operator, '.', '[' or '(' that follows a parsed part stands."""
    while at < len(text):
        if text[at].isspace():
            at += 1
        elif text.startswith("//", at):
            end = text.find("\n", at)
            at = len(text) if end < 0 else end
        else:
            break
    return at


def convert(tree: Any, text: str = "") -> Node:
    """celpy's lark parse tree as cel-go's AST (macros expanded), each node at the offset cel-go's
    errors point at when ``text``, the expression parsed, is given."""
    from lark import Token

    def go(x: Any) -> Node:
        return convert(x, text)

    def after(x: Any) -> int:
        return _next(text, _end(x)) if text else 0

    kids = [c for c in tree.children if c is not None]
    rule = tree.data
    if rule == "expr":
        if len(kids) == 1:
            return go(kids[0])
        return _call("_?_:_", *(go(k) for k in kids), pos=after(kids[0]))
    if rule in ("conditionalor", "conditionaland"):
        if len(kids) == 1:
            return go(kids[0])
        fn = "_||_" if rule == "conditionalor" else "_&&_"
        return _call(fn, go(kids[0]), go(kids[1]), pos=after(kids[0]))
    if rule in ("relation", "addition", "multiplication"):
        if len(kids) == 1:
            return go(kids[0])
        op = kids[0]
        return _call(_BINARY[op.data], go(op.children[0]), go(kids[1]), pos=after(op.children[0]))
    if rule == "unary":
        if len(kids) == 1:
            return go(kids[0])
        return _call("!_" if kids[0].data == "unary_not" else "-_", go(kids[1]), pos=_start(tree))
    if rule in ("member", "primary"):
        return go(kids[0])
    if rule == "member_dot":
        if text and optional_select(text, _end(kids[0]), _start(kids[1])):  # a.?b: cel-go's _?._ call
            field = _lit(str(kids[1]), "string", _start(kids[1]))
            return _call(OPT_SELECT, go(kids[0]), field, pos=after(kids[0]))
        return Node("select", str(kids[1]), [go(kids[0])], pos=after(kids[0]))
    if rule == "member_dot_arg":
        target, name = go(kids[0]), str(kids[1])
        args = [go(k) for k in kids[2].children] if len(kids) > 2 else []
        pos = after(kids[1])
        malformed = _malformed_macro(name, args)
        if malformed is not None:
            raise MacroError(snippet(text, malformed[0].pos, malformed[1]))
        expanded = _macro(name, target, args, pos)
        if expanded is not None:
            return expanded
        return Node("call", name, [target, *args], target=True, pos=pos)
    if rule == "member_index":
        if text and optional_index(text, _end(kids[0])):  # a[?k]: cel-go's _[?_] call
            return _call(OPT_INDEX, go(kids[0]), go(kids[1]), pos=after(kids[0]))
        return _call("_[_]", go(kids[0]), go(kids[1]), pos=after(kids[0]))
    if rule == "member_object":
        inits = kids[1].children if len(kids) > 1 else []
        return Node("struct", kids=[go(k) for k in inits if not isinstance(k, Token)], pos=_start(tree))
    if rule in ("ident", "dot_ident"):
        return _ident(str(kids[0]), _start(kids[0]))
    if rule in ("ident_arg", "dot_ident_arg"):
        name = str(kids[0])
        args = [go(k) for k in kids[1].children] if len(kids) > 1 else []
        pos = after(kids[0])
        if name == "has" and len(args) == 1 and args[0].kind == "select":
            sel = args[0]
            return Node("select", sel.value, sel.kids, test_only=True, pos=pos)
        if name == "has" and len(args) == 1:
            raise MacroError(snippet(text, args[0].pos, "invalid argument to has() macro"))
        return Node("call", name, args, pos=pos)
    if rule == "paren_expr":
        return go(kids[0])
    if rule == "list_lit":
        items = list(kids[0].children) if kids else []
        optional = frozenset(i for i, k in enumerate(items) if text and _after_question(text, _start(k)))
        return Node("list", optional or None, [go(k) for k in items], pos=_start(tree))
    if rule == "map_lit":
        items = list(kids[0].children) if kids else []
        keys = items[::2]
        optional = frozenset(i for i, k in enumerate(keys) if text and _after_question(text, _start(k)))
        return Node("map", optional or None, [go(k) for k in items], pos=_start(tree))
    if rule == "literal":
        node = _literal(kids[0])
        node.pos = _start(kids[0])
        return node
    raise ValueError(f"unknown CEL parse node {rule}")


def snippet(text: str, offset: int, message: str) -> str:
    """cel-go's ``Error.ToDisplayString``: the location, the message, the line and a caret."""
    line_no = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    column = offset - line_start
    return f"ERROR: <input>:{line_no}:{column + 1}: {message}\n | {line}\n | {'.' * column}^"


# what cel-go's parser says it expected where an operand must come (after an operator, at the start)
_AN_OPERAND = (
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
)


def syntax_error(text: str, exc: BaseException, shown_text: str | None = None, depth: int = 0) -> str:
    """A parse failure in cel-go's shape (ANTLR's default error strategy): where, what, the line and
    a caret. Where an operand was expected: ``mismatched input 'X' expecting {...}``, or
    ``extraneous input 'X'`` when the token after X would do. After a whole operand, what may
    follow it where it stands (``<EOF>`` at the top, ``')'`` in parentheses, ``{']', ','}`` among
    a list's elements...): ``missing ')' at '<EOF>'`` when the text ends inside a bracket, else
    ``extraneous input`` or ``mismatched input`` as the token after X would do or not. A character
    no token starts with (or a string never closed): ``token recognition error at: 'X'``, then what
    the parser makes of the rest (for a short rule). ``shown_text``: the line shown, where ``text`` is a copy of it
    with the unreadable part blanked."""
    if isinstance(exc, DepthError):
        return str(exc)
    cause = exc.__cause__ or exc.__context__ or exc
    line_text = text if shown_text is None else shown_text  # the text shown (``text`` with parts blanked)
    token = getattr(cause, "token", None)
    char = getattr(cause, "char", None)
    if token is not None:
        at_end = getattr(token, "type", "") == "$END"
        offset = len(text) if at_end else int(getattr(token, "start_pos", 0) or 0)
        shown = "<EOF>" if at_end else str(token)
        end = offset if at_end else int(getattr(token, "end_pos", offset + len(shown)) or offset + len(shown))
        expected = set(getattr(cause, "expected", None) or ())
        then = _next_char(text, end)
        if "BOOL_LIT" in expected:  # an operand was due
            said = "extraneous" if not at_end and _starts_operand(then) else "mismatched"
            return snippet(line_text, offset, f"Syntax error: {said} input '{shown}' expecting {_AN_OPERAND}")
        if expected == {"IDENT"} and _code_before(text, offset).endswith("."):  # a selection with no name
            start = _code_before(text, offset).rfind(".")
            return snippet(line_text, offset, f"Syntax error: no viable alternative at input '{text[start:end]}'")
        if expected - {"IDENT"}:  # after a whole operand
            follow, inserts = _followers(text, offset)
            deletes = not at_end and _follows(then, follow)
            # single-token insertion: a closer before the end, a colon before an operand
            if not deletes and inserts and (at_end if follow[0] in _CLOSERS else _starts_operand(shown[:1])):
                return snippet(line_text, offset, f"Syntax error: missing {follow[0]} at '{shown}'")
            said = "extraneous" if deletes else "mismatched"
            wanted = follow[0] if len(follow) == 1 else "{" + ", ".join(follow) + "}"
            return snippet(line_text, offset, f"Syntax error: {said} input '{shown}' expecting {wanted}")
        return snippet(line_text, offset, f"Syntax error: mismatched input '{shown}'")
    if char is not None:
        offset = int(getattr(cause, "pos_in_stream", 0) or 0)
        skipped = 1
        if char in "'\"":  # a string never closed: the lexer read it to the end of its line
            line_end = text.find("\n", offset)
            skipped = (len(text) if line_end < 0 else line_end) - offset
            char = text[offset : offset + skipped] + ("\\n" if line_end >= 0 else "")
        said = snippet(line_text, offset, f"Syntax error: token recognition error at: '{char}'")
        # the lexer drops what it could not read and the parser goes on without it, saying what
        # that leaves wrong too
        rest = text[:offset] + " " * skipped + text[offset + skipped :]
        if depth >= _MAX_LEXER_ERRORS or len(text) > _REPARSED_SIZE:  # each is a parse of the whole rule again
            return said
        try:
            parse_tree(rest)
        except Exception as again:
            said += "\n" + syntax_error(rest, again, text, depth + 1)
        return said
    return f"ERROR: <input>: Syntax error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


_CLOSERS = ("')'", "']'", "'}'")
# after a lexer error, the rest is parsed again to say what else is wrong: a few times, for a rule
# short enough that a parse costs little (celpy parses 45,000 characters in over a second)
_MAX_LEXER_ERRORS = 8
_REPARSED_SIZE = 2048


def _code_before(text: str, at: int) -> str:
    """The text before ``at`` without its trailing spaces."""
    return text[:at].rstrip()


def _next_char(text: str, at: int) -> str:
    """The first character of code from ``at`` ("" at the end)."""
    while at < len(text) and text[at].isspace():
        at += 1
    return text[at] if at < len(text) else ""


def _starts_operand(c: str) -> bool:
    return c != "" and (c.isalnum() or c in "_'\"([{.-!")


def _follows(c: str, follow: tuple[str, ...]) -> bool:
    """Whether a token starting with ``c`` is one of ``follow`` (ANTLR's single-token deletion)."""
    return any((f == "<EOF>" and c == "") or (f != "<EOF>" and f[1] == c) for f in follow)


def _followers(text: str, offset: int) -> tuple[tuple[str, ...], bool]:
    """What may follow a whole operand standing at ``offset``, as cel-go's parser names it where it
    reports a token out of place: the innermost open bracket's closer (with a comma among a list's
    or a map's elements, whose loops ANTLR checks first), a colon after a map's key or a
    conditional's ``?``, ``<EOF>`` at the top; and whether a missing one is reported as missing
    (ANTLR's single-token insertion, tried where one token is matched, not at a loop)."""
    opened: list[str] = []  # "group", "call", "list", "index", "key", "value", "?"
    for _, c, prev in _code(text, offset):
        operand_before = prev != "" and (prev.isalnum() or prev in "_)]}'\"")
        if c == "(":
            opened.append("call" if operand_before else "group")
        elif c == "[":
            opened.append("index" if operand_before else "list")
        elif c == "{":
            opened.append("key")
        elif c in ")]}":
            while opened and opened[-1] == "?":
                opened.pop()
            if opened:
                opened.pop()
        elif c == "?" and prev != "." and prev != "[":
            opened.append("?")
        elif c == ":":
            if opened and opened[-1] == "?":
                opened.pop()
            elif opened and opened[-1] == "key":
                opened[-1] = "value"
        elif c == ",":
            while opened and opened[-1] == "?":
                opened.pop()
            if opened and opened[-1] == "value":
                opened[-1] = "key"
    top = opened[-1] if opened else ""
    return {
        "": (("<EOF>",), False),
        "group": (("')'",), True),
        "call": (("')'",), True),
        "list": (("']'", "','"), False),
        "index": (("']'",), True),
        "key": (("':'",), True),
        "value": (("'}'", "','"), False),
        "?": (("':'",), True),
    }[top]


# lark's trees are large (a node, its meta and its tokens per element of the text, a million objects
# for 100,000 code points, each walked by every full collection while it lives): only the last two
# are kept, for the compilation and the AST of the same rule to share one parse
@outcome_cached(2)
def parse_tree(expression: str) -> Any:
    """celpy's lark parse tree of the expression (celpy's and lark's errors when it does not
    parse), with each node's span in the text. celpy's grammar has no optional field selection
    (``a.?b``): each such ``?`` is read as a space (``optional_marks``), so the spans stay those of
    the text, where ``convert`` and the runtime find the ``?`` again."""
    from celpy.celparser import CELParser

    if CELParser.ambiguous_literals is not _positioned_literal:  # once, before its grammar is built
        # (celpy is Any to the build's mypyc, which has no celpy: the ignore is unused there)
        CELParser.ambiguous_literals = staticmethod(_positioned_literal)  # type: ignore[method-assign, unused-ignore]
        CELParser.CEL_PARSER = None
    read, _ = optional_marks(expression)
    tree = CELParser().parse(read)
    _deep_enough()  # (a library may have lowered it since this module loaded: celpy's Environment does)
    tree = _as_cel_go_nests(tree)
    _fill_spans(tree, read, 0)
    return tree


class DepthError(ValueError):
    """A rule nested deeper than cel-go's parser allows (its words in ``str``)."""


# cel-go's parser defaults (parser/parser.go), which kube-apiserver keeps: a rule nests at most
# 250 deep, counted two ways (see _as_cel_go_nests)
MAX_RECURSION_DEPTH = 250
# what nesting 250 deep costs our recursive walkers of lark's tree (about ten of its levels for
# one of CEL's, two frames each): the interpreter's limit is raised to it when this module is
# loaded (pure-Python frames do not use the C stack from Python 3.11 on)
_RECURSION_LIMIT = 20_000
# lark's rules the visitor counts (the first three only with an operator: with one child they pass
# their operand through)
_COUNTED_WITH_TWO = frozenset({"relation", "addition", "multiplication"})
_COUNTED = frozenset({"member_dot", "member_dot_arg", "member_index"})


def _deep_enough() -> None:
    import sys

    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)


_deep_enough()


def _as_cel_go_nests(tree: Any) -> Any:
    """The tree checked for depth as cel-go's parser checks it, and shaped as cel-go builds it,
    without recursion (a chain of 20,000 terms is as deep in lark's tree):

    - more than 250 expressions inside one another (parentheses, arguments, list and map entries,
      a conditional's else) is ``expression recursion limit exceeded: 250`` (parser.go's
      recursionListener counts each grammar rule's nesting while parsing);
    - more than 250 operators, selections, member calls, indexes and conditionals on one path is
      ``max recursion depth exceeded`` (the visitor's checkAndIncrementRecursionDepth); ``&&``,
      ``||``, ``!``, unary ``-``, global calls and literals are not counted;
    - a chain of ``&&`` or ``||`` is balanced (helper.go's balancedTree: ``a && b && c && d`` is
      ``(a && b) && (c && d)``), and a run of ``!`` or of ``-`` is one when odd, none when even
      (VisitLogicalNot, VisitNegate), so that neither makes the tree deep."""
    from lark import Tree

    most_nested = most_counted = 0
    balanced: set[int] = set()  # the nodes _balanced made (their halves are balanced already)
    stack: list[tuple[Any, Any, int, int, int]] = [(tree, None, -1, 0, 0)]
    root = tree
    while stack:
        node, parent, index, nested, counted = stack.pop()
        if not isinstance(node, Tree):
            continue
        kids = [k for k in node.children if k is not None]
        rule = node.data
        if rule in ("conditionaland", "conditionalor") and len(kids) == 2 and id(node) not in balanced:
            node = _balanced(rule, _chain(node), balanced)
        elif rule == "unary" and len(kids) == 2:
            node = _one_or_none(node)
        if parent is None:
            root = node
        else:
            parent.children[index] = node
        rule = node.data
        kids_n = sum(1 for k in node.children if k is not None)
        if rule == "expr":
            nested += 1
            most_nested = max(most_nested, nested)
            if kids_n == 3:
                counted += 1
        elif rule in _COUNTED or (rule in _COUNTED_WITH_TWO and kids_n == 2):
            counted += 1
        most_counted = max(most_counted, counted)
        for i, kid in enumerate(node.children):
            if isinstance(kid, Tree):
                stack.append((kid, node, i, nested, counted))
    if most_nested > MAX_RECURSION_DEPTH:
        raise DepthError(f"ERROR: <input>:-1:0: expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
    if most_counted > MAX_RECURSION_DEPTH:
        raise DepthError("ERROR: <input>:-1:0: max recursion depth exceeded")
    return root


def _chain(node: Any) -> list[Any]:
    """The terms of a left-nested chain of one logical operator, in the text's order."""
    rule, terms = node.data, []
    while True:
        kids = [k for k in node.children if k is not None]
        if node.data != rule or len(kids) != 2:
            terms.append(node)
            break
        terms.append(kids[1])
        node = kids[0]
    terms.reverse()
    return terms


def _balanced(rule: str, terms: list[Any], made: set[int]) -> Any:
    """``balancedTree``: the operator in the middle at the top (the left half the larger of
    two), each half balanced alike; the nodes it makes are added to ``made``."""
    from lark import Tree

    if len(terms) == 1:
        return terms[0]
    mid = (len(terms) - 1) // 2 + 1  # the first term of the right half
    node = Tree(rule, [_balanced(rule, terms[:mid], made), _balanced(rule, terms[mid:], made)])
    made.add(id(node))
    return node


def _one_or_none(node: Any) -> Any:
    """A run of one unary operator (``unary(unary_not, unary(unary_not, x))``): the operand when
    the run is even, one operator over it when odd."""
    op = node.children[0].data if hasattr(node.children[0], "data") else None
    run, inner = 0, node
    while True:
        kids = [k for k in inner.children if k is not None]
        if inner.data != "unary" or len(kids) != 2 or getattr(kids[0], "data", None) != op:
            break
        run += 1
        inner = kids[1]
    if run == 1:
        return node
    if run % 2 == 0:
        return inner
    node.children = [node.children[0], inner]
    return node


def _positioned_literal(t: Any) -> Any:
    """celpy's lexer callback (``CELParser.ambiguous_literals``: ``true`` and ``false`` are
    BOOL_LIT, not identifiers), keeping the token's position, which celpy's drops: a parse error at
    one is then placed where it stands, as cel-go places it."""
    from lark import Token

    if t.value in ("true", "false"):
        return Token.new_borrow_pos("BOOL_LIT", t.value, t)
    return t


def optional_marks(text: str) -> tuple[str, frozenset[int]]:
    """The text with each ``?`` of CEL's optional syntax read as a space, and where those were:
    optional field selection and index (``a.?b``, ``a[?k]``: right after a ``.`` or an index's
    ``[``, CEL.g4's Select and Index) and optional entries of list and map literals (``[?x]``,
    ``{?k: v}``: right after a literal's ``[``, ``{`` or ``,``). Any other ``?`` is the
    conditional's; string literals and comments are passed over."""
    if "?" not in text:
        return text, frozenset()
    out = list(text)
    marks: set[int] = set()
    opened: list[str] = []  # the brackets open before i: "(", "index", "list", "{"
    # prev: the last character of code before i (a '[' after an operand is an index)
    for i, c, prev in _code(text, len(text)):
        if c == "?":
            top = opened[-1] if opened else ""
            selection = prev == "." or (prev == "[" and top == "index")
            if selection or (prev in ("[", "{", ",") and top in ("list", "{")):
                out[i] = " "
                marks.add(i)
        elif c == "[":
            opened.append("index" if prev != "" and (prev.isalnum() or prev in "_)]}") else "list")
        elif c in "({":
            opened.append(c)
        elif c in ")]}" and opened:
            opened.pop()
    return "".join(out), frozenset(marks)


def _code(text: str, end: int) -> Iterator[tuple[int, str, str]]:
    """Each character of code before ``end``, where it is, and the last character of code before
    it (a string literal counts as its quote); string literals and comments are passed over."""
    i, prev = 0, ""
    while i < end:
        c = text[i]
        if c in "'\"":
            i = _string_end(text, i)
            prev = c
            continue
        if text.startswith("//", i):
            line_end = text.find("\n", i)
            i = end if line_end < 0 else line_end
            continue
        yield i, c, prev
        if not c.isspace():
            prev = c
        i += 1


def _string_end(text: str, at: int) -> int:
    """Where the string literal opening at ``at`` ends (raw literals have no escapes; a prefix
    letter before the quote changes nothing for where it ends but that)."""
    quote = text[at]
    raw = at > 0 and text[at - 1] in "rR" and (at < 2 or not (text[at - 2].isalnum() or text[at - 2] == "_"))
    delim = quote * 3 if text.startswith(quote * 3, at) else quote
    i = at + len(delim)
    while i < len(text):
        if not raw and text[i] == "\\":
            i += 2
            continue
        if text.startswith(delim, i):
            return i + len(delim)
        i += 1
    return len(text)


def _after_question(text: str, start: int) -> bool:
    """Whether the part starting at ``start`` follows a ``?`` (an optional entry of a literal)."""
    j = start - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return j >= 0 and text[j] == "?"


def optional_index(text: str, operand_end: int) -> bool:
    """Whether the index after an operand is ``[?``."""
    bracket = _next(text, operand_end)
    q = _next(text, bracket + 1) if bracket < len(text) and text[bracket] == "[" else -1
    return 0 <= q < len(text) and text[q] == "?"


def optional_select(text: str, operand_end: int, field_start: int) -> bool:
    """Whether the selection between an operand and its field is ``.?`` (a ``?`` after the dot)."""
    dot = _next(text, operand_end)
    q = _next(text, dot + 1) if dot < len(text) and text[dot] == "." else -1
    return 0 <= q < field_start and text[q] == "?"


def _fill_spans(node: Any, text: str, cursor: int) -> int:
    """Give every token and node of the tree its span in ``text``: celpy's parser leaves the
    keyword literals (``true``, ``false``, ``null``) without one, and the nodes that end with them
    without an end, so a rule such as ``size(x) == 0 ? y : true`` would be cut short. Returns where
    ``node`` ends."""
    from lark import Tree

    if not isinstance(node, Tree):
        if getattr(node, "start_pos", None) is None:
            at = _keyword_at(text, str(node), cursor)
            node.start_pos, node.end_pos = at, at + len(str(node))
        return int(node.end_pos)
    start = None
    for kid in node.children:
        if kid is None:
            continue
        if start is None and not isinstance(kid, Tree) and getattr(kid, "start_pos", None) is None:
            start = _keyword_at(text, str(kid), cursor)
        cursor = _fill_spans(kid, text, cursor)
        if start is None:
            start = _start(kid)
    meta = node.meta
    if getattr(meta, "start_pos", None) is None:
        meta.start_pos = start if start is not None else cursor
    if getattr(meta, "end_pos", None) is None or meta.end_pos < cursor:
        meta.end_pos = cursor
    meta.empty = False
    return max(cursor, int(meta.end_pos))


def _keyword_at(text: str, word: str, cursor: int) -> int:
    """Where a keyword literal the parser left without a span starts: the first ``word`` after
    ``cursor``; only operators and punctuation (``? :``, ``(``, ``,``) stand between the token
    before it and it."""
    at = text.find(word, cursor)
    return at if at >= 0 else _next(text, cursor)


@outcome_cached(4096)
def parse(expression: str) -> Node:
    """The expression's AST (``ValueError`` and lark's errors when it does not parse)."""
    return convert(parse_tree(expression), expression)
