"""A bare per-node Python port of upstream's scheduling loop, the yardstick issue 16 measures
kubesched against: for each pod, nodes are visited one by one from where the last search
stopped (``findNodesThatPassFilters``) until the adaptive number of feasible nodes is found
(``numFeasibleNodesToFind``: 10 % of 5,000 nodes), each checked by NodeResourcesFit's Filter
(pod count, cpu, memory); the feasible ones are scored by NodeResourcesFit's LeastAllocated and
NodeResourcesBalancedAllocation (weight 1 each) and the best is taken, its requests then added
to the node. No framework, no queue, no API objects: the least a Python scheduler must do per
pod, written as directly as upstream's Go.

    python benchmarks/bare_port.py --nodes 5000 --pods 10000 --init-pods 1000

Used by ``scheduler_perf.py SchedulingBasic``, which runs it in the same process and prints
the ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass

MAX_NODE_SCORE = 100
MIN_FEASIBLE = 100
DEFAULT_PERCENTAGE = 50


@dataclass(slots=True)
class Node:
    alloc_cpu: int  # millicores
    alloc_mem: int  # bytes
    alloc_pods: int
    cpu: int = 0
    mem: int = 0
    nonzero_cpu: int = 0
    nonzero_mem: int = 0
    pods: int = 0


def num_feasible_nodes_to_find(n: int) -> int:
    """``numFeasibleNodesToFind`` with the adaptive percentage (percentageOfNodesToScore unset)."""
    if n < MIN_FEASIBLE:
        return n
    pct = max(DEFAULT_PERCENTAGE - n // 125, 5)
    return max(n * pct // 100, MIN_FEASIBLE)


def least_allocated(node: Node, cpu: int, mem: int) -> int:
    """``leastResourceScorer`` over cpu and memory (weights 1), non-zero requests."""
    total = 0
    for requested, alloc in ((node.nonzero_cpu + cpu, node.alloc_cpu), (node.nonzero_mem + mem, node.alloc_mem)):
        total += 0 if requested > alloc or alloc == 0 else (alloc - requested) * MAX_NODE_SCORE // alloc
    return total // 2


def balanced(node: Node, cpu: int, mem: int) -> int:
    """``balancedResourceScorer``: 100 × (1 − the standard deviation of the two fractions)."""
    f1 = min((node.cpu + cpu) / node.alloc_cpu, 1.0)
    f2 = min((node.mem + mem) / node.alloc_mem, 1.0)
    mean = (f1 + f2) / 2
    std = math.sqrt(((f1 - mean) ** 2 + (f2 - mean) ** 2) / 2)
    return int((1 - std) * MAX_NODE_SCORE)


class BarePort:
    def __init__(self, nodes: int) -> None:
        self.nodes = [Node(4000, 32 * 2**30, 110) for _ in range(nodes)]
        self.next_start = 0
        self.want = num_feasible_nodes_to_find(nodes)

    def schedule(self, cpu: int, mem: int) -> int | None:
        """One pod's cycle; returns the node index, or None when no node fits."""
        nodes, n = self.nodes, len(self.nodes)
        feasible: list[int] = []
        processed = 0
        for k in range(n):
            i = (self.next_start + k) % n
            processed += 1
            node = nodes[i]
            if node.pods + 1 > node.alloc_pods or node.cpu + cpu > node.alloc_cpu or node.mem + mem > node.alloc_mem:
                continue
            feasible.append(i)
            if len(feasible) >= self.want:
                break
        self.next_start = (self.next_start + processed) % n
        if not feasible:
            return None
        best, best_score = -1, -1
        for i in feasible:
            node = nodes[i]
            score = least_allocated(node, cpu, mem) + balanced(node, cpu, mem)
            if score > best_score:
                best, best_score = i, score
        node = nodes[best]
        node.cpu += cpu
        node.mem += mem
        node.nonzero_cpu += cpu
        node.nonzero_mem += mem
        node.pods += 1
        return best


def run(nodes: int, pods: int, init_pods: int) -> dict[str, float]:
    """SchedulingBasic's shape: 100m / 500Mi pods; ``init_pods`` unmeasured, then ``pods`` timed."""
    port = BarePort(nodes)
    cpu, mem = 100, 500 * 2**20
    for _ in range(init_pods):
        port.schedule(cpu, mem)
    started = time.perf_counter()
    placed = sum(1 for _ in range(pods) if port.schedule(cpu, mem) is not None)
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 3), "pods_per_second": round(placed / seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--init-pods", type=int, default=1000)
    args = ap.parse_args()
    print(
        json.dumps(
            {"workload": "SchedulingBasic/bare-port", "nodes": args.nodes, **run(args.nodes, args.pods, args.init_pods)}
        )
    )


if __name__ == "__main__":
    main()
