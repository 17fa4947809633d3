"""`thinktax` command line: one module per sub-command under thinktax/commands/."""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import pkgutil
import sys

from thinktax import commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thinktax",
        description="Cost analytics for reasoning-model inference (see README.md).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"thinktax.commands.{info.name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _exit_fast=getattr(module, "EXIT_FAST", False))
    return parser


def main(argv: list[str] | None = None) -> int:
    return _main(argv)[0]


def _main(argv: list[str] | None) -> tuple[int, bool]:
    """(exit code, whether the command asked to exit fast)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0), args._exit_fast
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130, False


def entry() -> None:
    """The ``thinktax`` console script (and ``python -m thinktax.cli``): :func:`main`, then exit.

    A command that sets ``EXIT_FAST`` (``run``, ``demo``: after a Dagster run the process holds
    ~1,600 modules and ~200k objects) exits without tearing the interpreter down: the exit handlers
    run (logging, thread pools, temporary folders), standard output and error are flushed, then
    ``os._exit``. The teardown wrote nothing (traced: no syscall but ``munmap``) and took ~0.7 s
    of a no-op run's ~4 s (docs/performance.md). Every file a command writes is closed by then;
    the warehouse is published by an fsync'ed rename. ``main()`` itself never exits, for the tests."""
    code, fast = _main(sys.argv[1:])
    if fast:
        atexit._run_exitfuncs()  # noqa: SLF001 - what sys.exit would run, in the same order
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing more can be said
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
