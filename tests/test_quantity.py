import pytest

from kubesched.api.quantity import QuantityError, milli_value, value
from kubesched.api.resources import pod_requests


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        ("500m", 500, 1),
        ("0.5", 500, 1),
        ("1", 1000, 1),
        ("1e3", 1_000_000, 1000),
        ("129e6", 129_000_000_000, 129_000_000),
        ("128974848", 128_974_848_000, 128_974_848),
        ("123Mi", 123 * 2**20 * 1000, 123 * 2**20),
        ("1Gi", 2**30 * 1000, 2**30),
        ("2k", 2_000_000, 2000),
        ("0.1m", 1, 1),
        ("1E", 10**21, 10**18),
        ("1.5Gi", 3 * 2**29 * 1000, 3 * 2**29),
    ],
)
def test_quantities_parse_exactly(text: str, milli: int, whole: int) -> None:
    assert milli_value(text) == milli
    assert value(text) == whole


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5Xi", "1 Gi", "--1", "1e"])
def test_invalid_quantities_are_refused(bad: str) -> None:
    with pytest.raises(QuantityError):
        value(bad)


def test_pod_request_is_max_of_sum_and_init_with_sidecars_and_overhead() -> None:
    containers = [{"cpu": 100}, {"cpu": 200}]
    inits = [({"cpu": 50}, True), ({"cpu": 400}, False)]  # sidecar then a regular init container
    # running: 100+200+50 = 350; init phase: 400 + 50 (sidecar started before it) = 450
    assert pod_requests(containers, inits, {"cpu": 10}) == {"cpu": 460}


def test_non_zero_defaults_apply_only_to_missing_requests() -> None:
    got = pod_requests([{}, {"cpu": 0}], [], {}, non_zero=True)
    assert got == {"cpu": 100, "memory": 2 * 200 * 1024 * 1024}


@pytest.mark.parametrize(
    ("text", "milli", "shown"),
    [
        ("1e9999999", 10**43, "1e9999999"),  # held at 10^40, shown as written
        ("1e-9999999", 1, "1e-9"),  # rounded up to a nano unit
        ("1." + "0" * 1000 + "1", 1001, "1000000001n"),  # digits past the 45th round up
        ("1e" + "9" * 10_000, 10**43, "1e" + "9" * 10_000),
    ],
)
def test_huge_quantities_are_read_in_linear_time_and_held_at_the_edges(text: str, milli: int, shown: str) -> None:
    from kubesched.api.quantity import canonical, milli_value

    assert milli_value(text) == milli
    assert canonical(text) == shown
