"""The node search (``findNodesThatFitPod``): one seam, ``NodeSearch``, answering with one
``SearchOutcome`` (``outcome.py``). ``search.py`` chooses the way, in one place, and tries the
batch's hinted node; the ways are rooms of their own: fresh column verdicts and upstream's
rotation over them (``columns.py``), the shape cache's stored verdicts (``shapes.py``), and the
nominated pods' second pass (``nominated.py``). The filter extenders are ``scheduler/extender.py``'s."""

from kubesched.scheduler.nodesearch.outcome import AttemptReport, SearchOutcome, num_feasible_nodes_to_find
from kubesched.scheduler.nodesearch.search import NodeSearch

__all__ = ["AttemptReport", "NodeSearch", "SearchOutcome", "num_feasible_nodes_to_find"]
