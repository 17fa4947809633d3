"""Which parser reads which landing file.

Each source-family module exports ``SPECS: list[SourceSpec]``; this module gathers them. A
landing file is matched to the first spec of its folder whose ``sniff`` accepts its content.
The parsers import only ``sources.base`` (never this module), so there is no circle.
"""

from __future__ import annotations

from sources.base import SourceSpec

__all__ = ["SourceSpec", "all_specs", "folders"]  # SourceSpec is defined in sources/base.py (parsers import it there)


def all_specs() -> list[SourceSpec]:
    from sources import catalog, fx, prices_llm, requests, requests_batch  # noqa: PLC0415  (import on use: cheap CLI start)

    specs: list[SourceSpec] = []
    for module in (fx, prices_llm, requests_batch, requests, catalog):  # batch files before plain JSONL
        specs.extend(module.SPECS)
    for optional in ("prices_gpu", "bills_openai", "bills_anthropic", "bills_focus", "bills_cloud", "prometheus",
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
