"""Shared fixtures: a small hand-made landing folder whose costs are worked out by hand in
tests/sql/test_costs_hand_worked.py, and helpers to run the pipeline on a temporary warehouse."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from services.config import Config
from warehouse.db import Build
from warehouse.ingest import Ingestor, IngestSummary
from warehouse.transform import build_all

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "data" / "real"
# every Spark session of the tests (local, the Connect server, a `thinktax run` subprocess) reads its
# defaults from tests/spark-conf/spark-defaults.conf: whole-stage codegen off for the small landings
# (docs/operations.md, "Small landings"); a caller's own SPARK_CONF_DIR is kept
os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "tests" / "spark-conf"))
NOW = dt.datetime(2026, 8, 1)

MINI_FILES = {
    "prices/llm/prices.2026-01-01.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,cache_write_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2.50,0.625,,12,USD\n"
        "anthropic,claude-x,3,0.30,3.75,15,USD\n"
    ),
    "prices/llm/prices.2026-07-01.csv": (
        "provider,model,input_usd_per_mtok,cached_input_usd_per_mtok,output_usd_per_mtok,currency\n"
        "openai,o3,2,0.5,8,USD\n"
    ),
    "catalog/nodes.csv": (
        "node_id,provider,gpu_type,gpus,model,precision,usd_per_gpu_hour,active_from,active_to\n"
        "n1,nebius,H100,2,qwen3-32b,fp8,2.95,2026-06-30T00:00:00Z,2026-07-01T00:00:00Z\n"
    ),
    "telemetry/requests/calls.jsonl": "\n".join([
        # r1: OpenAI chat, 8000 prompt of which 2000 cached, 15500 completion of which 15000 reasoning
        '{"ts":"2026-06-30T10:00:00Z","request_id":"r1","model":"o3","provider":"openai","task_id":"t1","team":"search","task_type":"qa",'
        '"usage":{"prompt_tokens":8000,"completion_tokens":15500,"prompt_tokens_details":{"cached_tokens":2000},"completion_tokens_details":{"reasoning_tokens":15000}}}',
        # r2: dated model name, after the 2026-07-01 price change
        '{"ts":"2026-07-01T09:00:00Z","request_id":"r2","model":"o3-2025-04-16","provider":"openai","task_id":"t2","team":"search","task_type":"qa",'
        '"usage":{"prompt_tokens":1000,"completion_tokens":100}}',
        # r3: Anthropic shape, epoch seconds (2026-06-30T11:00:00Z), team in metadata
        '{"ts":1782817200,"request_id":"r3","model":"claude-x","provider":"anthropic","metadata":{"team":"ops","task_type":"review","task_id":"t3"},'
        '"usage":{"input_tokens":1000,"cache_read_input_tokens":4000,"cache_creation_input_tokens":2000,"output_tokens":3000,"thinking_tokens":2500}}',
        # r4, r5: self-hosted on n1 in the 10:00 hour
        '{"ts":"2026-06-30T10:30:00Z","request_id":"r4","model":"qwen3-32b","node_id":"n1","task_id":"t1",'
        '"usage":{"prompt_tokens":1000,"completion_tokens":3000,"completion_tokens_details":{"reasoning_tokens":2000}}}',
        '{"ts":"2026-06-30T10:40:00Z","request_id":"r5","model":"qwen3-32b","node_id":"n1","task_id":"t4","team":"ops","task_type":"review",'
        '"usage":{"prompt_tokens":500,"completion_tokens":500}}',
    ]) + "\n",
}


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    return root


@pytest.fixture
def mini_landing(tmp_path: Path) -> Path:
    return write_files(tmp_path / "landing", MINI_FILES)


def build_warehouse(landing: Path, warehouse: Path, config: Config | None = None,
                    build_id: str = "t") -> tuple[duckdb.DuckDBPyConnection, IngestSummary]:
    """Ingest + rebuild into a build file (no Dagster); returns an open connection to it."""
    b = Build(warehouse, build_id)
    b.start((config or Config()).settings_row())
    con = b.connect()
    summary = Ingestor(con, landing, now=NOW).ingest()
    build_all(con)
    return con, summary


REAL_SHEET = Path(__file__).resolve().parents[1] / "data" / "real" / "litellm" / "model_prices_and_context_window.2026-07-24.json"


def real_sheet_landing(root: Path, requests: dict[str, list[dict]], sheet: Path = REAL_SHEET) -> Path:
    """A landing folder under ``root`` with the real LiteLLM sheet of 2026-07-24 in prices/llm/ and each
    ``requests`` file (name -> its JSON records, a line each) in telemetry/requests/; returns it."""
    landing = root / "landing"
    (landing / "prices" / "llm").mkdir(parents=True)
    (landing / "telemetry" / "requests").mkdir(parents=True)
    shutil.copyfile(sheet, landing / "prices" / "llm" / sheet.name)
    for name, records in requests.items():
        (landing / "telemetry" / "requests" / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return landing


# ---- every test on its own paths (issue 40) ----------------------------------------------------
# No test reads or writes the checkout's var/, landing/ or thinktax.toml: `make run` then `make test`
# (the README's order, and .ci/run's) must not let the demo's published warehouse answer a test, nor a
# test change the demo. The session runs in a temporary folder with the runtime variables unset (so
# module- and session-scoped fixtures that rely on the defaults write there), each test in an empty
# folder of its own (defaults: <it>/landing, <it>/var/thinktax.duckdb, <it>/thinktax.toml), and
# the session fails when the checkout's runtime paths changed (pytest_sessionfinish below).
RUNTIME_VARS = ("THINKTAX_LANDING", "THINKTAX_WAREHOUSE", "THINKTAX_CONFIG")
GUARDED = ("var", "landing", "thinktax.toml")  # the checkout's runtime paths (README, "Defaults")


@pytest.fixture(scope="session", autouse=True)
def _session_paths(tmp_path_factory: pytest.TempPathFactory) -> None:
    import os

    home = tmp_path_factory.mktemp("session_cwd")
    saved = {k: os.environ.get(k) for k in (*RUNTIME_VARS, "DAGSTER_HOME")}
    cwd = Path.cwd()
    for var in RUNTIME_VARS:
        os.environ.pop(var, None)
    os.environ["DAGSTER_HOME"] = str(home / "dagster_home")
    os.chdir(home)
    yield
    os.chdir(cwd)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def checkout_state(root: Path) -> dict[str, tuple[int, int]]:
    """What the runtime paths under ``root`` hold: relative path -> (size, mtime ns) of each file and
    (-1, 0) of each folder."""
    state: dict[str, tuple[int, int]] = {}
    for name in GUARDED:
        top = root / name
        for p in [top, *(top.rglob("*") if top.is_dir() else ())]:
            try:
                st = p.lstat()
            except FileNotFoundError:
                continue
            state[p.relative_to(root).as_posix()] = (-1, 0) if p.is_dir() else (st.st_size, st.st_mtime_ns)
    return state


def _guard_root() -> Path:
    import os

    return Path(os.environ.get("THINKTAX_TEST_GUARD_ROOT") or REPO)


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        session.config.stash[_GUARD_KEY] = checkout_state(_guard_root())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_GUARD_KEY, None)
    if before is None:
        return
    after = checkout_state(_guard_root())
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = (f"tests changed the checkout's runtime paths ({_guard_root()}: {', '.join(GUARDED)}), which no test "
               f"may touch (issue 40): {', '.join(changed[:10])}" + (f" and {len(changed) - 10} more" if len(changed) > 10 else ""))
        if reporter is not None:
            reporter.write_line(f"ERROR: {msg}", red=True, bold=True)
        else:
            print(f"ERROR: {msg}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_GUARD_KEY = pytest.StashKey[dict]()


@pytest.fixture(autouse=True)
def _isolated_dagster_home(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    # an empty working folder of its own, beside tmp_path (a test's own thinktax.toml or landing/ in
    # tmp_path is not read by the defaults unless the test changes into tmp_path itself)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    # Great Expectations validates in the test process (imported once per pytest process), not in a
    # worker process per run (a ~4 s import each); the worker is tested where a test turns it on
    # (tests/pipelines/test_gx_checks.py, tests/commands/test_exit_fast.py)
    monkeypatch.setenv("THINKTAX_GX_WORKER", "0")
    for var in RUNTIME_VARS:
        monkeypatch.delenv(var, raising=False)


# ---- test tiers (issue 27 item 5) ------------------------------------------------------------
# `make check` is the fast tier: `-m "not slow and not spark and not postgres and not venv"`;
# `make test` (CI) runs everything. The markers are given here by what a test needs, so that a new
# test in tests/warehouse/spark/ or one using the Postgres or validator-venv fixtures lands in the right tier.
_TIER_FIXTURES = {"server": "postgres", "validator": "venv", "spark": "spark", "scenario": "spark",
                  "connect_server": "spark"}


# ---- the longest files first (make test: two xdist workers, each file whole in one) -----------
# xdist hands a worker the next file when it is nearly done with its last one; by default it takes
# the files with the most tests first, so the long files with one to five tests (a Spark build, a
# rebuild loop) came last, where one of them can keep a worker busy after the other is done. The Makefile
# turns that order off (--no-loadscope-reorder) and the files below go first, longest first
# (seconds of one worker, from `pytest --durations=0` of a fresh clone's whole `make test`, 2026-12-07,
# the machine shared with a profiling session, 2,463 s: relative, not absolute figures; the Spark files
# before PLAN_CONF, warehouse/spark/build.py); the rest follow in collection order. A stale figure
# only costs balance, never a test.
LONGEST_FILES = {
    "tests/warehouse/spark/test_parity.py": 975,
    "tests/warehouse/spark/test_connect.py": 563,
    "tests/warehouse/spark/test_run_cli.py": 421,
    "tests/commands/test_run_exits.py": 258,
    "tests/warehouse/spark/test_parity_cases.py": 209,
    "tests/warehouse/spark/test_shared_layout.py": 187,
    "tests/warehouse/test_publish_under_load.py": 152,
    "tests/bi/test_superset.py": 138,
    "tests/warehouse/test_parts.py": 134,
    "tests/warehouse/spark/test_spark_ingest.py": 127,
    "tests/commands/test_alert.py": 104,
    "tests/sources/test_otel_instrumentations.py": 98,
    "tests/sources/test_requests_by_path.py": 72,
    "tests/warehouse/test_incremental.py": 68,
    "tests/commands/test_focus_validator.py": 63,
    "tests/sources/test_otel.py": 58,
    "tests/commands/test_anomaly_alert.py": 58,
    "tests/tools/test_bench_smoke.py": 52,
    "tests/warehouse/test_ingest_batch.py": 49,
    "tests/sql/test_allocation_property.py": 46,
    "tests/pipelines/test_gx_checks.py": 41,
    "tests/commands/test_bi_figures.py": 41,
    "tests/commands/test_run_and_sql.py": 40,
    "tests/warehouse/test_corpus.py": 35,
    "tests/pipelines/test_instance_run.py": 30,
    "tests/commands/test_run_options.py": 28,
    "tests/commands/test_exit_fast.py": 28,
    "tests/pipelines/test_noop_imports.py": 26,
    "tests/synthetic/test_demo_anomalies.py": 23,
    "tests/sql/test_costs_hand_worked.py": 22,
    "tests/synthetic/test_demo_identity.py": 21,
    "tests/sql/test_price_modifiers_incremental.py": 20,
}


def _longest_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: the files of LONGEST_FILES first, longest first; a file's
    own tests keep their order (a stable sort)."""
    root = Path(__file__).resolve().parents[1]

    def seconds(item: pytest.Item) -> int:
        try:
            rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        except ValueError:
            return 0
        return LONGEST_FILES.get(rel, 0)

    items.sort(key=lambda item: -seconds(item))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in Path(str(item.fspath)).parts[-2:-1]:
            item.add_marker(pytest.mark.spark)
        for fixture, marker in _TIER_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(getattr(pytest.mark, marker))
    _longest_first(items)
