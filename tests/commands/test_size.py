"""`thinktax size` through the CLI entry point, on the real configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinktax.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "real" / "model_configs"


def run_size(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["size", *args])
    out, err = capsys.readouterr()
    return code, out, err


def base_args(config: str, gpu: str, gpus: int, precision: str, prompt: int, thinking: int, output: int) -> list[str]:
    return [
        "--config-json", str(CONFIGS / f"{config}_config.json"), "--gpu", gpu, "--gpus", str(gpus),
        "--precision", precision, "--prompt", str(prompt), "--thinking", str(thinking), "--output", str(output),
    ]


def test_llama_70b_fp8_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_size(capsys, *base_args("llama-3.1-70b-instruct", "H200", 1, "fp8", 8000, 15000, 500), "--format", "json")
    assert code == 0
    r = json.loads(out)
    assert r["model"] == "llama-3.1-70b-instruct"
    # 2 × 80 × 8 × 128 × 1 B = 163,840 at fp8 KV
    assert r["kv_bytes_per_token"] == 163_840 and r["kv_dtype"] == "fp8"
    # 70.5537e9 × 1 × 1.03 = 72.670 GB
    assert r["weights_gb"] == pytest.approx(72.670, abs=1e-3)
    # 23,500 × 163,840 / 1e9 = 3.8502 GB
    assert r["kv_gb_per_call"] == pytest.approx(3.8502, abs=1e-4)
    # floor((126.9 − 72.670 − 2) / 3.85024) = floor(13.57) = 13
    assert r["max_concurrent_calls"] == 13
    assert r["fits"] is True
    for key in ("kv_bytes_per_token", "weights_gb", "kv_gb_per_call", "max_concurrent_calls", "calls_per_minute"):
        assert key in r["working"]
    assert r["working"]["max_concurrent_calls"] == "floor(52.23 / 3.8502) = 13"


def test_json_is_default_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_size(capsys, *base_args("qwen3-32b", "H100", 1, "bf16", 1000, 1000, 100))
    assert code == 0
    r = json.loads(out)
    # 2 × 64 × 8 × 128 × 2 B = 262,144 at bf16
    assert r["kv_bytes_per_token"] == 262_144 and r["kv_dtype"] == "bf16"


def test_deepseek_mla_and_catalog_name(capsys: pytest.CaptureFixture[str]) -> None:
    args = base_args("deepseek-v3", "NVIDIA H200 141GB HBM3e", 8, "fp8", 1024, 0, 2048)
    code, out, _ = run_size(capsys, *args)
    r = json.loads(out)
    assert code == 0 and r["gpu"] == "H200"
    # 61 × 576 × 1 B = 35,136 at fp8; the latent is stored on all 8 ranks
    assert r["kv_bytes_per_token"] == 35_136
    assert r["kv_replication"] == 8
    assert r["params_total_b"] == pytest.approx(671.026, abs=1e-3)


def test_attention_dp_and_kv_dtype_flags(capsys: pytest.CaptureFixture[str]) -> None:
    args = base_args("deepseek-v3", "H200", 8, "fp8", 1024, 0, 2048) + ["--kv-dtype", "bf16", "--attention-dp"]
    r = json.loads(run_size(capsys, *args)[1])
    # matches the sizing test: 1,045 calls of 3,072 tokens × 70,272 B
    assert r["kv_bytes_per_token"] == 70_272 and r["kv_replication"] == 1
    assert r["max_concurrent_calls"] == 1_045


def test_gpt_oss_int4_long_context(capsys: pytest.CaptureFixture[str]) -> None:
    r = json.loads(run_size(capsys, *base_args("gpt-oss-120b", "H100", 2, "int4", 2000, 4000, 500))[1])
    # int4 weights keep a bf16 KV cache: 73,728 short, 36,864 past the 128-token window
    assert r["kv_dtype"] == "bf16"
    assert r["kv_bytes_per_token"] == 73_728
    assert r["kv_bytes_per_token_long_context"] == 36_864
    # (18 × 6,500 + 18 × 128) × 1,024 × 2 B = 244,318,208 B
    assert r["kv_gb_per_call"] == pytest.approx(0.2443, abs=1e-4)


def test_params_override(capsys: pytest.CaptureFixture[str]) -> None:
    args = base_args("llama-3.1-70b-instruct", "H100", 2, "fp8", 1000, 0, 100) + ["--params-b", "80"]
    r = json.loads(run_size(capsys, *args)[1])
    # 80e9 × 1 B × 1.03 = 82.4 GB
    assert r["params_total_b"] == 80 and r["weights_gb"] == pytest.approx(82.4)


def test_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    r = json.loads(run_size(capsys, *base_args("llama-3.1-70b-instruct", "L40S", 1, "bf16", 1000, 1000, 100))[1])
    assert r["fits"] is False and r["max_concurrent_calls"] == 0 and r["calls_per_minute"] == 0


def test_table_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_size(capsys, *base_args("llama-3.1-70b-instruct", "H200", 1, "fp8", 8000, 15000, 500), "--format", "table")
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("kv_bytes_per_token ") and line.endswith("163,840") for line in lines)
    assert any(line.startswith("max_concurrent_calls") and line.endswith(" 13") for line in lines)
    assert "working" in lines


def test_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_size(capsys, *base_args("qwen3-32b", "V100", 1, "fp8", 1, 1, 1))
    assert code == 2 and "unknown GPU" in err
    missing = ["--config-json", str(tmp_path / "none.json"), "--gpu", "H100", "--gpus", "1",
               "--prompt", "1", "--thinking", "1", "--output", "1"]
    code, _, err = run_size(capsys, *missing)
    assert code == 2 and "none.json" in err
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 10}')
    code, _, err = run_size(capsys, *(["--config-json", str(bad)] + missing[2:]))
    assert code == 2 and "num_hidden_layers" in err
