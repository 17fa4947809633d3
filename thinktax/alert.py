"""Deprecated: ``thinktax.alert`` is ``services.alert`` (moved in issue 17); import that instead."""

import sys
import warnings

import services.alert as _moved

warnings.warn("thinktax.alert is deprecated: import services.alert", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
