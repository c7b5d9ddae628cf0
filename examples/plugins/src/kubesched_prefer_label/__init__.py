"""Two out-of-tree kubesched plugins, installed as a package and enabled by name in a profile.

``PreferNodeLabel`` (Score, columnar): nodes whose label ``key`` has one of ``values`` (any value
when the list is empty) score ``score``, the others 0; one vectorized pass over the candidate rows.

``AvoidNodeLabel`` (Filter, per node in upstream's shape): nodes labelled ``key=value`` are
UnschedulableAndUnresolvable ("node(s) had label <key>=<value>").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubesched.framework import (
    Code,
    CycleState,
    InputError,
    NodeInfo,
    NodeTableView,
    PerNodeFilterPlugin,
    PodInfo,
    ScorePlugin,
    Status,
)


@dataclass
class PreferArgs:
    """pluginConfig args of PreferNodeLabel: ``key`` (required), ``values``, ``score`` (0..100)."""

    key: str
    values: list[str] = field(default_factory=list)
    score: int = 100

    def validate(self) -> None:
        if not self.key:
            raise InputError("Required value: a label key", field="key")
        if not 0 <= self.score <= 100:
            raise InputError(f"Invalid value: {self.score}: must be in the range [0, 100]", field="score")


class PreferNodeLabel(ScorePlugin):
    name = "PreferNodeLabel"
    Args = PreferArgs
    args: PreferArgs

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        codes = nodes.label_codes(self.args.key)
        if codes is None:  # no node has the label
            return np.zeros(len(rows), np.int64)
        known = nodes.label_values(self.args.key)
        if self.args.values:
            wanted = [known[v] for v in self.args.values if v in known]
            hit = np.isin(codes[rows], wanted)
        else:
            hit = codes[rows] >= 0
        return np.where(hit, self.args.score, 0).astype(np.int64)


@dataclass
class AvoidArgs:
    key: str
    value: str


class AvoidNodeLabel(PerNodeFilterPlugin):
    name = "AvoidNodeLabel"
    Args = AvoidArgs
    args: AvoidArgs

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if node_info.labels.get(self.args.key) == self.args.value:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) had label {self.args.key}={self.args.value}",)
            )
        return None
