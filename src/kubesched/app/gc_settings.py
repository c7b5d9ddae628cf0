"""Garbage-collector settings for kubesched's commands.

The scheduler keeps every node, pod and watch event alive for the whole run while each cycle
allocates many short-lived objects. With CPython's default thresholds (700, 10, 10) a large
simulation collects the young generation every few pods and, now and then, walks every
long-lived object in a full collection: about a tenth of SchedulingBasic's time at 5,000 nodes.
kubesched creates little cyclic garbage (reference counting frees nearly everything), so its
commands collect far less often, as long-running Python servers commonly do.
"""

from __future__ import annotations

import gc

# allocations between young-generation collections, and the generations' ratios above it
THRESHOLDS = (50_000, 20, 20)


def tune() -> None:
    """Apply ``THRESHOLDS`` to this process (the CLI does it before any command runs)."""
    gc.set_threshold(*THRESHOLDS)
