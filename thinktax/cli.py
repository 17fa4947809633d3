"""`thinktax` command line: one module per sub-command under thinktax/commands/."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import pkgutil
import signal
import sys
import time

from thinktax import commands


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only`` (a command's name), just that command's parser, when
    its module (thinktax/commands/<name with _ for ->.py) exists: the others' imports are not
    paid for (``thinktax run`` is a nightly job)."""
    parser = argparse.ArgumentParser(
        prog="thinktax",
        description="Cost analytics for reasoning-model inference (see README.md).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    if only is not None and only.replace("-", "_") in names:
        names = [only.replace("-", "_")]
    for name in names:
        module = importlib.import_module(f"thinktax.commands.{name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(run_command=module.run, exit_fast=getattr(module, "EXIT_FAST", False))
    return parser


def main(argv: list[str] | None = None) -> int:
    return _main(argv)[0]


# Exit codes (docs/contract.md section 1): 0 done, 1 a run that failed (nothing published),
# 2 a usage error (a clear message, never a traceback), 130 Ctrl-C, 143 SIGTERM.
EXIT_SIGTERM = 128 + signal.SIGTERM
CHILD_STOP_SECONDS = 5.0  # how long the exit waits for a child process before ending it
SPARK_STOP_SECONDS = 15.0  # ... for a local Spark context to stop and its JVM to exit


def _main(argv: list[str] | None) -> tuple[int, bool]:
    """(exit code, whether the command asked to exit fast).

    A command that exits fast (``run``, ``demo``) takes SIGTERM as it takes Ctrl-C: the run is
    interrupted (while Dagster executes, its interrupt handler, to which Dagster maps SIGTERM;
    elsewhere KeyboardInterrupt), its build thrown away, its lock released; the exit code says
    which signal it was (143 or 130). Which one arrived is read from the signal wake-up file
    descriptor: the one record of a signal that the handlers Dagster installs do not replace."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(only=argv[0] if argv and not argv[0].startswith("-") else None).parse_args(argv)
    watch = _SignalWatch() if args.exit_fast else None
    try:
        code = int(args.run_command(args) or 0)
    except KeyboardInterrupt:
        code = 130
    finally:
        signals = watch.close() if watch is not None else set()
    if signal.SIGTERM in signals:
        print("thinktax: stopped by SIGTERM: nothing more was published", file=sys.stderr)
        return EXIT_SIGTERM, args.exit_fast
    if code == 130:
        print("interrupted", file=sys.stderr)
        return 130, False
    return code, args.exit_fast


class _SignalWatch:
    """SIGTERM handled as Ctrl-C, and every signal that arrives recorded (``signal.set_wakeup_fd``)."""

    def __init__(self) -> None:
        self.fds: tuple[int, int] | None = None
        self.previous: object = None
        self.old_fd = -1
        try:
            r, w = os.pipe()
        except OSError:
            return
        try:
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self.old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
            self.previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
            self.fds = (r, w)
        except ValueError:  # not the main thread: signals are left alone
            os.close(r)
            os.close(w)

    def close(self) -> set[int]:
        if self.fds is None:
            return set()
        r, w = self.fds
        signal.signal(signal.SIGTERM, self.previous)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self.old_fd)
        data = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(r, 4096):
                data += chunk
        os.close(r)
        os.close(w)
        return set(data)


def end_children(timeout: float = CHILD_STOP_SECONDS) -> list[int]:
    """Every process this one started is ended before it exits, in at most ~``timeout`` s each: the
    Great Expectations worker (warehouse/expectations.py ``reap_workers``: told to end when the
    ingest step finished, waited for here), a local Spark session's JVM, then any other
    multiprocessing child still alive (waited for, then SIGTERM, then SIGKILL). Returns the pids
    that had to be ended."""
    ended: list[int] = []
    gx = sys.modules.get("warehouse.expectations")
    if gx is not None:
        ended += gx.reap_workers(timeout)
    ended += _end_spark_gateway(timeout)
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        deadline = time.monotonic() + timeout
        for p in mp.active_children():
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(2.0)
                if p.is_alive():
                    p.kill()
                    p.join(2.0)
                ended.append(p.pid)
    return ended


def _end_spark_gateway(timeout: float) -> list[int]:
    """A local Spark session's JVM (pyspark's gateway, started by ``spark-submit``): the Spark
    context is stopped, then the JVM's stdin closed, on which it exits by itself (pyspark
    ``launch_gateway``: "so that the Java gateway can die when the pipe is broken"); waited for
    (``timeout``, at least :data:`SPARK_STOP_SECONDS` when a context is active), then ended. A
    Spark Connect session has no such process here."""
    import subprocess  # noqa: PLC0415
    import threading  # noqa: PLC0415

    context = sys.modules.get("pyspark.context")
    spark_context = getattr(context, "SparkContext", None)
    gateway = getattr(spark_context, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.poll() is not None:
        return []
    active = getattr(spark_context, "_active_spark_context", None)
    if active is not None:
        timeout = max(timeout, SPARK_STOP_SECONDS)
    deadline = time.monotonic() + timeout
    if active is not None:
        # SparkContext.stop() first (in a thread, so that it is bounded too): it also stops the
        # driver's accumulator server, which otherwise prints an EOFError when the JVM goes away
        def stop() -> None:
            with contextlib.suppress(Exception):
                active.stop()

        stopper = threading.Thread(target=stop, name="thinktax-spark-stop", daemon=True)
        stopper.start()
        stopper.join(timeout)
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(max(0.5, deadline - time.monotonic()))
        return []
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(2.0)
        return [proc.pid]


def entry() -> None:
    """The ``thinktax`` console script (and ``python -m thinktax.cli``): :func:`main`, then exit.

    A command that sets ``EXIT_FAST`` (``run``, ``demo``: after a Dagster run the process holds
    ~1,600 modules and ~200k objects) exits without tearing the interpreter down: the exit handlers
    run (logging, thread pools, temporary folders), standard output and error are flushed, then
    ``os._exit``. The teardown wrote nothing (traced: no syscall but ``munmap``) and took ~0.7 s
    of a no-op run's ~4 s (docs/performance.md). Every file a command writes is closed by then;
    the warehouse is published by an fsync'ed rename. ``main()`` itself never exits, for the tests."""
    code, fast = _main(sys.argv[1:])
    # before the exit handlers: multiprocessing's closes a pool's queues, then joins its processes
    # (forever, when the pool had not yet told them to end: issue 47)
    end_children()
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
