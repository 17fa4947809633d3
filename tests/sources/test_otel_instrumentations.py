"""The spans of the OpenTelemetry instrumentations people run, from the real packages, ingested.

Each instrumentation (tools/otel-instrumentations.txt, installed into .thinktax/otel-venv by the
session fixture below) runs in its own subprocess (tests/otel_clients.py): the real openai,
anthropic, google-genai and boto3 clients call a stub HTTP server on 127.0.0.1 that returns response
bodies written from the providers' API documentation (tests/fixtures/real/otel_bodies/, README
there), and the real OTLP/HTTP exporter sends the spans to a receiver on 127.0.0.1 that writes them
as the Collector's file exporter does (tests/otel_stub.py). Each instrumentation's file is ingested
by thinktax into a warehouse of its own (the same body is sent under several instrumentations, with
the same response id) and every bucket of every call is compared with the body the stub returned.

What the body says (independently of any instrumentation):
* OpenAI chat: uncached = prompt_tokens - cached_tokens, cached = cached_tokens, thinking =
  reasoning_tokens, output = completion_tokens - reasoning_tokens.
* Anthropic Messages (also Bedrock InvokeModel for Claude): uncached = input_tokens (it excludes the
  cache), cached = cache_read_input_tokens, write = cache_creation_input_tokens, thinking =
  output_tokens_details.thinking_tokens, output = output_tokens - thinking.
* Gemini: uncached = promptTokenCount - cachedContentTokenCount, cached = cachedContentTokenCount,
  thinking = thoughtsTokenCount, output = candidatesTokenCount (thoughts are not in it).
* Bedrock Converse: uncached = inputTokens (excludes the cache), cached = cacheReadInputTokens,
  write = cacheWriteInputTokens, output = outputTokens.

LOST lists what an instrumentation does not export at all (checked in its code, see
docs/telemetry.md): thinktax cannot see it, so the count stays in the bucket it is part of (cache
reads in the uncached input, thinking in the output); the prompt and completion totals still agree.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.otel_stub import BODIES, Receiver, Stub
from services.config import Config
from warehouse.db import Build
from warehouse.ingest import Ingestor
from warehouse.transform import build_all

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".thinktax" / "otel-venv"
PINS = REPO / "tools" / "otel-instrumentations.txt"
CLIENTS = REPO / "tests" / "otel_clients.py"

OPENAI = "openai:openai_chat_cached_reasoning"
ANTHROPIC = ["anthropic:anthropic_messages_cache_read_write", "anthropic:anthropic_messages_thinking"]
GEMINI = "gemini:gemini_generate_content_cached_thoughts"
CONVERSE = ["converse:bedrock_converse_cache_write", "converse:bedrock_converse_cache_read"]
INVOKE = ["invoke:bedrock_invoke_anthropic_cache_write", "invoke:bedrock_invoke_anthropic_cache_read"]

# instrumentation -> the calls it makes; a '+latest' run sets OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
RUNS = {
    "openai-v2": [OPENAI],
    "openai-v2+latest": [OPENAI],
    "google-genai": [GEMINI],
    "google-genai+latest": [GEMINI],
    "openllmetry-openai": [OPENAI],
    "openllmetry-anthropic": ANTHROPIC,
    "openllmetry-bedrock": CONVERSE + INVOKE,
    "openinference-openai": [OPENAI],
    "openinference-anthropic": ANTHROPIC,
    "openlit": [OPENAI, *ANTHROPIC, GEMINI, *CONVERSE],  # openlit has no span for InvokeModel
    "pydantic-ai": ["pydantic_openai:openai_chat_cached_reasoning"],
    "anthropic-sdk": ANTHROPIC,
}
LOST = {
    ("openai-v2", "openai_chat_cached_reasoning"): {"cached", "thinking"},
    ("openai-v2+latest", "openai_chat_cached_reasoning"): {"cached", "thinking"},
    ("openllmetry-anthropic", "anthropic_messages_thinking"): {"thinking"},
    ("openlit", "openai_chat_cached_reasoning"): {"thinking"},
    ("openlit", "anthropic_messages_thinking"): {"thinking"},
}
BUCKETS = ("uncached", "cached", "write", "thinking", "output")


def body_buckets(name: str) -> dict[str, int]:
    b = json.loads((BODIES / f"{name}.json").read_text())
    if name.startswith("openai_"):
        u = b["usage"]
        cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        thinking = (u.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        return {"uncached": u["prompt_tokens"] - cached, "cached": cached, "write": 0, "thinking": thinking,
                "output": u["completion_tokens"] - thinking}
    if name.startswith(("anthropic_", "bedrock_invoke_anthropic")):
        u = b["usage"]
        thinking = (u.get("output_tokens_details") or {}).get("thinking_tokens") or 0
        return {"uncached": u["input_tokens"], "cached": u.get("cache_read_input_tokens") or 0,
                "write": u.get("cache_creation_input_tokens") or 0, "thinking": thinking,
                "output": u["output_tokens"] - thinking}
    if name.startswith("gemini_"):
        u = b["usageMetadata"]
        cached = u.get("cachedContentTokenCount") or 0
        return {"uncached": u["promptTokenCount"] - cached, "cached": cached, "write": 0,
                "thinking": u.get("thoughtsTokenCount") or 0, "output": u.get("candidatesTokenCount") or 0}
    if name.startswith("bedrock_converse"):
        u = b["usage"]
        return {"uncached": u["inputTokens"], "cached": u.get("cacheReadInputTokens") or 0,
                "write": u.get("cacheWriteInputTokens") or 0, "thinking": 0, "output": u["outputTokens"]}
    raise AssertionError(name)


def expected(instrumentation: str, body: str) -> dict[str, int]:
    want = body_buckets(body)
    lost = LOST.get((instrumentation, body), set())
    if "cached" in lost:
        want["uncached"] += want.pop("cached")
        want["cached"] = 0
    if "write" in lost:
        want["uncached"] += want.pop("write")
        want["write"] = 0
    if "thinking" in lost:
        want["output"] += want.pop("thinking")
        want["thinking"] = 0
    return want


# -- the venv -------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def otel_python() -> Path:
    """.thinktax/otel-venv's python, made from the pins once (reused while its stamp matches)."""
    py = VENV / "bin" / "python"
    stamp = VENV / ".installed"
    if stamp.exists() and stamp.read_text() == PINS.read_text() and py.exists():
        return py
    started = time.monotonic()
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv:
        cmds = [[uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable, str(VENV)],
                [uv, "pip", "sync", "--quiet", "--python", str(py), str(PINS)]]
    else:  # the pins are a complete, resolved set: installed as they are
        cmds = [[sys.executable, "-m", "venv", str(VENV)],
                [str(py), "-m", "pip", "install", "--quiet", "--no-deps", "-r", str(PINS)]]
    for cmd in cmds:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"could not make {VENV.name} from {PINS.name} (no package index?): {r.stderr[-800:]}")
    stamp.write_text(PINS.read_text())
    print(f"\n{VENV.name} made in {time.monotonic() - started:.1f} s")
    return py


