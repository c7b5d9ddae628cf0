"""Giving memory back to the system after a burst (a large watch or list just ended): glibc keeps
freed heap pages for reuse, so a server that once buffered hundreds of megabytes would hold them
for good; ``malloc_trim`` returns the free ones. A no-op where the C library has no such call."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import Callable

TRIM_DELAY = 1.0  # seconds: one trim after a burst of closes, not one per close


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()
_pending: set[asyncio.AbstractEventLoop] = set()


def release_soon() -> None:
    """Trim the heap once, TRIM_DELAY seconds from now (later calls meanwhile share it)."""
    if _TRIM is None:
        return
    loop = asyncio.get_running_loop()
    if loop in _pending:
        return
    _pending.add(loop)

    def trim() -> None:
        _pending.discard(loop)
        if _TRIM is not None:
            _TRIM(0)

    loop.call_later(TRIM_DELAY, trim)
