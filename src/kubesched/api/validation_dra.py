"""The validation of DRA's device selectors (``pkg/apis/resource/validation``, ``validateSelector``):
every selector has a CEL expression, of at most ``CELSelectorExpressionMaxLength`` bytes and
``CELSelectorExpressionMaxCost`` estimated cost, in a
DeviceClass, a ResourceClaim and a ResourceClaimTemplate. A claim is a tenant's object the scheduler
compiles and evaluates for every device it looks at: the bound keeps one claim from holding it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kubesched.errors import InputError, go_quote

# resource.CELSelectorExpressionMaxLength (pkg/apis/resource/types.go): bytes, as Go's len()
SELECTOR_MAX_LENGTH = 10 * 1024
SELECTOR_MAX_COST = 1_000_000  # resource.CELSelectorExpressionMaxCost


def _selectors(selectors: Any, path: str) -> Iterator[tuple[str, Any]]:
    for i, selector in enumerate(selectors if isinstance(selectors, list) else []):
        yield f"{path}[{i}]", selector


def _claim_selectors(spec: Any, path: str) -> Iterator[tuple[str, Any]]:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for i, request in enumerate(requests if isinstance(requests, list) else []):
        if not isinstance(request, dict):
            continue
        at = f"{path}.devices.requests[{i}]"
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            yield from _selectors(exactly.get("selectors"), f"{at}.exactly.selectors")
        for k, sub in enumerate(request.get("firstAvailable") or []):
            if isinstance(sub, dict):
                yield from _selectors(sub.get("selectors"), f"{at}.firstAvailable[{k}].selectors")


def device_selectors(kind: str, obj: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Each device selector of a DRA object, with its field path."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "DeviceClass":
        yield from _selectors(spec.get("selectors"), "spec.selectors")
    elif kind == "ResourceClaim":
        yield from _claim_selectors(spec, "spec")
    elif kind == "ResourceClaimTemplate":
        yield from _claim_selectors(spec.get("spec"), "spec.spec")


def validate_device_selectors(
    kind: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    cost: Callable[[str], int | None] | None = None,
    compile_problem: Callable[[str], str | None] | None = None,
) -> None:
    """Raise InputError naming each selector without a CEL expression or with one too long. On an
    update, an expression the stored object holds already is not checked again (``opts.stored``:
    it was valid when stored; a claim's status write never fails for its selectors). ``cost``: a
    selector's estimated cost (cel-go's model over DRA's declared ``device``), refused past
    ``CELSelectorExpressionMaxCost``; ``compile_problem``: why cel-go's checker refuses one, which
    is then not costed (``validateCELSelector``)."""
    stored = {
        str((sel.get("cel") or {}).get("expression"))
        for _, sel in device_selectors(kind, old or {})
        if isinstance(sel, dict)
    }
    causes = []
    for path, selector in device_selectors(kind, obj):
        cel = selector.get("cel") if isinstance(selector, dict) else None
        if not isinstance(cel, dict):
            causes.append((f"{path}.cel", "Required value"))
            continue
        expression = cel.get("expression")
        if not isinstance(expression, str) or expression in stored:
            continue
        if len(expression.encode()) > SELECTOR_MAX_LENGTH:
            causes.append((f"{path}.cel.expression", f"Too long: may not be more than {SELECTOR_MAX_LENGTH} bytes"))
            continue  # too long to compile
        refused = compile_problem(expression) if compile_problem is not None else None
        if refused is not None:
            causes.append((f"{path}.cel.expression", f"Invalid value: {go_quote(expression)}: {refused}"))
            continue
        estimate = cost(expression) if cost is not None else None
        if estimate is not None and estimate > SELECTOR_MAX_COST:
            causes.append((f"{path}.cel.expression", "Forbidden: too complex, exceeds cost limit"))
    if len(causes) == 1:
        field, message = causes[0]
        raise InputError(message, field=field)
    if causes:  # an aggregate, listed as field.ErrorList's ToAggregate writes it
        listed = "[" + ", ".join(f"{f}: {m}" for f, m in causes) + "]"
        raise InputError(listed, field=causes[0][0], causes=causes)
