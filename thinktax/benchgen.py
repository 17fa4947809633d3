"""Deprecated: ``thinktax.benchgen`` is ``synthetic.benchgen`` (moved in issue 27); import that instead."""

import sys
import warnings

import synthetic.benchgen as _moved

warnings.warn("thinktax.benchgen is deprecated: import synthetic.benchgen", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
