"""Deprecated: the GPU-sharing model moved to ``kubesched.gpus.sharing`` (it is no part of the
scheduler framework); this name stays for one release, with a DeprecationWarning."""

from __future__ import annotations

import warnings

from kubesched.gpus.sharing import *  # noqa: F403

warnings.warn(
    "kubesched.framework.gpushare is deprecated: import kubesched.gpus.sharing",
    DeprecationWarning,
    stacklevel=2,
)
