"""``content.IsLabelKey`` (label and annotation keys), asked twice: a key found valid is
remembered, and a bad key is refused every time with the same reasons."""

from __future__ import annotations

import pytest

from kubesched.api.validation import label_key_errors

_NAME = "name part must consist of alphanumeric characters"


@pytest.mark.parametrize(
    ("key", "starts"),
    [
        ("app", []),
        ("example.com/name", []),
        ("alibabacloud.com/gpu-milli", []),
        ("a/b/c", ["a valid label key must consist of"]),
        ("/x", ["prefix part must be non-empty"]),
        ("x/", ["name part must be non-empty", _NAME]),
        ("-bad", [_NAME]),
        ("UP.example.com/x", ["prefix part a lowercase RFC 1123 subdomain"]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
    ],
)
def test_label_keys_are_judged_alike_each_time(key: str, starts: list[str]) -> None:
    for _ in range(2):
        errs = label_key_errors(key)
        assert len(errs) == len(starts)
        assert all(e.startswith(s) for e, s in zip(errs, starts, strict=True))
