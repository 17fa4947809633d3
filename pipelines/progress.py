"""A hook the CLI sets so long steps inside Dagster assets can report progress on the terminal."""

from __future__ import annotations

from collections.abc import Callable

_listener: Callable[[str, str], None] | None = None


def set_listener(fn: Callable[[str, str], None] | None) -> None:
    global _listener
    _listener = fn


def report(step: str, detail: str = "") -> None:
    if _listener is not None:
        _listener(step, detail)
