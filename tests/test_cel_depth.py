"""Deep and long CEL rules without a server: cel-go's shape for chains of ``&&`` and ``||`` (balanced)
and runs of ``!`` (folded), its two depth limits, the runtime's own nesting limit said in words, a
failure parsed once however often it is asked about, and a CRD write's rules compiled on the
worker thread, off the event loop. test_upstream_bounded_work judges the answers against
kube-apiserver."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.apiextensions.cel import off_loop, syntax
from kubesched.apiextensions.cel.runtime import RUNTIME_TOO_DEEP, CompileError, EvalError, Program, compile_rule
from kubesched.apiextensions.cel.syntax import Node, parse


def shape(node: Node) -> str:
    """A node as cel-go's AST prints it, calls as ``f(a, b)``."""
    if node.kind == "ident":
        return str(node.value)
    if node.kind == "lit":
        return repr(node.value)
    if node.kind == "select":
        return f"{shape(node.kids[0])}.{node.value}"
    return f"{node.value}({', '.join(shape(k) for k in node.kids)})"


@pytest.mark.parametrize(
    ("rule", "want"),
    [
        ("a && b", "_&&_(a, b)"),
        ("a && b && c", "_&&_(_&&_(a, b), c)"),  # helper.go's balancedTree: the left half the larger
        ("a && b && c && d", "_&&_(_&&_(a, b), _&&_(c, d))"),
        ("a || b || c || d || e", "_||_(_||_(_||_(a, b), c), _||_(d, e))"),
        ("a || b && c && d", "_||_(a, _&&_(_&&_(b, c), d))"),
        ("!!a", "a"),  # VisitLogicalNot: an even run is the operand
        ("!!!a", "!_(a)"),
        ("!" * 5000 + "a", "a"),
        ("-" * 5001 + "a", "-_(a)"),
        ("!(!a)", "!_(!_(a))"),  # two runs, not one
    ],
)
def test_chains_and_runs_are_shaped_as_cel_go_shapes_them(rule: str, want: str) -> None:
    assert shape(parse(rule)) == want


