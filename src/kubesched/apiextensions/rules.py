"""A CRD schema's validation rules in CEL (``x-kubernetes-validations``, apiextensions-apiserver's
``pkg/apiserver/schema/cel``): each rule is evaluated with ``self`` bound to the value of the node
that carries it, and ``oldSelf`` to its previous value on an update (a transition rule, one that
reads ``oldSelf``, runs only when there is one). A rule that returns false is a field error with
the rule's message (``messageExpression``'s result, else ``message``, else ``failed rule: <rule>``)
at the node's path (or ``fieldPath`` below it), of the rule's ``reason``."""

from __future__ import annotations

import functools
from typing import Any

from kubesched.apiextensions.structural import FieldError, field_schema

# a rule's ``reason`` -> (the cause's reason, how its message starts)
REASONS = {
    "FieldValueInvalid": ("FieldValueInvalid", None),
    "FieldValueForbidden": ("FieldValueForbidden", "Forbidden"),
    "FieldValueRequired": ("FieldValueRequired", "Required value"),
    "FieldValueDuplicate": ("FieldValueDuplicate", "Duplicate value"),
}


class RuleError(Exception):
    """A rule that does not compile (the CRD's validation reports it)."""


@functools.lru_cache(maxsize=4096)
def compiled(expression: str) -> Any:
    """A runnable program of one rule (compiled once, as upstream caches them per CRD)."""
    import celpy

    env = celpy.Environment()
    try:
        return env.program(env.compile(expression))
    except Exception as exc:  # celpy's CELParseError and lark's errors
        raise RuleError(str(exc).splitlines()[0]) from None


def uses_old_self(expression: str) -> bool:
    return "oldSelf" in expression


def _cel(value: Any) -> Any:
    import celpy

    return celpy.json_to_cel(value)


def _truth(result: Any) -> bool | None:
    """A rule's result as a bool, None when it is not one (or an evaluation error)."""
    if isinstance(result, Exception):
        return None
    if isinstance(result, bool) or type(result).__name__ == "BoolType":
        return bool(result)
    return None


def check(rules: list[Any], value: Any, path: str, old: Any = None, has_old: bool = False) -> list[FieldError]:
    """The field errors of one node's rules for ``value`` (``old``: its value before an update)."""
    errors: list[FieldError] = []
    for rule in rules:
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
            continue
        expression = rule["rule"]
        transition = uses_old_self(expression)
        if transition and not has_old:
            continue
        activation = {"self": _cel(value)}
        if transition:
            activation["oldSelf"] = _cel(old)
        try:
            result = compiled(expression).evaluate(activation)
        except RuleError:
            continue  # refused when the CRD was written
        except Exception as exc:  # a runtime error: the rule is reported as failing, with why
            errors.append(_error(rule, path, value, f"{expression}: {exc.args[0] if exc.args else exc}"))
            continue
        if _truth(result) is not False:
            continue
        errors.append(_error(rule, path, value, _message(rule, activation)))
    return errors


def _message(rule: dict[str, Any], activation: dict[str, Any]) -> str:
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            out = compiled(expression).evaluate(activation)
        except Exception:
            out = None
        if isinstance(out, str) and out.strip():
            return str(out)
    message = rule.get("message")
    return str(message) if message else f"failed rule: {rule['rule']}"


def _error(rule: dict[str, Any], path: str, value: Any, message: str) -> FieldError:
    reason, word = REASONS.get(str(rule.get("reason") or "FieldValueInvalid"), REASONS["FieldValueInvalid"])
    field_path = str(rule.get("fieldPath") or "")
    at = path + field_path if field_path.startswith((".", "[")) else path
    at = at.lstrip(".") or "<nil>"
    if word is None:  # the value is left out (``field.Invalid(path, omitValue, ...)``)
        return FieldError(at, reason, f"Invalid value: {message}")
    return FieldError(at, reason, f"{word}: {message}")


def validate(schema: dict[str, Any], obj: Any, old: Any = None, has_old: bool = False) -> list[FieldError]:
    """Every rule of the schema against the object (``old``: the stored one, on an update), the
    nodes walked as the schema declares them; an old value is followed through objects' fields
    (list items are not correlated, so transition rules below a list do not run)."""
    errors: list[FieldError] = []
    _walk(schema, obj, "", old, has_old, errors)
    return errors


def _walk(schema: dict[str, Any], value: Any, path: str, old: Any, has_old: bool, errors: list[FieldError]) -> None:
    if value is None:
        return
    rules = schema.get("x-kubernetes-validations")
    if rules:
        errors.extend(check(rules, value, path, old, has_old))
    if isinstance(value, dict):
        for key, item in value.items():
            if path == "" and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = field_schema(schema, key)
            if sub is not None:
                known = has_old and isinstance(old, dict) and key in old
                _walk(sub, item, f"{path}.{key}" if path else key, old.get(key) if known else None, known, errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(schema["items"], item, f"{path}[{i}]", None, False, errors)
