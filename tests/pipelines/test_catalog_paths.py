"""A config_json in models.csv that resolves outside the landing folder is quarantined; one that
names no landed file is warned about by the ingest step (never silently ignored)."""

from __future__ import annotations

from pathlib import Path

from pipelines.defs.warehouse_assets import _UNLANDED_CONFIGS
from services.config import Config
from warehouse.db import Build
from warehouse.ingest import Ingestor

MODELS = (
    "model,family,reasoning,params_total_b,params_active_b,config_json,weights_gb_fp8,kv_bytes_per_token_bf16\n"
    "Qwen/Qwen3-32B,qwen3,true,32.8,32.8,qwen3-32b/config.json,,\n"
    "evil,qwen3,true,32.8,32.8,../../etc/passwd,,\n"
    "absolute,qwen3,true,32.8,32.8,/etc/passwd,,\n"
    "forgotten,qwen3,true,8,8,forgotten/config.json,,\n"
)


def test_outside_paths_are_quarantined_and_unlanded_ones_listed(tmp_path: Path):
    landing = tmp_path / "landing"
    (landing / "catalog" / "qwen3-32b").mkdir(parents=True)
    (landing / "catalog" / "models.csv").write_text(MODELS)
    (landing / "catalog" / "qwen3-32b" / "config.json").write_text('{"num_hidden_layers": 64}')
    b = Build(tmp_path / "wh.duckdb", "one")
    b.start(Config().settings_row())
    with b.connect() as con:
        Ingestor(con, landing).ingest()
        acct = con.execute("SELECT rows_in, rows_loaded, rows_quarantined FROM ops.ingested_files "
                           "WHERE file = 'catalog/models.csv'").fetchall()
        quarantined = con.execute("SELECT line, field, reason FROM ops.quarantine ORDER BY line").fetchall()
        unlanded = con.execute(_UNLANDED_CONFIGS).fetchall()
    assert acct == [(4, 2, 2)]  # rows in = loaded + quarantined
    assert [(line, field) for line, field, _ in quarantined] == [(3, "config_json"), (4, "config_json")]
    assert "'../../etc/passwd' is not a path inside the landing folder's catalog/" in quarantined[0][2]
    assert unlanded == [("forgotten", "forgotten/config.json")]
    b.abandon()
