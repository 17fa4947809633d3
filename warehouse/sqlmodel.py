"""Deprecated: ``warehouse.sqlmodel`` is ``warehouse.sqltable`` (issue 27: "model" means an LLM, and
``models/`` its math; a ``sql/**.sql`` file is a ``SqlTable``). ``SqlModel`` and ``load_models``
are ``SqlTable`` and ``load_tables`` under their old names."""

import warnings

from warehouse.sqltable import *  # noqa: F403 - the old module's names
from warehouse.sqltable import SqlTable as SqlModel  # noqa: F401
from warehouse.sqltable import downstream, load_tables as load_models  # noqa: F401

warnings.warn("warehouse.sqlmodel is deprecated: import warehouse.sqltable (SqlModel is SqlTable, "
              "load_models is load_tables)", DeprecationWarning, stacklevel=2)
