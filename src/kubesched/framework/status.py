"""``Status`` and its codes (staging ``k8s.io/kube-scheduler/framework/interface.go``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return _CODE_NAMES[self]


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


def code_name(code: int) -> str:
    """``Code.String()`` of a code held as a plain int (a verdict column's entry). Modules compiled
    in another mypyc group call this rather than ``Code(code)``: mypyc 2.4 emits a native
    constructor call for an enum of another group, which does not link."""
    return _CODE_NAMES[Code(code)]


REJECTED = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)


@dataclass(init=False, slots=True)
class Status:
    """The result of running a plugin; ``None`` stands for Success wherever a Status is returned."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    def __init__(self, code: Code = Code.SUCCESS, reasons: tuple[str, ...] = (), plugin: str = "") -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.code = code
        self.reasons = reasons
        self.plugin = plugin

    @classmethod
    def of(cls, code: Code, *reasons: str) -> Status:
        return cls(code, tuple(reasons))

    @classmethod
    def error(cls, message: str) -> Status:
        return cls(Code.ERROR, (message,))

    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        return self.code in REJECTED


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS
