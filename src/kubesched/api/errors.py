"""API errors with the Kubernetes status reasons and HTTP codes (apimachinery ``StatusError``).

Each carries what ``metav1.Status`` reports: the HTTP code, the ``reason``, the message and the
optional ``details`` (name, group, kind as the plural resource, causes).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.warnings: list[str] = []  # sent as Warning headers with the Status (the request's own)

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body of this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None and (self.details or isinstance(self, Invalid)):
            body["details"] = self.details  # an Invalid's empty details are written, as upstream's
        return body


class BadRequest(ApiError):
    code = 400
    reason = "BadRequest"


class Unauthorized(ApiError):
    code = 401
    reason = "Unauthorized"


class Forbidden(ApiError):
    code = 403
    reason = "Forbidden"


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class MethodNotAllowed(ApiError):
    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(ApiError):
    code = 406
    reason = "NotAcceptable"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason = "Conflict"


class Expired(ApiError):
    code = 410
    reason = "Expired"


class RequestEntityTooLarge(ApiError):
    code = 413
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    code = 415
    reason = "UnsupportedMediaType"


class Invalid(ApiError):
    code = 422
    reason = "Invalid"


class TooManyRequests(ApiError):
    code = 429
    reason = "TooManyRequests"
