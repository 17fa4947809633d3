"""Deprecated: ``thinktax.config`` is ``services.config`` (moved in issue 17); import that instead."""

import sys
import warnings

import services.config as _moved

warnings.warn("thinktax.config is deprecated: import services.config", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
