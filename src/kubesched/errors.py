"""Errors that reach the user as one line: what was wrong, in which file, object and field."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """Control characters (a newline in a name) escaped, so a message stays one line."""
    return _CONTROL.sub(
        lambda m: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(m.group(), f"\\u{ord(m.group()):04x}"), text
    )


# the escapes Go's strconv.Quote writes by name (CEL's strings.quote writes the same ones)
GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
GO_ESCAPES.update({"\\": "\\\\", '"': '\\"'})


def go_quote(value: object) -> str:
    """A value as Go's ``%q`` prints it (``strconv.Quote``), in field errors and CEL's formatting:
    double-quoted, printable characters as they are, the others escaped (so it stays one line)."""
    out = ['"']
    for ch in str(value):
        o = ord(ch)
        if ch in GO_ESCAPES:
            out.append(GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif o < 0x80:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


class InputError(Exception):
    """Bad user input (a manifest, a quantity, a configuration) with where it was found."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        obj: str | None = None,
        field: str | None = None,
        causes: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.obj = obj
        self.field = field
        self.causes = causes or []  # several field errors at once: (field, message) each

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
        text = f"{prefix}:{field} {self.message}" if prefix else f"{field.strip()} {self.message}".strip()
        return one_line(text)
