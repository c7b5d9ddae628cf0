"""A pod's tolerations as the scheduler reads them (``v1.Toleration``): operator defaulted to
Equal, missing fields empty, an unknown operator refused naming the field; parsed once per
distinct toleration and shared (they are frozen)."""

from __future__ import annotations

import pytest

from kubesched.api.selectors import Taint, Toleration, parse_tolerations
from kubesched.errors import InputError


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ([], ()),
        (None, ()),
        ([{"key": "k", "value": "v", "effect": "NoSchedule"}], (Toleration("k", "Equal", "v", "NoSchedule"),)),
        ([{"operator": "Exists"}], (Toleration("", "Exists", "", ""),)),
        (
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {"key": "k", "operator": "Equal", "value": "1"},
            ],
            (Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"), Toleration("k", "Equal", "1", "")),
        ),
    ],
)
def test_tolerations_parse_to_their_fields(raw, parsed) -> None:
    first = parse_tolerations(raw, "spec.tolerations")
    again = parse_tolerations(raw, "spec.tolerations")
    assert first == parsed
    assert all(a is b for a, b in zip(first, again, strict=True))  # one object per distinct toleration


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        (["x"], "spec.tolerations[0]", "expected an object"),
        ([{"key": "k"}, {"operator": "In"}], "spec.tolerations[1].operator", "Unsupported value: 'In'"),
    ],
)
def test_a_malformed_toleration_names_its_field(raw, field, message) -> None:
    with pytest.raises(InputError) as err:
        parse_tolerations(raw, "spec.tolerations")
    assert err.value.field == field
    assert message in str(err.value)


def test_a_shared_toleration_still_tolerates_by_its_own_fields() -> None:
    (exists,) = parse_tolerations([{"key": "k", "operator": "Exists"}], "t")
    (equal,) = parse_tolerations([{"key": "k", "value": "a"}], "t")
    assert exists.tolerates(Taint("k", "b", "NoSchedule"))
    assert not equal.tolerates(Taint("k", "b", "NoSchedule"))
    assert equal.tolerates(Taint("k", "a", "NoSchedule"))
