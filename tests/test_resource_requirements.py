"""``validateResourceRequirements`` (pkg/apis/core/validation): requests against limits, for
resources that may be overcommitted (requests ≤ limits) and those that may not (extended
resources, hugepages: requests = limits), whether the two are written alike or not."""

from __future__ import annotations

import pytest

from kubesched.api.validation import validate_requirements
from kubesched.errors import InputError

F = "spec.containers[0].resources"


@pytest.mark.parametrize(
    ("requests", "limits"),
    [
        ({"cpu": "1"}, {"cpu": "1"}),
        ({"cpu": "1000m"}, {"cpu": "1"}),  # the same quantity written otherwise
        ({"cpu": "500m"}, {"cpu": "1"}),
        ({"example.com/gpu": "2"}, {"example.com/gpu": "2"}),
        ({"example.com/gpu": "2"}, {"example.com/gpu": 2}),  # a number and its text
        ({"hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2097152"}),
        ({}, {"example.com/gpu": "1"}),
    ],
)
def test_accepted(requests, limits):
    validate_requirements({"requests": requests, "limits": limits}, F, container=True)


@pytest.mark.parametrize(
    ("requests", "limits", "message"),
    [
        ({"cpu": "2"}, {"cpu": "1"}, 'Invalid value: "2": must be less than or equal to cpu limit of 1'),
        ({"cpu": "1001m"}, {"cpu": "1"}, 'Invalid value: "1001m": must be less than or equal to cpu limit of 1'),
        (
            {"example.com/gpu": "1"},
            {"example.com/gpu": "2"},
            'Invalid value: "1": must be equal to example.com/gpu limit of 2',
        ),
        (
            {"example.com/gpu": "1"},
            {},
            "Required value: Limit must be set for non overcommitable resources",
        ),
    ],
)
def test_refused(requests, limits, message):
    with pytest.raises(InputError) as err:
        validate_requirements({"requests": requests, "limits": limits}, F, container=True)
    assert message in str(err.value)
