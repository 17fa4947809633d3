"""Deprecated: ``thinktax.report`` is ``services.report`` (moved in issue 17); import that instead."""

import sys
import warnings

import services.report as _moved

warnings.warn("thinktax.report is deprecated: import services.report", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
