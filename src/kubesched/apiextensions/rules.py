"""A CRD schema's validation rules in CEL (``x-kubernetes-validations``, apiextensions-apiserver's
``pkg/apiserver/schema/cel``): each rule is evaluated with ``self`` bound to the value of the node
that carries it, and ``oldSelf`` to its previous value on an update (a transition rule, one that
reads ``oldSelf``, runs only when there is one). A rule that returns false is a field error with
the rule's message (``messageExpression``'s result, else ``message``, else ``failed rule: <rule>``)
at the node's path (or ``fieldPath`` below it), of the rule's ``reason``. One object's rules share
``RuntimeCELCostBudget`` and each evaluation is held to ``PerCallLimit``: an evaluation is charged
what it can cost for the values it is given before it runs (``cel/runtime.py``)."""

from __future__ import annotations

from typing import Any

from kubesched.apiextensions.cel import runtime
from kubesched.apiextensions.cel.cost import estimated_cost
from kubesched.apiextensions.cel.decls import RESERVED, Decl, decl_type, escape
from kubesched.apiextensions.cel.limits import PER_CALL_LIMIT, RUNTIME_BUDGET
from kubesched.apiextensions.structural import FieldError, field_schema, go_shown

# a rule's ``reason`` -> (the cause's reason, how its message starts)
REASONS = {
    "FieldValueInvalid": ("FieldValueInvalid", None),
    "FieldValueForbidden": ("FieldValueForbidden", "Forbidden"),
    "FieldValueRequired": ("FieldValueRequired", "Required value"),
    "FieldValueDuplicate": ("FieldValueDuplicate", "Duplicate value"),
}
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"

RuleError = runtime.CompileError


def compiled(expression: str) -> runtime.Program:
    """A runnable program of one rule (``RuleError`` when it does not compile)."""
    return runtime.compile_rule(expression)


def uses_old_self(expression: str) -> bool:
    return "oldSelf" in expression


class _Spent(Exception):
    """The object's budget is spent, or one call would exceed its limit: no further rules run."""


class Budget:
    """``RuntimeCELCostBudget`` for one object's rules; each evaluation is charged the bound of
    what it can cost for the values it is given (``cost.estimated_cost`` over their sizes)."""

    def __init__(self, remaining: int = RUNTIME_BUDGET) -> None:
        self.remaining = remaining

    def charge(self, program: runtime.Program, decl: Decl | None, roots: dict[str, Any]) -> str | None:
        """None when the evaluation may run (and is charged), else why not."""
        bound = estimated_cost(program.expression, decl, runtime.ValueSizes(roots))
        if bound > PER_CALL_LIMIT:
            return "call"
        if bound > self.remaining:
            return "budget"
        self.remaining -= bound
        return None


_DECLS: dict[int, tuple[dict[str, Any], Decl | None]] = {}


def _decl(schema: dict[str, Any], root: bool) -> Decl | None:
    """The node's declared CEL type, computed once per schema node."""
    hit = _DECLS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    if len(_DECLS) > 4096:
        _DECLS.clear()
    decl = decl_type(schema, root)
    _DECLS[id(schema)] = (schema, decl)
    return decl


_ESCAPING: dict[int, tuple[dict[str, Any], bool]] = {}


def _needs_escaping(schema: Any) -> bool:
    """Whether a property below this schema node is spelled otherwise in a rule (``escape``)."""
    if not isinstance(schema, dict):
        return False
    hit = _ESCAPING.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    if len(_ESCAPING) > 4096:
        _ESCAPING.clear()
    props = schema.get("properties") or {}
    needed = any(escape(name) != name for name in props) or any(
        _needs_escaping(sub) for sub in (*props.values(), schema.get("items"), schema.get("additionalProperties"))
    )
    _ESCAPING[id(schema)] = (schema, needed)
    return needed


def escaped(schema: Any, value: Any) -> Any:
    """A value as rules see it: each declared property under the name a rule spells it by
    (``self.__namespace__`` for ``namespace``); the value itself when no name needs it."""
    if not _needs_escaping(schema):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in props:
                name = escape(k)
                if name is not None:
                    out[name] = escaped(props[k], v)
                if k in RESERVED:  # also reached by its own name (recognizeKeywordAsFieldName)
                    out[k] = out[f"__{k}__"]
            else:
                out[k] = escaped(extra, v) if isinstance(extra, dict) else v
        return out
    if isinstance(value, list):
        return [escaped(schema.get("items"), v) for v in value]
    return value


def _truth(result: Any) -> bool | None:
    """A rule's result as a bool, None when it is not one."""
    return result if isinstance(result, bool) else None


def _shown_type(schema: dict[str, Any]) -> str:
    return go_shown(str(schema.get("type") or ""))


