"""The node search (``findNodesThatFitPod``): one seam, ``NodeSearch``, answering with one
``SearchOutcome`` (``outcome.py``). ``search.py`` runs PreFilter, tries the batch's hinted
node, then asks its ways of searching (``way.py``), chosen in one place, in order: the shape
cache's stored verdicts (``shapes.py``), which answer only for the pods they can and then score
and report from what they stored, and fresh column verdicts with upstream's rotation over them
(``columns.py``), which answer for every pod; the nominated pods' second pass is
``nominated.py``'s. The filter extenders are ``scheduler/extender.py``'s."""

from kubesched.scheduler.nodesearch.outcome import AttemptReport, SearchOutcome, num_feasible_nodes_to_find
from kubesched.scheduler.nodesearch.search import NodeSearch

__all__ = ["AttemptReport", "NodeSearch", "SearchOutcome", "num_feasible_nodes_to_find"]
