"""The semver library's versions (``k8s.io/apiserver/pkg/cel/library/semverlib.go`` over
``github.com/blang/semver/v4``): what parses, in blang's words when it does not, what normalizing
accepts, and Semantic Versioning's precedence; rules using them are judged against kube-apiserver in
test_upstream_bounded_work.py."""

from __future__ import annotations

import pytest

from kubesched.apiextensions.cel import semver


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("1.2.3", "1.2.3"),
        ("1.2.3-rc.1+build.5", "1.2.3-rc.1+build.5"),
        ("0.0.0-0", "0.0.0-0"),
        ("1.2", "No Major.Minor.Patch elements found"),
        ("", "Version string empty"),
        ("1..3", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("01.2.3", 'Major number must not contain leading zeroes "01"'),
        ("1.02.3", 'Minor number must not contain leading zeroes "02"'),
        ("v1.2.3", 'Invalid character(s) found in major number "v1"'),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.2.3-a..b", "Prerelease is empty"),
        ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.2.3+", "Build meta data is empty"),
        ("1.2.3+a!", 'Invalid character(s) found in build meta data "a!"'),
        ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
    ],
)
def test_parse_as_blang_semver_parses(text: str, parsed: str) -> None:
    try:
        got = semver.render(semver.parse(text))
    except semver.SemverError as err:
        got = str(err)
    assert got == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("v1.2.3", "1.2.3"),
        ("1", "1.0.0"),
        ("v1.2", "1.2.0"),
        ("01.002.0003", "1.2.3"),
        ("1.2-rc", "short version cannot contain PreRelease/Build meta data"),
    ],
)
def test_normalizing_as_normalize_and_parse(text: str, parsed: str) -> None:
    try:
        got = semver.render(semver.normalize_and_parse(text))
    except semver.SemverError as err:
        got = str(err)
    assert got == parsed


# Semantic Versioning 2.0's own example of precedence, lowest first (build metadata not compared)
ORDERED = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "2.0.0",
    "10.0.0",
]


def test_precedence_as_semantic_versioning_orders_them() -> None:
    parsed = [semver.parse(v) for v in ORDERED]
    for i, a in enumerate(parsed):
        for j, b in enumerate(parsed):
            assert semver.compare(a, b) == (i > j) - (i < j), (ORDERED[i], ORDERED[j])
    assert semver.compare(semver.parse("1.0.0+a"), semver.parse("1.0.0+b")) == 0
