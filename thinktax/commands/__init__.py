"""CLI sub-commands. Each module defines NAME, HELP, add_arguments(parser) and run(args) -> int."""

import argparse as _argparse
import datetime as _dt


def day_arg(text: str) -> _dt.date:
    """argparse ``type=`` for a UTC day given as YYYY-MM-DD."""
    try:
        return _dt.date.fromisoformat(text)
    except ValueError:
        raise _argparse.ArgumentTypeError(f"not a day (YYYY-MM-DD): {text!r}") from None
