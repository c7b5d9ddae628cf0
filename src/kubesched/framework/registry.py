"""The plugin registry: name → factory, duplicate names refused (``framework/runtime/registry.go``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.framework.interface import Plugin

PluginFactory = Callable[[Any, Any], Plugin]

# installed plugin packages declare their plugins as entry points of this group:
# [project.entry-points."kubesched.plugins"] Name = "module:PluginClass"
ENTRY_POINT_GROUP = "kubesched.plugins"


class Registry(dict[str, type[Plugin] | PluginFactory]):
    """Plugin factories by name; ``register`` refuses a name already present."""

    def register(self, name: str, factory: type[Plugin] | PluginFactory) -> None:
        if name in self:
            raise ValueError(f"a plugin named {name} already exists")
        self[name] = factory

    def merge(self, other: Registry) -> None:
        for name, factory in other.items():
            self.register(name, factory)
