"""The node search (``findNodesThatFitPod``): one seam, ``NodeSearch``, answering with one
``SearchOutcome``; the ways of searching (fresh column verdicts, the shape cache, the batch's
hinted node, the nominated pods' second pass, the filter extenders) are its modules."""

from kubesched.scheduler.nodesearch.outcome import AttemptReport, SearchOutcome, num_feasible_nodes_to_find
from kubesched.scheduler.nodesearch.search import NodeSearch

__all__ = ["AttemptReport", "NodeSearch", "SearchOutcome", "num_feasible_nodes_to_find"]