# -- run every instrumentation, ingest each ------------------------------------------------------

def _ingest(landing: Path, warehouse: Path):
    b = Build(warehouse, "t")
    b.start(Config().settings_row())
    con = b.connect()
    # the spans end now: ingest with the real clock (tests/conftest.py's NOW is in the past)
    summary = Ingestor(con, landing, now=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)).ingest()
    build_all(con)
    return con, summary


def _root_names(path: Path) -> dict[str, str]:
    """trace id -> the name of its root span (the driver's 'task <client> <body>')."""
    roots = {}
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    if not s.get("parentSpanId"):
                        roots[s["traceId"]] = s["name"]
    return roots


@pytest.fixture(scope="module")
def runs(otel_python, tmp_path_factory):
    """{instrumentation: (summary of its file, {(client, body): [bucket rows]}, served bodies)}."""
    root = tmp_path_factory.mktemp("otel_instr")
    out = {}
    with Stub() as stub, Receiver(root / "otlp") as receiver:
        for name, calls in RUNS.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
            instrumentation, _, variant = name.partition("+")
            if variant == "latest":
                env["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
            if instrumentation != "anthropic-sdk":
                # anthropic 2.x traces its own calls under a global tracer provider: off, so each run
                # holds the one instrumentation's spans (anthropic-sdk is the run of the SDK's own)
                env["ANTHROPIC_OPEN_TELEMETRY"] = "false"
            served_before = len(stub.served)
            r = subprocess.run([str(otel_python), str(CLIENTS), instrumentation, stub.url,
                                f"{receiver.url}/{name}/v1/traces", ",".join(calls)],
                               capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
            assert r.returncode == 0, f"{name}: {r.stderr[-3000:]}"
            served = [b for b, _ in stub.served[served_before:]]
            assert served == [c.split(":")[1] for c in calls], name
            landing = root / name / "landing"
            (landing / "telemetry" / "otel").mkdir(parents=True)
            spans = root / "otlp" / f"{name}.jsonl"
            shutil.copyfile(spans, landing / "telemetry" / "otel" / f"{name}.jsonl")
            con, summary = _ingest(landing, root / name / "w.duckdb")
            roots = _root_names(spans)
            rows = {}
            for task_id, provider, model, *b in con.execute(
                    "SELECT task_id, provider, model, uncached_input_tokens, cached_input_tokens, cache_write_tokens, "
                    "thinking_tokens, output_tokens FROM stg.requests").fetchall():
                _, client, body = roots[task_id].split(" ")
                rows.setdefault((client, body), []).append({"provider": provider, "model": model, **dict(zip(BUCKETS, b))})
            quarantine = con.execute("SELECT field, reason, raw FROM ops.quarantine").fetchall()
            con.close()
            out[name] = ([f for f in summary.files if f.format == "otlp_json"], rows, quarantine)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_every_bucket_equals_the_recorded_body(runs, name):
    files, rows, quarantine = runs[name]
    (f,) = files
    calls = [tuple(c.split(":")) for c in RUNS[name]]
    # one model call per call made: no agent span, HTTP span or wrapper counted, none quarantined
    assert quarantine == [], quarantine
    assert (f.rows_in, f.rows_loaded, f.rows_duplicate, f.rows_quarantined) == (len(calls), len(calls), 0, 0)
    for client, body in calls:
        (got,) = rows[(client, body)]
        want = expected(name.partition("+")[0], body)
        assert {k: got[k] for k in BUCKETS} == want, (name, body, got)
        assert got["provider"] and got["provider"] == got["provider"].lower() and got["model"]


@pytest.mark.slow
def test_what_each_instrumentation_loses_is_only_what_its_code_drops(runs):
    """Every LOST entry is real (the instrumentation's span lacks the count) and the totals agree."""
    for (name, body), lost in LOST.items():
        (got,) = [r for (c, b), rs in runs[name][1].items() if b == body for r in rs]
        full = body_buckets(body)
        assert sum(got[k] for k in ("uncached", "cached", "write")) == sum(full[k] for k in ("uncached", "cached", "write"))
        assert got["thinking"] + got["output"] == full["thinking"] + full["output"]
        for k in lost:
            assert full[k] > 0 and got[k] == 0, (name, body, k)
