"""Evaluating a rule: the CEL runtime, and the bound on what one evaluation may cost.

The runtime is ``common-expression-language`` (the Rust ``cel-interpreter`` behind a Python
binding), chosen for speed: a rule kube-apiserver admits can iterate a million times, which
cel-python's tree interpreter needs minutes for and this runtime milliseconds (docs/cluster.md
compares the runtimes). It has no cost tracker, so each evaluation is first costed with cel-go's
model over the value's own sizes (``cost.estimated_cost`` with ``value_sizes``), an upper bound
of what cel-go would count, and refused over the limits before it runs. Its ``size()`` of a
string counts bytes, where CEL counts code points: rules are run with ``size`` calls rewritten to
a function that counts as CEL does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import cel as rust_cel
from kubesched.apiextensions.cel import library
from kubesched.apiextensions.cel.cost import NAMESPACED, Range
from kubesched.apiextensions.cel.syntax import (
    TRANSFORMS,
    TWO_VARIABLE,
    Node,
    optional_marks,
    outcome_cached,
    parse_tree,
    syntax_error,
)

__all__ = ["CompileError", "EvalError", "Program", "ValueSizes", "compile_rule"]

# cel-go's parser refuses longer expressions (``parser.ExpressionSizeCodePointLimit``'s default)
MAX_CODE_POINTS = 100_000


class CompileError(Exception):
    """A rule that does not parse (the CRD's validation reports it)."""


class EvalError(Exception):
    """An evaluation error, worded as cel-go words it (``no such key: x``)."""


@dataclass(frozen=True, slots=True)
class Program:
    expression: str
    ast: Node
    # the runtime's compiled programs: one, or the parts of a long rule whose top is a chain of
    # ``&&`` or ``||`` (``joiner``), compiled a part at a time
    parts: tuple[Any, ...]
    functions: tuple[str, ...] = ()  # the library functions it calls (``library.py``)
    joiner: str = ""

    def run(self, activation: dict[str, Any]) -> Any:
        context = rust_cel.Context()
        context.add_function("__cel_size", _size)
        for name in self.functions:
            context.add_function(name, library.FUNCTIONS[name])
        for name, value in activation.items():
            context.add_variable(name, value)
        if len(self.parts) == 1:
            return _execute(self.parts[0], context)
        # cel-go's && and || are commutative: a false (a true) anywhere decides, else an error
        decides = self.joiner == "||"
        error: EvalError | None = None
        for part in self.parts:
            try:
                value = _execute(part, context)
            except EvalError as exc:
                error = error or exc
                continue
            if value is decides:
                return decides
            if not isinstance(value, bool):
                error = error or EvalError("no such overload")
        if error is not None:
            raise error
        return not decides


def _execute(runnable: Any, context: Any) -> Any:
    """One compiled program run, its errors worded as cel-go words them."""
    try:
        return runnable.execute(context)
    except KeyError as exc:
        raise EvalError(f"no such key: {exc.args[0] if exc.args else ''}") from None
    except ZeroDivisionError:
        raise EvalError("division by zero") from None
    except OverflowError:
        raise EvalError("integer overflow") from None
    except TypeError as exc:
        text = str(exc)
        raise EvalError("no such overload" if "overload" in text.lower() else text) from None
    except Exception as exc:  # the binding's RuntimeError, IndexError, ValueError
        text = str(exc)
        said = _LIBRARY_ERROR.search(text)
        if said is not None:  # a library function's own words
            raise EvalError(said.group(1)) from None
        if "Python function call failed" in text:  # arguments it has no overload for
            raise EvalError("no such overload") from None
        if text.startswith("Function 'value' error: optional.none() dereference"):  # none's value()
            raise EvalError("optional.none() dereference") from None
        raise EvalError(text) from None


# how the runtime reports an exception a library function raised
_LIBRARY_ERROR = re.compile(r"Python function call failed: LibraryError: (.*)\. Check function arguments")


def _calls(node: Node, seen: set[int] | None = None) -> set[str]:
    """The library functions the rule calls (each node once: optMap's expansion refers to its
    optional twice)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return set()
    seen.add(id(node))
    found = {node.value} if node.kind == "call" and node.value in library.NAMES else set()
    if node.kind == "call" and node.target and node.kids and node.kids[0].kind == "ident":
        namespace = str(node.kids[0].value)
        if node.value in NAMESPACED.get(namespace, ()):
            found.add(f"__{namespace}_{node.value}")
    for kid in node.kids:
        found |= _calls(kid, seen)
    return found


def _size(value: Any) -> int:
    """CEL's ``size``: code points of a string, bytes of bytes, entries of a list or map."""
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    raise TypeError("no such overload")


# The runtime's parser (the cel crate's) nests expressions at most 96 deep where cel-go nests 250:
# a rule between the two is refused in words that say so (upstream would accept it).
_RUNTIME_NESTING = "Recursion limit of 96 exceeded"
RUNTIME_TOO_DEEP = (
    "ERROR: <input>:-1:0: expression recursion limit exceeded: 96 (kubesched's CEL runtime nests "
    "parentheses, arguments, list and map entries and conditionals at most 96 deep; kube-apiserver, 250)"
)


@outcome_cached(4096)
def compile_rule(expression: str) -> Program:
    """A runnable rule, compiled once (as upstream caches them per CRD)."""
    if len(expression) > MAX_CODE_POINTS:
        raise CompileError(
            f"expression code point size exceeds limit: size: {len(expression)}, limit {MAX_CODE_POINTS}"
        )
    from kubesched.apiextensions.cel.syntax import MacroError, parse

    try:
        tree = parse_tree(expression)
    except Exception as exc:  # celpy's CELParseError, lark's errors, DepthError
        raise CompileError(syntax_error(expression, exc)) from None

    try:
        ast = parse(expression)  # the AST the checker and the cost model read too (one, cached)
    except MacroError as exc:  # cel-go's words, line and caret
        raise CompileError(str(exc)) from None
    except Exception as exc:
        raise CompileError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    read, marks = optional_marks(expression)
    chain = _top_chain(tree) if len(expression) >= CHUNKED_FROM else None
    try:
        if chain is not None:
            joiner, terms = chain
            sources, helpers = _parts(joiner, terms, read, marks)
            parts = tuple(rust_cel.compile(source) for source in sources)
            return Program(expression, ast, parts, tuple(sorted(_calls(ast) | helpers)), joiner)
        source, helpers = _runnable(tree, read, marks)
        runnable = rust_cel.compile(source)
    except CompileError:
        raise
    except Exception as exc:
        if _RUNTIME_NESTING in str(exc):
            raise CompileError(RUNTIME_TOO_DEEP) from None
        raise CompileError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    return Program(expression, ast, (runnable,), tuple(sorted(_calls(ast) | helpers)))


# A rule this long whose top is a chain of && or || is compiled a part of about _PART_SIZE at a
# time: the runtime's compile keeps the interpreter (about 1 us a code point), so a rule of
# 100,000 code points compiled whole held the event loop a tenth of a second, its compile running
# on the worker thread or not; between two parts the loop gets in.
CHUNKED_FROM = 16_384
_PART_SIZE = 4_096


def _top_chain(tree: Any) -> tuple[str, list[Any]] | None:
    """The operator and the terms, in order, of the chain of ``&&`` or ``||`` at the rule's top
    (below the one-child rules above it), None when the top is something else."""
    from lark import Tree

    node = tree
    while True:
        kids = [k for k in node.children if k is not None]
        if node.data in ("conditionalor", "conditionaland") and len(kids) == 2:
            break
        if node.data not in ("expr", "conditionalor", "conditionaland") or len(kids) != 1:
            return None
        if not isinstance(kids[0], Tree):
            return None
        node = kids[0]
    rule, terms, stack = node.data, [], [node]
    while stack:
        n = stack.pop()
        kids = [k for k in n.children if k is not None] if isinstance(n, Tree) else []
        if isinstance(n, Tree) and n.data == rule and len(kids) == 2:
            stack.extend(reversed(kids))  # the left one next
        else:
            terms.append(n)
    return ("&&" if rule == "conditionaland" else "||"), terms


def _parts(joiner: str, terms: list[Any], text: str, marks: frozenset[int]) -> tuple[list[str], frozenset[str]]:
    """The runnable text of consecutive terms joined by ``joiner``, about ``_PART_SIZE`` a part,
    and the helpers they call."""
    sources: list[str] = []
    used: set[str] = set()
    part: list[str] = []
    size = 0
    for term in terms:
        source, helpers = _runnable(term, text, marks)
        if source is text:  # nothing rewritten in it: its own span
            source = text[term.meta.start_pos : term.meta.end_pos]
        used |= helpers
        part.append(f"({source})")
        size += len(source)
        if size >= _PART_SIZE:
            sources.append(f" {joiner} ".join(part))
            part, size = [], 0
    if part:
        sources.append(f" {joiner} ".join(part))
    return sources, frozenset(used)


# cel-go's namespaced extension functions (``cost.NAMESPACED``) run as library functions named
# ``__<namespace>_<function>``: the runtime has no namespaces. It has no two-variable
# comprehensions either (``ext/comprehensions.go``): ``l.all(i, v, p)`` runs as the one-variable
# macro over ``__cel_entries(l)``, the (index or key, value) pairs, with ``i`` and ``v`` read
# from the pair; transformMap and transformMapEntry build their map from the pairs' list.
_ONE_VARIABLE = frozenset({"all", "exists", "exists_one", "map", "filter"})
_PAIRS = "__kv"  # the pair's variable, numbered by nesting


def _runnable(tree: Any, text: str, marks: frozenset[int] = frozenset()) -> tuple[str, frozenset[str]]:
    """The expression as the runtime runs it, and the helper functions it calls: each ``x.size()``
    and ``size(x)`` as ``__cel_size(x)``, each ``sets.contains(a, b)`` (``NAMESPACED``) as
    ``__sets_contains(a, b)``, each two-variable comprehension over ``__cel_entries``. The text
    is copied once around the outermost rewritten parts (a rule of 100,000 code points costs its
    length, however deep its tree), each rewritten part built from its own span alike."""
    from lark import Tree

    used: set[str] = set()  # the comprehensions' helper functions
    changed = False
    limit = _MAX_GROWTH * len(text) + 4096  # the longest an optional's operand may be written

    def rewritten(node: Any, env: dict[str, str], depth: int) -> str:
        """The text of ``node``'s span with the rewritten parts inside it."""
        edits: list[tuple[int, int, str]] = []
        collect(node, env, depth, edits)
        out, at = [], node.meta.start_pos
        for a, b, new in edits:
            out.append(text[at:a])
            out.append(new)
            at = b
        out.append(text[at : node.meta.end_pos])
        return "".join(out)

    def collect(node: Any, env: dict[str, str], depth: int, edits: list[tuple[int, int, str]]) -> None:
        """The outermost parts below ``node`` to rewrite, in the text's order."""
        for child in node.children:
            if not isinstance(child, Tree) or child.meta.empty:
                continue
            new = replacement(child, env, depth)
            if new is not None:
                edits.append((child.meta.start_pos, child.meta.end_pos, new))
                continue
            bound = _hidden(child, env)
            if bound is not None:  # a one-variable macro whose variable hides an outer one
                kids = [c for c in child.children if c is not None]
                target = replacement(kids[0], env, depth)
                if target is not None:
                    edits.append((kids[0].meta.start_pos, kids[0].meta.end_pos, target))
                else:
                    collect(kids[0], env, depth, edits)
                collect(kids[2], {k: v for k, v in env.items() if k != bound}, depth, edits)
                continue
            collect(child, env, depth, edits)

    def replacement(node: Any, env: dict[str, str], depth: int) -> str | None:
        """What ``node`` itself is rewritten to, or None."""
        if node.data == "ident" and str(node.children[0]) in env:
            return env[str(node.children[0])]
        if marks and node.data in ("list_lit", "map_lit") and node.children and entries_optional(node):
            return optional_entries(node, env, depth)
        optional_node = marks and node.data in ("member_dot", "member_index")
        if optional_node and (optional(node) or optional_valued(node.children[0])):
            return optional_part(node, env, depth)
        if node.data == "member_dot_arg":
            kids = [c for c in node.children if c is not None]
            args = list(kids[2].children) if len(kids) > 2 else []
            unwrap = str(kids[1]) == "unwrap" and len(args) == 1 and _bare_name(kids[0]) == "optional"
            if unwrap or (str(kids[1]) == "unwrapOpt" and not args):
                made = unwrapped(args[0] if unwrap else kids[0], env, depth)
                if made is not None:
                    return made
            two = _two_variable_form(str(kids[1]), args)
            if two is not None:
                return pairs(str(kids[1]), kids[0], args, two, env, depth)
            name = _bare_name(args[0]) if len(args) == 2 else None
            if name is not None and str(kids[1]) in _BOUND_MACROS:
                return bound(str(kids[1]), kids[0], name, args[1], env, depth)
        if _is_size_call(node):
            nonlocal changed
            changed = True
            named = _namespaced(node)
            if named is None:
                return f"__cel_size({rewritten_whole(_size_operand(node), env, depth)})"
            kids = [c for c in node.children if c is not None]
            return f"{named}({rewritten(kids[2], env, depth) if len(kids) > 2 else ''})"
        return None

    def rewritten_whole(node: Any, env: dict[str, str], depth: int) -> str:
        """``node`` rewritten, itself included (an operand that may be rewritten as a whole)."""
        new = replacement(node, env, depth)
        return new if new is not None else rewritten(node, env, depth)

    def pairs(fn: str, target: Any, args: list[Any], names: tuple[str, str], env: dict[str, str], depth: int) -> str:
        e = f"{_PAIRS}{depth}"
        inner = {**env, names[0]: f"{e}[0]", names[1]: f"{e}[1]"}

        def arg(i: int) -> str:
            return rewritten_whole(args[i], inner, depth + 1)

        used.add("__cel_entries")
        over = f"__cel_entries({rewritten_whole(target, env, depth)})"
        if fn in ("all", "exists"):
            return f"({over}.{fn}({e}, {arg(2)}))"
        if fn in ("existsOne", "exists_one"):
            return f"({over}.exists_one({e}, {arg(2)}))"
        if len(args) == 4:
            over, made = f"{over}.filter({e}, {arg(2)})", arg(3)
        else:
            made = arg(2)
        if fn == "transformList":
            return f"({over}.map({e}, {made}))"
        if fn == "transformMap":
            used.add("__cel_pairs_map")
            return f"__cel_pairs_map({over}.map({e}, [{e}[0], {made}]))"
        used.add("__cel_merge_maps")
        return f"__cel_merge_maps({over}.map({e}, {made}))"

    def optional(node: Any) -> bool:
        """Whether a selection is ``.?`` or an index ``[?`` (the ``?`` the parser was shown as a
        space)."""
        kids = [c for c in node.children if c is not None]
        after = kids[1].start_pos if node.data == "member_dot" else kids[1].meta.start_pos
        return any(kids[0].meta.end_pos <= m < after for m in marks)

    def optional_valued(node: Any) -> bool:
        """Whether an operand is an optional made by selection: ``a.?b``, or a field of one
        (``a.?b.c``, cel-go's optional chaining)."""
        while isinstance(node, Tree) and node.data not in ("member_dot", "member_index") and len(node.children) == 1:
            node = node.children[0]
        if not isinstance(node, Tree) or node.data not in ("member_dot", "member_index"):
            return False
        return optional(node) or optional_valued(node.children[0])

    def marked_before(start: int) -> bool:
        """Whether a ``?`` read as a space stands right before ``start`` (an optional entry)."""
        j = start - 1
        while j >= 0 and j not in marks and text[j].isspace():
            j -= 1
        return j in marks

    def entries_optional(node: Any) -> list[bool]:
        """Per entry of a list or map literal, whether it is optional (``[?x]``, ``{?k: v}``);
        empty when none is."""
        items = [c for c in node.children[0].children if c is not None]
        heads = items if node.data == "list_lit" else items[::2]
        flags = [marked_before(h.meta.start_pos) for h in heads]
        return flags if any(flags) else []

    def optional_entries(node: Any, env: dict[str, str], depth: int) -> str:
        """A literal with optional entries as the runtime can build it: a list as the sum of its
        plain runs and, per optional element, a list of its value or of nothing; a map merged from
        its plain entries and, per optional entry, a map of its value or an empty one."""
        nonlocal changed
        changed = True
        items = [rewritten_whole(c, env, depth) for c in node.children[0].children if c is not None]
        flags = entries_optional(node)
        if any(len(x) > limit for x in items):
            raise CompileError("expression too complex to run: its optional entries nest too deeply")
        parts: list[str] = []
        plain: list[str] = []
        is_list = node.data == "list_lit"
        for i, optional_entry in enumerate(flags):
            entry = items[i] if is_list else f"{items[2 * i]}: {items[2 * i + 1]}"
            if not optional_entry:
                plain.append(entry)
                continue
            if plain:
                parts.append(f"[{', '.join(plain)}]" if is_list else f"{{{', '.join(plain)}}}")
                plain = []
            if is_list:
                parts.append(f"(({entry}).hasValue() ? [({entry}).value()] : [])")
            else:
                key, value = items[2 * i], items[2 * i + 1]
                parts.append(f"(({value}).hasValue() ? {{{key}: ({value}).value()}} : {{}})")
        if plain:
            parts.append(f"[{', '.join(plain)}]" if is_list else f"{{{', '.join(plain)}}}")
        if is_list:
            return f"({' + '.join(parts)})"
        used.add("__cel_merge_maps")
        return f"__cel_merge_maps([{', '.join(parts)}])"

    def optional_part(node: Any, env: dict[str, str], depth: int) -> str:
        """``a.?b`` as ``has(a.b) ? optional.of(a.b) : optional.none()``, ``a[?k]`` alike with the
        key's presence (an index in range of a list, a key of a map), and a field or element (``.?``
        or ``.``, ``[?`` or ``[``) of such an optional through its value, present or none: the
        runtime has no optional selection, and a chain writes each operand up to four times."""
        nonlocal changed
        changed = True
        kids = [c for c in node.children if c is not None]
        over = f"({rewritten_whole(kids[0], env, depth)})"
        key = f"({rewritten_whole(kids[1], env, depth)})" if node.data == "member_index" else ""
        if len(over) > limit or len(key) > limit:
            raise CompileError("expression too complex to run: its optional selections nest too deeply")

        def part(value: str) -> str:
            return f"{value}[{key}]" if key else f"{value}.{kids[1]}"

        def present(value: str) -> str:
            if not key:
                return f"has({part(value)})"
            return f"(type({value}) == list ? ({key} >= 0 && {key} < size({value})) : {key} in {value})"

        if not optional_valued(kids[0]):
            return f"({present(over)} ? optional.of({part(over)}) : optional.none())"
        # past the first ``.?`` a plain ``.b`` or ``[k]`` tests presence too (cel-go's optional chaining)
        value = f"{over}.value()"
        return f"({over}.hasValue() && {present(value)} ? optional.of({part(value)}) : optional.none())"

    def unwrapped(operand: Any, env: dict[str, str], depth: int) -> str | None:
        """``optional.unwrap(l)`` and ``l.unwrapOpt()``, which the runtime lacks, over what the
        checker lets them take (``checker.unwrapped_operand``): a list literal as the sum of a list
        of each element's value or of nothing; ``l.map(x, e)`` (``l.map(x, p, e)``) as the elements
        whose ``e`` has a value (and ``p`` holds) mapped to that value; None for any other operand
        (the checker refuses it)."""
        nonlocal changed
        node = _inner(operand)
        kids = [c for c in node.children if c is not None]
        args = list(kids[2].children) if node.data == "member_dot_arg" and len(kids) > 2 else []
        name = _bare_name(args[0]) if args else None
        is_map = bool(args) and str(kids[1]) == "map" and name is not None and len(args) in (2, 3)
        if node.data != "list_lit" and not is_map:
            return None
        changed = True
        if node.data == "list_lit":
            items = [rewritten_whole(c, env, depth) for c in (node.children[0].children if node.children else ())]
            if any(len(x) > limit for x in items):
                raise CompileError("expression too complex to run: its unwrapped optionals nest too deeply")
            parts = [f"(({x}).hasValue() ? [({x}).value()] : [])" for x in items]
            return f"({' + '.join(parts)})" if parts else "[]"
        assert name is not None
        inner = {k: v for k, v in env.items() if k != name}
        over = rewritten_whole(kids[0], env, depth)
        made = rewritten_whole(args[-1], inner, depth + 1)
        if len(made) > limit:
            raise CompileError("expression too complex to run: its unwrapped optionals nest too deeply")
        kept = f"({made}).hasValue()"
        if len(args) == 3:
            kept = f"({rewritten_whole(args[1], inner, depth + 1)}) && {kept}"
        return f"({over}).filter({name}, {kept}).map({name}, ({made}).value())"

    def bound(fn: str, target: Any, name: str, expr: Any, env: dict[str, str], depth: int) -> str:
        """sortBy, optMap and optFlatMap, which the runtime lacks: the list bound to a name by a
        map over a list of one, sorted by ``__cel_order`` of its keys; the optional's value bound
        by a map over a list of one (the runtime's comprehensions cannot yield optionals)."""
        nonlocal changed
        changed = True
        inner = {k: v for k, v in env.items() if k != name}
        made = rewritten_whole(expr, inner, depth + 1)
        over = rewritten_whole(target, env, depth)
        if len(over) > limit or len(made) > limit:  # each writes its optional (optFlatMap its result) 2-3 times
            raise CompileError("expression too complex to run: its optMap and optFlatMap calls nest too deeply")
        if fn == "sortBy":
            used.add("__cel_order")
            s, i = f"__sb{depth}", f"__ix{depth}"
            return f"[{over}].map({s}, __cel_order({s}.map({name}, {made})).map({i}, {s}[{i}]))[0]"
        value = f"[({over}).value()]"
        if fn == "optMap":
            return f"(({over}).hasValue() ? optional.of({value}.map({name}, {made})[0]) : optional.none())"
        return (
            f"(({over}).hasValue() && {value}.exists({name}, ({made}).hasValue()) ? "
            f"optional.of({value}.map({name}, ({made}).value())[0]) : optional.none())"
        )

    whole = replacement(tree, {}, 0)
    out = whole if whole is not None else rewritten(tree, {}, 0)
    if not changed and not used:  # nothing rewritten: the text as written
        return text, frozenset()
    return out, frozenset(used)


# sortBy, optMap and optFlatMap bind a name (cel-go expands them with a comprehension of its own)
_BOUND_MACROS = frozenset({"sortBy", "optMap", "optFlatMap"})
# how much longer than the rule an optional's operand may be once rewritten: it is written twice
# or four times, so optMap on optMap on ... grows the text by that factor a level
_MAX_GROWTH = 16


def _inner(node: Any) -> Any:
    """The node an operand comes to through its wrappers and parentheses."""
    from lark import Tree

    while isinstance(node, Tree) and node.data not in ("list_lit", "member_dot_arg"):
        kids = [c for c in node.children if c is not None]
        if len(kids) != 1 or not isinstance(kids[0], Tree):
            break
        node = kids[0]
    return node


def _hidden(node: Any, env: dict[str, str]) -> str | None:
    """The variable of a one-variable macro call (``x.all(v, p)``) when it hides one of ``env``."""
    if not env or node.data != "member_dot_arg":
        return None
    kids = [c for c in node.children if c is not None]
    args = list(kids[2].children) if len(kids) > 2 else []
    if str(kids[1]) not in _ONE_VARIABLE or len(args) != 2:
        return None
    name = _bare_name(args[0])
    return name if name is not None and name in env else None


def _bare_name(node: Any) -> str | None:
    """The name an argument is when it is a bare identifier (a macro's variable), else None."""
    from lark import Tree

    while isinstance(node, Tree) and node.data != "ident" and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def _two_variable_form(fn: str, args: list[Any]) -> tuple[str, str] | None:
    """The two variables of a two-variable comprehension call (``syntax.TWO_VARIABLE``,
    ``TRANSFORMS``), or None for any other call."""
    if not (TWO_VARIABLE.get(fn) == len(args) or (fn in TRANSFORMS and len(args) in (3, 4))):
        return None
    k, v = _bare_name(args[0]), _bare_name(args[1])
    if k is None or v is None or k == v:
        return None
    return k, v


def _namespaced(node: Any) -> str | None:
    """``__sets_contains`` for a call ``sets.contains(...)``, else None."""
    from lark import Token, Tree

    if not isinstance(node, Tree) or node.data != "member_dot_arg":
        return None
    kids = [c for c in node.children if c is not None]
    target, fn = kids[0], str(kids[1])
    while isinstance(target, Tree) and target.data in ("member", "primary") and len(target.children) == 1:
        target = target.children[0]
    if not isinstance(target, Tree) or target.data != "ident" or not target.children:
        return None
    name = target.children[0]
    namespace = str(name) if isinstance(name, Token) else ""
    return f"__{namespace}_{fn}" if fn in NAMESPACED.get(namespace, ()) else None


def _is_size_call(node: Any) -> bool:
    from lark import Tree

    if not isinstance(node, Tree):
        return False
    if _namespaced(node) is not None:
        return True
    kids = [c for c in node.children if c is not None]
    if node.data == "member_dot_arg":
        return str(kids[1]) == "size" and len(kids) == 2
    if node.data == "ident_arg":
        return str(kids[0]) == "size" and len(kids) == 2 and len(kids[1].children) == 1
    return False


def _size_operand(node: Any) -> Any:
    kids = [c for c in node.children if c is not None]
    return kids[0] if node.data == "member_dot_arg" else kids[1].children[0]


class ValueSizes:
    """The sizes along an actual value's paths, for costing one evaluation: the most elements (or
    code points) any node a path reaches holds (``["self", "items", "@items"]``: the longest item)."""

    def __init__(self, roots: dict[str, Any]) -> None:
        self.roots = roots
        self._memo: dict[tuple[str, ...], Range | None] = {}

    def __call__(self, path: list[str]) -> Range | None:
        key = tuple(path)
        if key in self._memo:
            return self._memo[key]
        if not path or path[0] not in self.roots:
            return None
        nodes = [self.roots[path[0]]]
        for name in path[1:]:
            nodes = list(_step(nodes, name))
        most = max((_elements(n) for n in nodes), default=0)
        self._memo[key] = out = Range(0, most)
        return out


def _step(nodes: list[Any], name: str) -> Any:
    for n in nodes:
        if name == "@items" and isinstance(n, list):
            yield from n
        elif name == "@values" and isinstance(n, dict):
            yield from n.values()
        elif name == "@keys" and isinstance(n, dict):
            yield from n.keys()
        elif isinstance(n, dict) and name in n:
            yield n[name]


def _elements(value: Any) -> int:
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    return 0
