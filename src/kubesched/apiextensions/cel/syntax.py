"""A CEL expression as cel-go's parser hands it to the checker: celpy's lark parse tree turned into
cel-go's AST, with the macros (``all``, ``exists``, ``exists_one``, ``map``, ``filter``, ``has``)
expanded as ``parser/macro.go`` expands them, so the cost model walks the same shape."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any


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


@functools.lru_cache(maxsize=4096)
def parse_tree(expression: str) -> Any:
    """celpy's lark parse tree of the expression (celpy's and lark's errors when it does not
    parse), with each node's span in the text."""
    from celpy.celparser import CELParser

    return CELParser().parse(expression)


@functools.lru_cache(maxsize=4096)
def parse(expression: str) -> Node:
    """The expression's AST (``ValueError`` and lark's errors when it does not parse)."""
    return convert(parse_tree(expression))
