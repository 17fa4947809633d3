"""Deprecated: ``thinktax.progress`` is ``pipelines.progress`` (moved in issue 17); import that instead."""

import sys
import warnings

import pipelines.progress as _moved

warnings.warn("thinktax.progress is deprecated: import pipelines.progress", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
