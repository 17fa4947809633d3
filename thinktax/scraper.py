"""Deprecated: ``thinktax.scraper`` is ``services.scraper`` (moved in issue 17); import that instead."""

import sys
import warnings

import services.scraper as _moved

warnings.warn("thinktax.scraper is deprecated: import services.scraper", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object under both names
