"""Scheduler configurations for replay: kube-scheduler's default profile and the FGD paper's policies.

The paper (and its simulator's ``scripts/generate_config_and_run.py``) runs each policy as the only
Score plugin of the profile, scoring every node (``percentageOfNodesToScore: 100``), with the
default filters and GPU sharing (``GpuShare``) picking devices the way the policy's experiment did:
FGD by fragmentation, Random at random, the others best fit. ``default`` is kube-scheduler v1.36's
default profile with GpuShare added for the devices.
"""

from __future__ import annotations

from typing import Any

from kubesched.errors import InputError
from kubesched.gpus.sharing import TypicalPod
from kubesched.scheduler.config import API_VERSION, KIND

# policy → (score plugin, GpuShare's gpuSelection); the paper's six, in its order
POLICIES: dict[str, tuple[str, str]] = {
    "Random": ("RandomScore", "Random"),
    "DotProduct": ("DotProductScore", "BestFit"),
    "GpuClustering": ("GpuClusteringScore", "BestFit"),
    "GpuPacking": ("GpuPackingScore", "BestFit"),
    "BestFit": ("BestFitScore", "BestFit"),
    "FGD": ("FGDScore", "FGD"),
}
DEFAULT_POLICY = "default"
PAPER_POLICIES = tuple(POLICIES)
ALL_POLICIES = (DEFAULT_POLICY, *POLICIES)


def typical_pods_arg(typical: list[TypicalPod]) -> list[dict[str, Any]]:
    return [
        {
            "cpuMilli": t.request.cpu_milli,
            "gpuMilli": t.request.gpu_milli,
            "gpuCount": t.request.gpu_count,
            "gpuModel": t.request.gpu_model,
            "weight": t.weight,
        }
        for t in typical
    ]


def policy_config(policy: str, typical: list[TypicalPod]) -> dict[str, Any]:
    """The KubeSchedulerConfiguration (as a document) that runs ``policy``."""
    if policy == DEFAULT_POLICY:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "profiles": [
                {"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": "GpuShare"}]}}}
            ],
        }
    if policy not in POLICIES:
        raise InputError(f'unknown policy "{policy}"; choose one of {", ".join(ALL_POLICIES)}', field="--policy")
    score, selection = POLICIES[policy]
    plugin_config: list[dict[str, Any]] = [{"name": "GpuShare", "args": {"gpuSelection": selection}}]
    if score == "FGDScore":
        plugin_config.append({"name": "FGDScore", "args": {"typicalPods": typical_pods_arg(typical)}})
    plugins: dict[str, Any] = {
        "multiPoint": {"enabled": [{"name": "GpuShare"}]},
        "score": {"disabled": [{"name": "*"}], "enabled": [{"name": score, "weight": 1}]},
    }
    if score == "RandomScore":
        plugins["preScore"] = {"disabled": [{"name": "*"}], "enabled": [{"name": score}]}
    else:
        plugins["preScore"] = {"disabled": [{"name": "*"}]}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": plugin_config}],
    }
