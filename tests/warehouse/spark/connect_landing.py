"""The small landing of the Spark Connect run (test_connect.py): every source kind, one file each.

Every folder sources/registry.py reads (``sources.registry.folders()``; test_connect.py checks that
none is missing) gets a file: the hand-worked mini landing (tests/conftest.py MINI_FILES:
telemetry/requests, prices/llm, catalog) and, from the repo's recorded fixtures (provenance in
their READMEs), the OpenAI, Anthropic and FOCUS bills, the GPU price sheet and the Prometheus
scrapes, and (``add_cloud_exports``, for the nightly run: the ingest on Spark's executors refuses
files read by path, so that run ingests on DuckDB) the AWS, Azure and GCP cost exports; the OTel spans of tests/corpus/otel_bad_spans (one
good span, ok-1, and spans that are quarantined); a LiteLLM spend log row in the shape of
tests/warehouse/spark/test_spark_ingest.py's, on 2026-06-29 so the hand-worked days (2026-06-30,
2026-07-01) keep only r1..r5; and a currency file. None of them adds a call to r1..r5's tasks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import MINI_FILES, write_files

REPO = Path(__file__).resolve().parents[3]
FIX = REPO / "tests" / "fixtures"

SPEND = json.dumps({"request_id": "ll-1", "call_type": "acompletion", "spend": 0.25, "prompt_tokens": 8000,
                    "completion_tokens": 15500, "startTime": "2026-06-29T11:00:00", "model": "o3",
                    "custom_llm_provider": "openai", "status": "success", "request_tags": ["qa"]})
FILES = {
    **MINI_FILES,
    "telemetry/litellm_spendlogs/spendlogs.1.jsonl": SPEND + "\n",
    "fx/rates.2026-01-01.csv": "currency,usd_per_unit\nEUR,1.10\n",
}


def write_connect_landing(root: Path) -> Path:
    landing = write_files(root, FILES)
    for sub in ("openai", "anthropic", "focus"):
        shutil.copytree(FIX / "bills" / sub, landing / "bills" / sub)
    (landing / "prices" / "gpu").mkdir(parents=True)
    shutil.copy(FIX / "prices" / "thinktax_gpu_prices.2025-06-01.csv", landing / "prices" / "gpu")
    (landing / "telemetry" / "metrics").mkdir(parents=True)
    for f in sorted((FIX / "metrics").glob("*.prom")):
        shutil.copy(f, landing / "telemetry" / "metrics" / f.name)
    (landing / "telemetry" / "otel").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "corpus" / "otel_bad_spans" / "telemetry" / "otel" / "spans.jsonl",
                landing / "telemetry" / "otel" / "spans.jsonl")
    return landing


def add_cloud_exports(landing: Path) -> Path:
    """The AWS CUR 2.0, Azure cost-details and GCP billing exports (tests/fixtures/bills/cloud)."""
    for cloud in ("aws", "azure", "gcp"):
        shutil.copytree(FIX / "bills" / "cloud" / cloud, landing / "bills" / cloud)
    return landing
