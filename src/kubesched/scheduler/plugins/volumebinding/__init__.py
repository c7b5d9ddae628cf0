"""VolumeBinding: the plugin, its volume binder and the PV/PVC assume caches."""

from kubesched.scheduler.plugins.volumebinding.plugin import VolumeBinding

__all__ = ["VolumeBinding"]
