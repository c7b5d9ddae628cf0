"""string.format, strings.quote, sortBy, optMap and optFlatMap in CRD rules, without a server: the
formatter's clauses and words (cel-go's ext/formatting.go), Go's %g of a float64 read back as the
same number, and the rewriting that runs sortBy and optMap on the runtime without copying a rule
exponentially. test_upstream_bounded_work judges the same functions against kube-apiserver."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.apiextensions.cel.checker import problems
from kubesched.apiextensions.cel.formatting import FormatError, go_g, string_format
from kubesched.apiextensions.cel.runtime import CompileError, EvalError, compile_rule
from kubesched.errors import go_quote


@pytest.mark.parametrize(
    ("fmt", "args", "want"),
    [
        ("%s|%d|%x|%X|%o|%b", ["ab", -3, "ab", 255, 8, 5], "ab|-3|6162|FF|10|101"),
        ("%.2f %f %.0f", [1234.5, -0.5, 2.5], "1,234.50 -0.500000 2"),
        # %e through golang.org/x/text: a power of ten in superscript, the precision a width of six
        ("%e %.2e %e", [1234.5, 0.000123, -1e100], "1.234500×10⁰³ 1.230000×10⁻⁰⁴ -1.000000×10¹⁰⁰"),
        ("%f %f %e %e", ["NaN", "Infinity", "-Infinity", "NaN"], "NaN ∞     -∞    NaN"),
        ("%s %s %s %s", [1e6, 123456.0, 0.00001, -0.0], "1e+06 123456 1e-05 -0"),
        ("%s", [[1, "a", 2.5, True, None, b"x"]], '[1, "a", 2.500000, true, null, b"x"]'),
        ("%s", [{"b": [1], "a": "x\n", 2: 1.0}], '{"a":"x\\n", "b":[1], 2:1.000000}'),
        ("%s", [[math.inf]], '["+Inf"]'),
        ("%b %b", [True, False], "1 0"),
        ("100%% %s%%", ["x"], "100% x%"),
        ("é%sé", ["ü"], "éüé"),
    ],
)
def test_clauses_format_as_cel_go_formats_them(fmt: str, args: list, want: str) -> None:
    assert string_format(fmt, args) == want


@pytest.mark.parametrize(
    ("fmt", "args", "said"),
    [
        ("%d", ["a"], "error during formatting: decimal clause can only be used on integers, was given string"),
        ("%f", [1], "error during formatting: fixed-point clause can only be used on doubles, was given int"),
        ("%x", [1.5], "only integers, byte buffers, and strings can be formatted as hex, was given double"),
        ("%s", [object()], "string clause can only be used on strings"),
        ("%s %s", ["a"], "index 1 out of range"),
        ("%", [1], "unexpected end of string"),
        ("%", [], "index 0 out of range"),  # the argument is asked for before the end is seen
        ("%z", [1], 'could not parse formatting clause: unrecognized formatting clause "z"'),
        ("%.3", [1.0], "error while parsing precision: could not find end of precision specifier"),
        ("%.f", [1.0], 'strconv.Atoi: parsing "": invalid syntax'),
        ("%.1000000000f", [1.0], "precision 1000000000 exceeds maximum allowed precision 1000"),
    ],
)
def test_a_bad_clause_or_argument_is_refused_in_cel_gos_words(fmt: str, args: list, said: str) -> None:
    with pytest.raises(FormatError) as caught:
        string_format(fmt, args)
    assert said in str(caught.value)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_go_g_reads_back_as_the_same_float(x: float) -> None:
    shown = go_g(x)
    assert float(shown) == x
    exponent = math.floor(math.log10(abs(x))) if x else 0
    assert ("e" in shown) == (exponent < -4 or exponent >= 6)


@pytest.mark.parametrize(
    ("rule", "value"),
    [
        ("self.sortBy(x, -x)", [3, 2, 1]),
        ("self.map(x, [x]).sortBy(l, l[0]).map(l, l[0])", [1, 2, 3]),
        ("self.sortBy(x, x).sortBy(y, -y)", [3, 2, 1]),
        ("[[2, 1], [1]].sortBy(l, l.size()).map(l, l.sortBy(x, x))", [[1], [1, 2]]),
        ("self.all(i, x, [x].sortBy(x, i).size() == 1)", True),  # the binding hides the outer x
        ("optional.of(self).optMap(s, s.size()).value()", 3),
        ("optional.of(self).optMap(s, s.size()).optMap(n, n * 2).value()", 6),
        ("optional.none().optMap(s, s).hasValue()", False),
        ("optional.of(1).optFlatMap(x, optional.of(x + 1)).value()", 2),
        ("optional.of(1).optFlatMap(x, optional.none()).hasValue()", False),
        ("'%s=%d'.format(['n', self.size()])", "n=3"),
        ("strings.quote('a\\n\"')", '"a\\n\\""'),
        # optional field selection, read by the parser as a plain one and run through has()
        ("optional.of({'a': 1}).value().?a.orValue(0) + {'b': {'c': 2}}.?b.?c.orValue(0)", 3),
        # past a .? a plain selection tests presence too (cel-go's optional chaining)
        ("{'b': {'c': 2}}.?x.?c.orValue(5) + {'b': {'c': 2}}.?b.c.value() + {'b': {}}.?b.c.orValue(1)", 8),
        ("'a.?b' + \"c.?d\" + r'.?' + '[?'", "a.?bc.?d.?[?"),  # no selection inside a string
        # optional entries of list and map literals
        ("[1, ?optional.of(2), 3, ?optional.none()]", [1, 2, 3]),
        ("{?'a': optional.none(), 'b': 1, ?'c': optional.of(2)}", {"b": 1, "c": 2}),
        ("[?{'k': 1}.?k, ?{'k': 1}.?z].size()", 1),
        ("[5, 6][?1].orValue(0) + [5][?1].orValue(0) + [5][?-1].orValue(0) + {'k': 3}[?'k'].orValue(0)", 9),
        ("{'k': [7]}.?k[?0].orValue(0) + {'k': [7]}.?k[0].value()", 14),
        # optional.unwrap and unwrapOpt over a literal and over map's optionals (and its filtering form)
        ("optional.unwrap([optional.of(1), optional.none(), ([optional.of(3)])[0]])", [1, 3]),
        ("[{'k': 1}.?k, {'k': 1}.?z].unwrapOpt() + [].unwrapOpt()", [1]),
        ("optional.unwrap(self.map(x, x > 1 ? optional.of(x * 10) : optional.none()))", [30, 20]),
        ("optional.unwrap(self.map(x, x != 3, optional.of(x)))", [1, 2]),
        ("self.map(x, x > 1, x * 2)", [6, 4]),
        ("self.all(x, optional.unwrap(self.map(x, optional.of(x))).size() == 3)", True),  # the inner x hides the outer
    ],
)
def test_the_runtime_runs_the_expansions_it_lacks(rule: str, value: object) -> None:
    assert compile_rule(rule).run({"self": [1, 3, 2]}) == value


def test_sort_by_keys_of_two_types_and_lists_are_refused_as_cel_go_refuses_them() -> None:
    with pytest.raises(EvalError, match="list elements must have the same type"):
        compile_rule("self.sortBy(x, x == 1 ? 1 : 'a')").run({"self": [1, 2]})
    with pytest.raises(EvalError, match="list elements must be comparable"):
        compile_rule("self.sortBy(x, [x])").run({"self": [1, 2]})


def test_a_chain_of_opt_maps_is_refused_at_once_not_copied_exponentially() -> None:
    """Each optMap writes its optional twice; thirty in a chain would be 2^30 copies."""
    rule = "optional.of(1)" + ".optMap(x, x)" * 30 + ".hasValue()"
    with pytest.raises(CompileError, match="too complex"):
        compile_rule(rule)
    nested = "optional.of(1)"
    for _ in range(30):  # optFlatMap writes its expression twice
        nested = f"optional.of(1).optFlatMap(x, {nested})"
    with pytest.raises(CompileError, match="too complex"):
        compile_rule(nested + ".hasValue()")
    assert compile_rule("optional.of(1)" + ".optMap(x, x + 1)" * 4 + ".value()").run({}) == 5


@pytest.mark.parametrize("rule", ["f(a, ?b)", "size([1], ?x)", "(?a)"])
def test_a_question_mark_outside_a_literal_or_a_selection_is_refused(rule: str) -> None:
    """Only a ``?`` after a ``.``, an index's ``[`` or a list or map literal's ``[``, ``{`` or
    ``,`` is optional syntax; any other is refused, never read as a space."""
    with pytest.raises(CompileError, match="Syntax error"):
        compile_rule(rule)


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("\a\b\f\n\r\t\v", '"\\a\\b\\f\\n\\r\\t\\v"'),
        ("a\x00\x7f", '"a\\x00\\x7f"'),
        ("é ü 😀", '"é ü 😀"'),
        ("\u00a0\u2028\U000e0001", '"\\u00a0\\u2028\\U000e0001"'),
    ],
)
def test_go_quote_is_strconv_quote(text: str, quoted: str) -> None:
    """Go's %q, as the formatter's lists and maps and the API's field errors print a string: one line."""
    assert go_quote(text) == quoted


def test_unwrap_of_a_list_it_cannot_see_written_is_refused_when_the_rule_is_written() -> None:
    """cel-go unwraps any list of optionals; kubesched's runtime holds one only as a literal or a
    ``map``'s result, so a rule unwrapping another (a comprehension's variable) is refused at
    CRD write, in words that say so, not accepted and failed on every object."""
    said, _ = problems("[[optional.of(1)]].all(l, optional.unwrap(l).size() == 1)", None)
    assert "optional.unwrap runs here only on a list literal or a map macro's list" in said
    said, _ = problems("[[optional.of(1)]].all(l, l.unwrapOpt().size() == 1)", None)
    assert "unwrapOpt runs here only on a list literal or a map macro's list" in said
    said, _ = problems("optional.unwrap(dyn([optional.of(1)])) == []", None)  # a dyn operand alike
    assert "optional.unwrap runs here only on a list literal or a map macro's list" in said


def test_a_long_rule_with_unreadable_characters_is_parsed_once_not_once_an_error() -> None:
    """After a lexer error a short rule is parsed again to say what else is wrong, as cel-go goes
    on; a long one is not (each parse of 45,000 characters costs over a second of the loop)."""
    short = "self.replicas == 1 # 2"
    with pytest.raises(CompileError) as err:
        compile_rule(short)
    assert str(err.value).count("ERROR:") == 2
    long = "[" + ", ".join(["1"] * 1000) + "]" + " #" * 9
    with pytest.raises(CompileError) as err:
        compile_rule(long)
    assert str(err.value).count("ERROR:") == 1
