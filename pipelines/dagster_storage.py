"""Dagster's SQLite storage, with an event log that keeps its database connections open.

Dagster's own ``SqliteEventLogStorage`` opens a new SQLAlchemy engine and SQLite connection for
every transaction (``NullPool``), and re-reads the index database's schema (``PRAGMA
table_info``, the secondary-index table) for many reads and writes. A run of the ``thinktax``
job writes about 270 events (a materialisation, a planned event and a step output per table, a
check evaluation and its planned event per check), each one to two transactions: profiled on a
no-op ``thinktax run``, that was most of the run's wall time (docs/performance.md).

This storage is the same: the same files under ``$DAGSTER_HOME`` (``history/runs/<run>.db``, the
``index.db`` shard, ``runs.db``, ``schedules/``), the same tables, written by Dagster's own code;
the UI, the daemon and ``dagster`` CLI read them as before. It differs in three ways:

* one engine per database file, kept for the life of the process (the most recently used
  ``_ENGINES_KEPT`` run shards, plus the index shard), with one pooled connection each;
* ``PRAGMA synchronous = NORMAL`` on those connections: the event databases are in WAL mode
  (Dagster sets it), where NORMAL never corrupts the database and skips the fsync of every
  commit; a power cut can lose the last events of a run, never the warehouse (published by its
  own fsync'ed rename, warehouse/db.py);
* schema checks that came out true (a column, a table, a finished data migration) are
  remembered; a false one is asked again, so a ``dagster instance migrate`` run by another
  process is seen.

``thinktax/runner.py`` writes a ``dagster.yaml`` that names this class (``storage: custom``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sql import create_engine
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.sqlite_storage import (  # the classes Dagster's own SQLite storage uses
    DagsterSqliteStorage,
    SqliteRunStorage,
    SqliteScheduleStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

_ENGINES_KEPT = 8  # run shards whose connection stays open (the index shard is always kept)


def _set_pragmas(dbapi_con: Any, _record: Any) -> None:
    cur = dbapi_con.cursor()
    cur.execute("PRAGMA synchronous = NORMAL")
    cur.close()


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """SqliteEventLogStorage with one kept engine per shard (see the module docstring)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._true_checks: set[tuple[str, str]] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Any) -> PooledSqliteEventLogStorage:  # type: ignore[override]
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            engine = create_engine(
                self.conn_string_for_shard(shard),
                poolclass=QueuePool, pool_size=1, max_overflow=4,
                # one thread at a time uses a connection (the storage's _db_lock), not always the one that made it
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            sa_event.listen(engine, "connect", _set_pragmas)
            self._engines[shard] = engine
            while len(self._engines) > _ENGINES_KEPT + 1:
                old = next((k for k in self._engines if k != INDEX_SHARD_NAME), None)
                if old is None:
                    break
                self._engines.pop(old).dispose()
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Any]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                with conn.begin():
                    yield conn

    def dispose(self) -> None:
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
        super().dispose()

    def wipe(self) -> None:
        # the run shards' files are deleted: close their connections first
        with self._engines_lock:
            for shard in [k for k in self._engines if k != INDEX_SHARD_NAME]:
                self._engines.pop(shard).dispose()
        super().wipe()

    # -- schema checks: a true answer is remembered ------------------------------------------
    def _remember(self, kind: str, name: str, ask: Any) -> bool:
        if (kind, name) in self._true_checks:
            return True
        answer = bool(ask())
        if answer:
            self._true_checks.add((kind, name))
        return answer

    def has_table(self, table_name: str) -> bool:
        return self._remember("table", table_name, lambda: super(PooledSqliteEventLogStorage, self).has_table(table_name))

    def has_asset_key_col(self, column_name: str) -> bool:
        return self._remember("asset_key_col", column_name,
                              lambda: super(PooledSqliteEventLogStorage, self).has_asset_key_col(column_name))

    def _has_asset_key_col_on_connection(self, conn: Any, column_name: str) -> bool:
        return self._remember("asset_key_col", column_name,
                              lambda: super(PooledSqliteEventLogStorage, self)._has_asset_key_col_on_connection(conn, column_name))

    def has_secondary_index(self, name: str) -> bool:
        return self._remember("secondary_index", name,
                              lambda: super(PooledSqliteEventLogStorage, self).has_secondary_index(name))


class ThinktaxSqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage (runs, schedules, event log under one base_dir), with the
    pooled event log above. Configured in dagster.yaml as::

        storage:
          custom:
            module: pipelines.dagster_storage
            class: ThinktaxSqliteStorage
            config:
              base_dir: /path/to/dagster_home
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        # DagsterSqliteStorage.__init__ with the pooled event log (not one made and thrown away)
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> ThinktaxSqliteStorage:  # type: ignore[override]
        return cls.from_local(inst_data=inst_data, **config_value)
