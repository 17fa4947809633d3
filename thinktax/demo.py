"""Deprecated: ``thinktax.demo`` is ``synthetic.demo`` (moved in issue 27); import that instead."""

import sys
import warnings

import synthetic.demo as _moved

warnings.warn("thinktax.demo is deprecated: import synthetic.demo", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
