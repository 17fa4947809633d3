"""thinktax.toml: a value of the wrong type or out of range is a clear error naming the file, the
key and what was expected (issue 47), for every key the shipped example has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.config import ConfigError, load_config
from tests.conftest import REPO

EXAMPLE = (REPO / "thinktax.toml.example").read_text()
_LINE = re.compile(r"^(?P<key>[a-z_]+)\s*=\s*(?P<value>\{[^}]*\}|\"[^\"]*\"|[^\s#]+)")


def example_keys() -> list[tuple[str, str, str]]:
    """(section or '', key, value as written) for every key of thinktax.toml.example."""
    out, section = [], ""
    for line in EXAMPLE.splitlines():
        if m := re.match(r"^\[(\w+)\]", line):
            section = m.group(1)
        elif m := _LINE.match(line):
            out.append((section, m.group("key"), m.group("value")))
    return out


# What each key of the example holds (written here from the comments of thinktax.toml.example and
# docs/contract.md, not from the code): the type its error must name.
KIND = {
    "hours_per_month": "a number",
    "tiers.medium_min_thinking_tokens": "an integer", "tiers.full_min_thinking_tokens": "an integer",
    "tiers.target_mix": "a table of numbers",
    "alert.webhook_url": "a string", "alert.window_days": "an integer", "alert.threshold_usd_per_month": "a number",
    "alert.warn_months": "an integer", "alert.invoice_mismatch_usd": "a number", "alert.invoice_mismatch_pct": "a number",
    "forecast.horizon_months": "an integer", "capacity.max_queue_seconds": "a number",
    "otel.team_attribute": "a string", "cloud.team_tag": "a string",
    "engine.kind": "a string", "engine.spark_remote": "a string", "engine.spark_warehouse": "a string",
    "engine.ingest": "a string", "warehouse.keep_builds": "an integer",
    "anomaly.adapt_days": "an integer", "anomaly.min_history_days": "an integer",
    "anomaly.min_impact_usd": "a number", "anomaly.min_impact_pct": "a number",
    "anomaly.alert_scopes": "a list of strings", "chargeback.shared": "a string",
}


def wrong_value(kind: str) -> str:
    """A TOML literal of another type than ``kind``."""
    return {"a string": "5", "a table of numbers": '"most"', "a list of strings": '"team"'}.get(kind, '"lots"')


def test_the_example_has_every_key_and_loads(tmp_path: Path):
    f = tmp_path / "thinktax.toml"
    f.write_text(EXAMPLE)
    cfg = load_config(f)
    assert cfg.source == str(f)
    keys = {f"{s}.{k}" if s else k for s, k, _v in example_keys()}
    assert keys == set(KIND)  # a key added to the example needs its line in KIND


KEYS = example_keys()


@pytest.mark.parametrize(("section", "key", "value"), KEYS, ids=[f"{s or 'top'}.{k}" for s, k, _v in KEYS])
def test_every_key_of_the_example_with_a_wrong_type_is_a_clear_error(tmp_path: Path, section, key, value):
    name = f"{section}.{key}" if section else key
    bad = wrong_value(KIND[name])
    lines, current = [], ""
    for line in EXAMPLE.splitlines():
        if m := re.match(r"^\[(\w+)\]", line):
            current = m.group(1)
        m = _LINE.match(line)
        if m and current == section and m.group("key") == key:
            line = f"{key} = {bad}"
        lines.append(line)
    f = tmp_path / "thinktax.toml"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(f)
    msg = str(err.value)
    assert msg.startswith(f"{f}: ")
    assert (f"[{section}] {key} = " if section else f"{key} = ") in msg
    assert f"expected {KIND[name]}" in msg


@pytest.mark.parametrize(("text", "says"), [
    ('[tiers]\nmedium_min_thinking_tokens = "lots"\n', '[tiers] medium_min_thinking_tokens = \'lots\': expected an integer'),
    ('[alert]\nwindow_days = "30"\n', "[alert] window_days = '30': expected an integer"),
    ('hours_per_month = "abc"\n', "hours_per_month = 'abc': expected a number"),
    ("[alert]\nwindow_days = 30.5\n", "[alert] window_days = 30.5: expected an integer"),
    ("[forecast]\nhorizon_months = true\n", "[forecast] horizon_months = True: expected an integer"),
    ("[engine]\nspark_remote = 15002\n", "[engine] spark_remote = 15002: expected a string"),
    ('[tiers]\ntarget_mix = { fast = "most" }\n', "[tiers] target_mix = {'fast': 'most'}: expected a table of numbers"),
    ("tiers = 3\n", "tiers = 3: expected a table ([tiers])"),
    ("[alert]\nwindow_dayz = 3\n", "[alert]: unknown settings ['window_dayz']"),
    # ranges: the file is named too
    ("[alert]\nwindow_days = 0\n", "alert.window_days must be >= 1"),
    ("hours_per_month = -1\n", "hours_per_month must be > 0"),
    ("[forecast]\nhorizon_months = 37\n", "forecast.horizon_months must be 1 to 36"),
])
def test_the_issues_examples_and_ranges(tmp_path: Path, text: str, says: str):
    f = tmp_path / "thinktax.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(f)
    assert str(err.value) == f"{f}: {says}" or (str(err.value).startswith(f"{f}: ") and says in str(err.value))


def test_a_number_for_a_float_key_may_be_written_as_an_integer(tmp_path: Path):
    f = tmp_path / "thinktax.toml"
    f.write_text("hours_per_month = 720\n[capacity]\nmax_queue_seconds = 3\n")
    cfg = load_config(f)
    assert cfg.hours_per_month == 720.0 and cfg.capacity.max_queue_seconds == 3


def test_a_folder_or_a_binary_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot be read as a TOML file"):
        load_config(tmp_path)
    f = tmp_path / "bin.toml"
    f.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="cannot be read as a TOML file"):
        load_config(f)
