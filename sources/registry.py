"""Which parser reads which landing file.

Each source-family module exports ``SPECS: list[SourceSpec]``; this module gathers them. A
landing file is matched to the first spec of its folder whose ``sniff`` accepts its content.
"""

from __future__ import annotations

from dataclasses import dataclass

from sources.base import Parser, Sniffer


@dataclass(frozen=True)
class SourceSpec:
    folder: str  # landing sub-folder, e.g. "prices/llm"
    format: str  # e.g. "litellm_json"
    sniff: Sniffer  # (data, name) -> bool, from content (and name only as a tie-break)
    parse: Parser
    # Natural key for de-duplication against rows already loaded into the same staging table.
    # A row whose key and values match a loaded row is a duplicate; same key, other values is
    # quarantined as 'conflicting_duplicate'. None: no key (catalog snapshots; newest file wins).
    key: tuple[str, ...] | None = None


def all_specs() -> list[SourceSpec]:
    from sources import catalog, fx, prices_llm, requests  # noqa: PLC0415  (import on use: cheap CLI start)

    specs: list[SourceSpec] = []
    for module in (fx, prices_llm, requests, catalog):
        specs.extend(module.SPECS)
    for optional in ("prices_gpu", "bills_openai", "bills_anthropic", "bills_focus", "prometheus",
                     "litellm_spendlogs", "otel"):
        try:
            module = __import__(f"sources.{optional}", fromlist=["SPECS"])
        except ModuleNotFoundError as exc:  # family not built yet
            if exc.name != f"sources.{optional}":
                raise
            continue
        specs.extend(module.SPECS)
    return specs


def folders() -> list[str]:
    return sorted({s.folder for s in all_specs()})
