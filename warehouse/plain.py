"""Counts an engine hands the orchestrator are plain Python ``int`` (issue 46).

Dagster's metadata (``dagster/row_count``, a check's ``offending_rows``, the ingest totals)
accepts ``int``, not numpy's integers, and raises ``DagsterInvalidMetadata`` on one. An engine's
client library can return either: pyspark 3.5's Spark Connect ``DataFrame.count()`` is
``self.agg(count(lit(1))).toPandas().iloc[0, 0]``, a ``numpy.int64``
(pyspark/sql/connect/dataframe.py), while a classic session's is an ``int``. So the types the
engines return (``Rebuilt``, ``FileResult``, a check's count: ``checked``) convert at construction, for every
engine, and the orchestrator never sees which library counted.
"""

from __future__ import annotations

import operator
from typing import SupportsIndex


def plain_int(value: object, what: str) -> int:
    """``value`` as a Python ``int`` (any integer type: ``int``, ``numpy.int64``, ...); a value
    that is no integer (a float, a string, None) raises TypeError naming ``what``."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected an integer count, got a bool ({value!r})")
    try:
        if not isinstance(value, SupportsIndex):  # float, str, None: no __index__
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: expected an integer count, got {type(value).__name__} {value!r}") from None


def checked(check_name: str, bad: object, sample: list[dict[str, object]]) -> tuple[int, list[dict[str, object]]]:
    """What ``Engine.check`` returns: the offending rows' count as a Python int, and the sample."""
    return plain_int(bad, f"check {check_name}: offending rows"), sample
