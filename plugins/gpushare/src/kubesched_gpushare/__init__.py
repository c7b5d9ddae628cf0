"""GPU sharing and the FGD paper's score policies as out-of-tree kubesched plugins.

``GpuShare`` (``gpushare.py``) allocates GPU devices and shares of them; the score policies
(``policies.py``) are those the ATC'23 paper "Beware of Fragmentation" compares: Random,
DotProduct, GpuClustering, GpuPacking, BestFit and FGD. ``state.py`` holds the per-node devices
they share.
"""

from kubesched_gpushare.gpushare import GpuShare
from kubesched_gpushare.policies import (
    BestFitScore,
    DotProductScore,
    FGDScore,
    GpuClusteringScore,
    GpuPackingScore,
    RandomScore,
)

__all__ = [
    "BestFitScore",
    "DotProductScore",
    "FGDScore",
    "GpuClusteringScore",
    "GpuPackingScore",
    "GpuShare",
    "RandomScore",
]
