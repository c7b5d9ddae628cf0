"""A schema's ``pattern``, matched as kube-apiserver matches it: with RE2 (linear in the input,
whatever the pattern), where kube-openapi calls Go's ``regexp.MatchString`` (RE2 syntax, unanchored
search). A pattern RE2 cannot compile is refused when the CRD is written, with Go's
``regexp/syntax`` words (``apiextensions/validation/validation.go``)."""

from __future__ import annotations

import functools
from typing import Any

import re2

__all__ = ["PatternError", "compiled", "search"]

# RE2's error words -> Go regexp/syntax's ErrorCode strings (the two parsers share their rules)
_GO_WORDS = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
    "trailing \\": "trailing backslash at end of expression",
}
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error is returned, not also written to stderr


class PatternError(ValueError):
    """A pattern RE2 refuses, worded as Go's ``regexp.Compile`` error."""


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str) -> Any:
    """The pattern compiled once (``PatternError`` if RE2 refuses it)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else b""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        words, _, arg = text.partition(": ")
        if words == "trailing \\":
            arg = ""
        elif words == "invalid perl operator" and arg.startswith("(?<"):
            # Go reads ``(?<`` as a named capture (``(?<name>``), up to the next ``>``
            rest = pattern[pattern.find(arg) :]
            end = rest.find(">")
            words, arg = "invalid named capture group", rest if end < 0 else rest[: end + 1]
        raise PatternError(f"error parsing regexp: {_GO_WORDS.get(words, words)}: `{arg}`") from None


def search(pattern: str, value: str) -> bool:
    """Whether the pattern matches anywhere in the value (``regexp.MatchString``)."""
    return compiled(pattern).search(value) is not None
