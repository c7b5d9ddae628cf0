"""Errors that reach the user as one line: what was wrong, in which file, object and field."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input (a manifest, a quantity, a configuration) with where it was found."""

    def __init__(
        self, message: str, *, file: str | None = None, obj: str | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.obj = obj
        self.field = field

    def located(self, *, file: str | None = None, obj: str | None = None) -> InputError:
        """Fill in the file/object when an outer layer knows them."""
        if self.file is None and file is not None:
            self.file = file
        if self.obj is None and obj is not None:
            self.obj = obj
        return self

    def __str__(self) -> str:
        where = [p for p in (self.file, self.obj) if p]
        prefix = ": ".join(where)
        field = f" field {self.field}:" if self.field else ""
        return f"{prefix}:{field} {self.message}" if prefix else f"{field.strip()} {self.message}".strip()
