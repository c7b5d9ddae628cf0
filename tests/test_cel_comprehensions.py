"""Two-variable comprehensions (cel-go's ``ext/comprehensions.go``) and the lists extension
(``ext/lists.go``) as a CRD rule runs them: the runtime has neither, so a rule is run rewritten
(the pairs of a list or map, ``__cel_entries``); what the rewriting must keep is the meaning of every
variable (a macro's own variable hides an outer one of the same name) and every part of the text
(keyword literals included). Rules in both are judged against kube-apiserver in
test_upstream_bounded_work.py."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.apiextensions.cel.runtime import EvalError, compile_rule

SELF: dict[str, Any] = {"m": {"a": {"x": 1}, "b": {}}, "items": [{"x": 1}, {"y": 2}], "nums": [3, 1, 2]}


@pytest.mark.parametrize(
    ("rule", "value"),
    [
        # (index, element) of a list, (key, value) of a map
        ("self.nums.all(i, n, n > i)", False),
        ("self.nums.all(i, n, n + i > 0)", True),
        ("self.nums.exists(i, n, n == i)", True),
        ("self.nums.existsOne(i, n, n > 1)", False),
        ("self.nums.exists_one(i, n, n == 3)", True),
        ("self.m.exists(k, v, has(v.x) && k == 'a')", True),
        ("self.m.all(k, v, has(v.x))", False),
        ("self.nums.transformList(i, n, n * i)", [0, 1, 4]),
        ("self.nums.transformList(i, n, n > 1, n)", [3, 2]),
        ("self.m.transformMap(k, v, k + '!')", {"a": "a!", "b": "b!"}),
        ("self.m.transformMap(k, v, has(v.x), v.x)", {"a": 1}),
        ("self.nums.transformMapEntry(i, n, {string(n): i})", {"3": 0, "1": 1, "2": 2}),
        ("self.m.transformMapEntry(k, v, has(v.x), {v.x: k})", {1: "a"}),
        # nested: an inner macro's variable hides the outer one of its name
        ("self.items.all(i, v, self.items.exists(j, w, j == i))", True),
        ("self.nums.all(i, n, [10, 20].all(i, i > n))", True),
        ("self.nums.all(i, n, [10, 20].all(x, x > i))", True),
        ("self.nums.map(i, i).exists(i, v, v == 2 && i == 2)", True),
        # the text around the rewritten parts, keyword literals at the end included
        ("self.nums.size() == 3 ? true : false", True),
        ("size(self.nums) > 5 ? null : self.nums.all(i, n, true)", True),
        # the lists extension
        ("self.nums.sort()", [1, 2, 3]),
        ("self.nums.reverse()", [2, 1, 3]),
        ("'abc'.reverse()", "cba"),
        ("self.nums.slice(1, 3)", [1, 2]),
        ("[[1], [2, [3]]].flatten()", [1, 2, [3]]),
        ("[[1], [2, [3]]].flatten(2)", [1, 2, 3]),
        ("[1, 1, 1.0, true, 'a', 'a'].distinct()", [1, True, "a"]),
        ("lists.range(3)", [0, 1, 2]),
    ],
)
def test_rules_run_as_cel_go_runs_them(rule: str, value: Any) -> None:
    assert compile_rule(rule).run({"self": SELF}) == value


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("self.nums.transformMapEntry(i, n, {'k': n})", "insert failed: key k already exists"),
        ("self.nums.slice(2, 1)", "cannot slice(2, 1), start index must be less than or equal to end index"),
        ("self.nums.slice(-1, 1)", "cannot slice(-1, 1), negative indexes not supported"),
        ("self.nums.slice(0, 4)", "cannot slice(0, 4), list is length 3"),
        ("self.nums.flatten(-1)", "level must be non-negative"),
        ("lists.range(-1)", "lists.range: size must be non-negative, got -1"),
        ("[1, 'a'].sort()", "list elements must have the same type"),
        ("[[1], [2]].sort()", "list elements must be comparable"),
    ],
)
def test_failing_calls_are_worded_as_cel_go_words_them(rule: str, message: str) -> None:
    with pytest.raises(EvalError) as err:
        compile_rule(rule).run({"self": SELF})
    assert str(err.value) == message
