"""Deprecated: ``thinktax.billing_api`` is ``services.billing_api`` (moved in issue 17); import that instead."""

import sys
import warnings

import services.billing_api as _moved

warnings.warn("thinktax.billing_api is deprecated: import services.billing_api", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
