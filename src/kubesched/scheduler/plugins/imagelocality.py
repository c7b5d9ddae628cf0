"""ImageLocality (Score): favour nodes that already hold the pod's images, scaled by how widely
each image is spread (``imagelocality/image_locality.go``): sum of size·(nodes with it / all
nodes), clamped to [23Mi, 1000Mi·images] and mapped to [0, 100]. The images are the containers'
and, since image volumes went GA (v1.35), each image volume's reference (SignPod still names the
containers' alone, as upstream's)."""

from __future__ import annotations

import numpy as np

from kubesched.api.pod import PodInfo, normalized_image_name
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import MAX_NODE_SCORE, ScorePlugin, SignFragment, SignPlugin
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Status

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class ImageLocality(ScorePlugin, SignPlugin):
    name = "ImageLocality"

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the normalized image names, sorted."""
        return [SignFragment("Images", tuple(sorted(pod.images)))], None

    scores_bounded = True
    rows_only = True

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        total_nodes = nodes.cluster_size
        sums: np.ndarray | None = None
        volume_images = image_volumes(pod)
        for image in (*pod.images, *volume_images):
            found = nodes.image_sizes(image)
            if found is None:
                continue
            sizes, count = found
            part = (sizes[rows] * (count / total_nodes)).astype(np.int64)
            sums = part if sums is None else sums + part
        if sums is None:  # no node holds any of the images: every score clamps to 0
            return np.zeros(len(rows), np.int64)
        max_threshold = MAX_CONTAINER_THRESHOLD * max(pod.n_containers + len(volume_images), 1)
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def image_volumes(pod: PodInfo) -> tuple[str, ...]:
    """The normalized references of the pod's image volumes (``volumes[].image``)."""
    volumes = (pod.obj.get("spec") or {}).get("volumes")
    if not volumes:
        return ()
    return tuple(
        normalized_image_name(str((v["image"] or {}).get("reference") or ""))
        for v in volumes
        if isinstance(v, dict) and v.get("image") is not None
    )