def check(
    schema: dict[str, Any],
    value: Any,
    path: str,
    budget: Budget,
    old: Any = None,
    has_old: bool = False,
    root: bool = False,
) -> list[FieldError]:
    """The field errors of one node's rules for ``value`` (``old``: its value before an update),
    as ``validateExpressions`` words them; ``_Spent`` (with the errors so far) when the budget
    or a call's limit stops the validation."""
    errors: list[FieldError] = []
    at = path.lstrip(".") or "<nil>"
    for rule in schema.get("x-kubernetes-validations") or []:
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
            continue
        expression = rule["rule"]
        transition = uses_old_self(expression)
        if transition and not has_old:
            continue
        activation = {"self": escaped(schema, value)}
        if transition:
            activation["oldSelf"] = escaped(schema, old)
        try:
            program = compiled(expression)
        except RuleError:
            continue  # refused when the CRD was written
        why = budget.charge(program, _decl(schema, root), activation)
        if why is not None:
            if why == "call":
                message = (
                    "'operation cancelled: actual cost limit exceeded': no further validation rules will be run "
                    f"due to call cost exceeds limit for rule: {_rule_text(rule)}"
                )
            else:
                message = OUT_OF_BUDGET
            errors.append(FieldError(at, "FieldValueInvalid", f"Invalid value: {_shown_type(schema)}: {message}"))
            raise _Spent(errors)
        try:
            result = program.run(activation)
        except runtime.EvalError as exc:
            text = str(exc)
            if text.startswith("no such overload"):
                message = (
                    f"'{text}': call arguments did not match a supported operator, function or macro signature "
                    f"for rule: {_rule_text(rule)}"
                )
            else:
                message = f"{text} evaluating rule: {_rule_text(rule)}"
            errors.append(FieldError(at, "FieldValueInvalid", f"Invalid value: {_shown_type(schema)}: {message}"))
            continue
        if _truth(result) is not False:
            continue
        errors.append(_error(rule, path, value, _message(rule, activation, schema, root, budget)))
    return errors


def _rule_text(rule: dict[str, Any]) -> str:
    """``ruleErrorString``: the rule's message, else the rule."""
    message = str(rule.get("message") or "").strip()
    return message or str(rule.get("rule") or "").strip()


def _message(
    rule: dict[str, Any], activation: dict[str, Any], schema: dict[str, Any], root: bool, budget: Budget
) -> str:
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression:
        out: Any = None
        try:
            program = compiled(expression)
            if budget.charge(program, _decl(schema, root), activation) is None:
                out = program.run(activation)
        except (RuleError, runtime.EvalError):
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


_HAS_RULES: dict[int, tuple[dict[str, Any], bool]] = {}


def has_rules(schema: dict[str, Any]) -> bool:
    """Whether any node of the schema carries ``x-kubernetes-validations`` (computed once)."""
    hit = _HAS_RULES.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    if len(_HAS_RULES) > 4096:
        _HAS_RULES.clear()
    found = _any_rules(schema)
    _HAS_RULES[id(schema)] = (schema, found)
    return found


def _any_rules(node: Any) -> bool:
    if isinstance(node, dict):
        return bool(node.get("x-kubernetes-validations")) or any(_any_rules(v) for v in node.values())
    if isinstance(node, list):
        return any(_any_rules(v) for v in node)
    return False


def validate(schema: dict[str, Any], obj: Any, old: Any = None, has_old: bool = False) -> list[FieldError]:
    """Every rule of the schema against the object (``old``: the stored one, on an update), the
    nodes walked as the schema declares them, within one ``RuntimeCELCostBudget``; an old value is
    followed through objects' fields (list items are not correlated, so transition rules below a
    list do not run)."""
    errors: list[FieldError] = []
    try:
        _walk(schema, obj, "", old, has_old, errors, Budget())
    except _Spent as spent:
        errors.extend(spent.args[0])
    return errors


def _walk(
    schema: dict[str, Any], value: Any, path: str, old: Any, has_old: bool, errors: list[FieldError], budget: Budget
) -> None:
    if value is None:
        return
    if schema.get("x-kubernetes-validations"):
        root = path == "" or bool(schema.get("x-kubernetes-embedded-resource"))
        errors.extend(check(schema, value, path, budget, old, has_old, root))
    if isinstance(value, dict):
        for key, item in value.items():
            if path == "" and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = field_schema(schema, key)
            if sub is not None:
                known = has_old and isinstance(old, dict) and key in old
                at = f"{path}.{key}" if path else key
                _walk(sub, item, at, old.get(key) if known else None, known, errors, budget)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(schema["items"], item, f"{path}[{i}]", None, False, errors, budget)
