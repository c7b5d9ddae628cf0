"""The FGD paper simulator's tie-break among equally scored nodes.

Its ``syncClusterResourceList`` (``pkg/simulator/simulator.go`` of hkust-adsl/kubernetes-scheduler-simulator)
sorts the nodes by name and renames each with a four-digit prefix from ``rand.Perm`` — the process-wide
``math/rand`` stream, seeded with the workload seed in ``core.go`` and drawn from after the workload's
shuffle and tuning draws — and its fork's ``selectHost`` then keeps the smallest name among the best
scores. So equal nodes are ordered by a seeded random permutation, the same for every policy within a
seed. kubesched draws the same permutation (Go's ``Perm`` algorithm) from the replay's seeded stream,
after ``tune``, and compares the prefixed names; Go's own stream cannot be replayed in Python, so a
seed's permutation differs from the simulator's, as its workload does.
"""

from __future__ import annotations

import random


def go_perm(rng: random.Random, n: int) -> list[int]:
    """``rand.Perm(n)``: the inside-out Fisher–Yates shuffle of 0..n-1, one draw per element."""
    m = [0] * n
    for i in range(n):
        j = rng.randrange(i + 1)
        m[i] = m[j]
        m[j] = i
    return m


def paper_names(names: list[str], rng: random.Random) -> dict[str, str]:
    """Each node's name as the paper's simulator renames it: the nodes in name order, the i-th
    prefixed with ``%04d-`` of the permutation's i-th value."""
    ordered = sorted(names)
    perm = go_perm(rng, len(ordered))
    return {name: f"{perm[i]:04d}-{name}" for i, name in enumerate(ordered)}
