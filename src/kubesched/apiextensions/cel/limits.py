"""The CEL cost limits of ``apiserver/pkg/apis/cel/config.go`` and
``apiextensions/validation/validation.go``, and cel-go's unit costs (``common/cost.go``)."""

from __future__ import annotations

MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
PER_EXPRESSION_LIMIT = 10_000_000  # StaticEstimatedCostLimit
PER_CALL_LIMIT = 1_000_000  # PerCallLimit: one evaluation of one rule
RUNTIME_BUDGET = 10_000_000  # RuntimeCELCostBudget: every rule of one object
CRD_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit
MAX_UINT64 = 2**64 - 1
# cel-go common/cost.go
STRING_TRAVERSAL = 0.1
REGEX_LENGTH = 0.25
LIST_CREATE, MAP_CREATE, STRUCT_CREATE = 10, 30, 40
# apiserver/pkg/cel/limits.go
MIN_STRING, MIN_BOOL, MIN_NUMBER = 2, 4, 1
MIN_DURATION_JSON, MAX_DURATION_JSON, JSON_DATE, MIN_DATETIME_JSON, MAX_DATETIME_JSON = 3, 32, 12, 21, 32
