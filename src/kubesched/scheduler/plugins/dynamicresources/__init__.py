"""DynamicResources (``pkg/scheduler/framework/plugins/dynamicresources``): ResourceClaims."""

from kubesched.scheduler.plugins.dynamicresources.plugin import DynamicResources

__all__ = ["DynamicResources"]
