"""Deprecated: ``warehouse.sqlmodel`` is ``warehouse.sqltable`` (issue 27: "model" means an LLM, and
``models/`` its economics; a ``sql/**.sql`` file is a ``SqlTable``). ``SqlModel`` and ``load_models``
still resolve, to ``SqlTable`` and ``load_tables``."""

import sys
import warnings

import warehouse.sqltable as _moved

warnings.warn("warehouse.sqlmodel is deprecated: import warehouse.sqltable (SqlModel is SqlTable, "
              "load_models is load_tables)", DeprecationWarning, stacklevel=2)
_moved.SqlModel = _moved.SqlTable  # type: ignore[attr-defined]
_moved.load_models = _moved.load_tables  # type: ignore[attr-defined]
sys.modules[__name__] = _moved  # the same module object under both names
