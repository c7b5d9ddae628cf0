"""Garbage-collector settings for kubesched's commands.

The scheduler keeps every node, pod and watch event alive for the whole run while each cycle
allocates many short-lived objects. With CPython's default thresholds (700, 10, 10) a large
simulation collects the young generation every few pods and, now and then, walks every
long-lived object in a full collection: about a tenth of SchedulingBasic's time at 5,000 nodes.
kubesched creates little cyclic garbage (reference counting frees nearly everything), so its
commands collect less often, as long-running Python servers commonly do. Not much less: what is
cyclic (an HTTP client's requests and responses, for extenders) waits for the next young
collection, so a larger threshold holds more of it (SchedulingBasicWithExtender's peak RSS is
94 MiB with the defaults, 149 MiB with these thresholds, 229 MiB with 50,000).
"""

from __future__ import annotations

import gc

# allocations between young-generation collections, and the generations' ratios above it
THRESHOLDS = (20_000, 10, 10)


def tune() -> None:
    """Apply ``THRESHOLDS`` to this process (the CLI does it before any command runs)."""
    gc.set_threshold(*THRESHOLDS)


def freeze() -> None:
    """Move every object alive now out of the collector's reach for good (``gc.freeze``), once a
    long-running command holds its start-up state (the informers' objects, the node tables): the
    collections that follow walk only what is allocated afterwards. Objects frozen and freed later
    are still freed (reference counting); only a frozen cycle stays."""
    gc.collect()
    gc.freeze()
