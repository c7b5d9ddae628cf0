"""API errors with the Kubernetes status reasons and HTTP codes (apimachinery ``StatusError``)."""

from __future__ import annotations


class ApiError(Exception):
    code = 500
    reason = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason = "Conflict"


class Forbidden(ApiError):
    code = 403
    reason = "Forbidden"


class Invalid(ApiError):
    code = 422
    reason = "Invalid"


class TooManyRequests(ApiError):
    code = 429
    reason = "TooManyRequests"