def test_a_chain_of_nine_thousand_terms_is_as_shallow_as_its_balance() -> None:
    def depth(node: Node) -> int:
        return 1 + max((depth(k) for k in node.kids), default=0)

    rule = " && ".join(["x != 1"] * 9_000)  # 98,996 code points
    assert depth(parse(rule)) == 16  # 14 levels of && over 9,000 terms, the != and its operand
    assert compile_rule(rule).expression == rule


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (" + ".join(["1"] * 251) + " > 0", "ERROR: <input>:-1:0: max recursion depth exceeded"),
        ("x" + ".a" * 251, "ERROR: <input>:-1:0: max recursion depth exceeded"),
        ("(" * 250 + "1" + ")" * 250 + " > 0", "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"),
        ("f(" * 251 + "1" + ")" * 251, "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"),
        # deeper than the runtime's parser nests, within cel-go's 250: refused in words that say so
        ("(" * 120 + "1" + ")" * 120 + " > 0", RUNTIME_TOO_DEEP),
        ("[" * 100 + "1" + "]" * 100 + " != []", RUNTIME_TOO_DEEP),
    ],
)
def test_rules_nested_too_deep_are_refused_in_cel_go_words(rule: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        compile_rule(rule)
    assert str(err.value) == message


def test_nesting_within_both_limits_compiles() -> None:
    assert compile_rule("(" * 90 + "x" + ")" * 90 + " > 0")
    assert compile_rule(" + ".join(["1"] * 250) + " > 0")  # 249 additions and the comparison: 250


def test_a_rule_that_fails_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its compilation, its type check and its cost each ask; the parse runs once."""
    from celpy.celparser import CELParser

    calls = []
    real = CELParser.parse
    monkeypatch.setattr(CELParser, "parse", lambda self, text: calls.append(text) or real(self, text))
    rule = " + ".join(["1"] * 300) + " > 0 // once"
    for _ in range(3):
        with pytest.raises(CompileError):
            compile_rule(rule)
        with pytest.raises(syntax.DepthError):
            parse(rule)
    assert calls == [rule]


def test_rule_texts_are_found_in_a_crd_a_merge_patch_and_a_json_patch() -> None:
    crd = {
        "spec": {
            "versions": [
                {
                    "schema": {
                        "openAPIV3Schema": {
                            "properties": {
                                "rule": {"type": "string"},  # a property named rule is a schema, not a rule
                                "spec": {"x-kubernetes-validations": [{"rule": "a", "messageExpression": "'m'"}]},
                            },
                            "x-kubernetes-validations": [{"rule": "b"}],
                        }
                    }
                }
            ]
        }
    }
    assert sorted(off_loop.rule_texts(crd)) == ["'m'", "a", "b"]
    assert len(off_loop.schemas(crd)) == 1
    ops = [
        {
            "op": "replace",
            "path": "/spec/versions/0/schema/openAPIV3Schema/x-kubernetes-validations/0/rule",
            "value": "c",
        },
        {"op": "add", "path": "/spec/versions/0/schema/x-kubernetes-validations/-", "value": {"rule": "d"}},
    ]
    assert sorted(off_loop.rule_texts(ops)) == ["c", "d"]


def test_rules_are_compiled_on_the_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The event loop's thread never compiles: the worker does, once per rule."""
    threads: list[str] = []
    real = off_loop.runtime.compile_rule
    monkeypatch.setattr(
        off_loop.runtime, "compile_rule", lambda text: threads.append(threading.current_thread().name) or real(text)
    )
    rules = [f"self.s != 'worker{i}'" for i in range(3)]

    async def write_twice() -> None:
        await off_loop.compiled_off_loop(rules)
        await off_loop.compiled_off_loop(rules)  # ready: not sent to the worker again

    asyncio.run(write_twice())
    assert len(threads) == 3 and all(name.startswith("cel-compile") for name in threads)
    assert off_loop.ready(rules)


def test_a_lexer_error_reads_the_same_when_its_rest_was_parsed_before() -> None:
    """The rest of a rule after a character no token starts with is parsed again to say what else
    is wrong; a failure the cache answers (raised again inside another ``except``) says it as a
    first parse does."""
    rule = "self.image == 'abcd"
    rest = "self.image ==      "  # the unclosed string blanked
    from celpy.celparser import CELParseError

    with pytest.raises(CELParseError):
        syntax.parse_tree(rest)  # now the cache's
    with pytest.raises(CompileError) as err:
        compile_rule(rule)
    lines = str(err.value).splitlines()
    assert lines[0] == "ERROR: <input>:1:15: Syntax error: token recognition error at: ''abcd'"
    assert lines[3].startswith("ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>' expecting {'['")


def _chain(joiner: str) -> str:
    forms = [
        "self.v.size() > {n}",
        "self.s != 'x{i}'",
        "self.v.all(x, x >= -{n})",
        "has(self.m.k{n})",
        "self.m['k{n}'] != 'z'",  # an error where the key is missing
    ]
    return f" {joiner} ".join(forms[i % len(forms)].format(i=i, n=i % 7) for i in range(1500))


@settings(max_examples=60, deadline=None)
@given(
    joiner=st.sampled_from(["&&", "||"]),
    v=st.lists(st.integers(-8, 8), max_size=8),
    s=st.sampled_from(["abc", "x3", "x1499"]),
    keys=st.sets(st.integers(0, 6)),
)
def test_a_long_chain_compiled_in_parts_answers_as_compiled_whole(joiner, v, s, keys) -> None:
    """A rule over CHUNKED_FROM whose top is a chain runs as several programs; its answer (a value,
    or an error's words) is the one program's, whatever decides it and wherever."""
    rule = _chain(joiner)
    parted = compile_rule(rule)
    assert len(parted.parts) > 1 and parted.joiner == joiner
    whole = _whole(rule)
    activation = {"self": {"v": v, "s": s, "m": {f"k{k}": "a" for k in keys}}}
    assert _answer(parted, activation) == _answer(whole, activation)


def _whole(rule: str) -> Program:
    from kubesched.apiextensions.cel import runtime

    limit, runtime.CHUNKED_FROM = runtime.CHUNKED_FROM, 10**9
    try:
        return compile_rule(rule + " ")  # another text: not the cached one
    finally:
        runtime.CHUNKED_FROM = limit


def _answer(program: Program, activation: dict) -> object:
    try:
        return program.run(activation)
    except EvalError as exc:
        return f"error: {exc}"


def test_a_dra_selector_compiled_leaves_the_recursion_limit_crd_rules_need() -> None:
    """celpy's Environment sets the interpreter's recursion limit to 2,500 as it is made; compiling
    a DeviceClass selector with it must not lower what the CRD rules' walkers were given."""
    import sys

    from kubesched.scheduler.plugins.dynamicresources.cel import compile_selector

    compile_selector("device.driver == 'depth.example.com'")
    assert sys.getrecursionlimit() >= syntax._RECURSION_LIMIT


def test_a_rule_that_does_not_parse_is_parsed_on_the_worker_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the worker has compiled a CRD's rules, the type check and the cost model on the loop
    find a failing rule's AST failure cached: the loop does not parse it again."""
    from celpy.celparser import CELParseError, CELParser

    bad = "self.s == " + " + ".join(["'x'"] * 300) + " +"  # long, and does not parse
    off_loop.compile_all([bad], [])
    calls = []
    real = CELParser.parse
    monkeypatch.setattr(CELParser, "parse", lambda self, text: calls.append(text) or real(self, text))
    with pytest.raises(CELParseError):
        syntax.parse(bad)
    assert calls == []
