"""``FitError`` (``framework/types.go``): the message users see when no node fit."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kubesched.api.pod import PodInfo
from kubesched.framework.diagnosis import Diagnosis

NO_NODE_AVAILABLE = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def reasons_histogram(counts: Counter[str]) -> str:
    """``sortReasonsHistogram``: "<count> <reason>" entries, sorted as strings, comma-joined."""
    return ", ".join(sorted(f"{v} {k}" for k, v in counts.items()))


@dataclass(slots=True)
class FitError:
    """No node fit the pod (a value ``schedulePod`` returns, as upstream's error value);
    ``str()`` is upstream's FailedScheduling message."""

    pod: PodInfo
    num_all_nodes: int
    diagnosis: Diagnosis

    def __str__(self) -> str:
        msg = NO_NODE_AVAILABLE.format(self.num_all_nodes) + ":"
        if self.diagnosis.pre_filter_msg:
            msg += f" {self.diagnosis.pre_filter_msg}."
        else:
            histogram = reasons_histogram(self.diagnosis.reason_counts())
            if histogram:
                msg += f" {histogram}."
        # the PostFilter message is appended as it is: it already ends in a period (upstream since
        # v1.28, k/k#117588, ``framework/types.go`` FitError.Error)
        if self.diagnosis.post_filter_msg:
            msg += f" {self.diagnosis.post_filter_msg}"
        return msg
