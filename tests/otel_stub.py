"""The two local servers of tests/sources/test_otel_instrumentations.py, each on 127.0.0.1 and a free port.

* Stub: answers every POST with the response body tests/fixtures/real/otel_bodies/<first path
  segment>.json (so a client pointed at ``<stub>/<body>`` gets that body) and notes which body it
  served.
* Receiver: an OTLP/HTTP trace endpoint (``POST <receiver>/<name>/v1/traces``, protobuf): each
  ``ExportTraceServiceRequest`` becomes one line of ``<out>/<name>.jsonl`` in the OpenTelemetry
  Collector file exporter's layout, OTLP/JSON ``TracesData``: protobuf's JSON mapping
  (``json_format.MessageToDict``, camelCase, int64 as strings, enums as numbers) with the trace and
  span ids as hex, as OTLP/JSON writes them (the proto3 mapping would write base64).
"""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

BODIES = Path(__file__).resolve().parent / "fixtures" / "real" / "otel_bodies"
_IDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node) -> None:
    """MessageToDict writes bytes as base64; OTLP/JSON (and the Collector) write ids as hex."""
    import base64

    if isinstance(node, dict):
        for k, v in node.items():
            if k in _IDS and isinstance(v, str):
                node[k] = base64.b64decode(v).hex()
            else:
                _hex_ids(v)
    elif isinstance(node, list):
        for v in node:
            _hex_ids(v)


def traces_json_line(payload: bytes) -> str:
    req = trace_service_pb2.ExportTraceServiceRequest()
    req.ParseFromString(payload)
    doc = json_format.MessageToDict(req, use_integers_for_enums=True)
    _hex_ids(doc)
    return json.dumps(doc, separators=(",", ":"))


class _Server:
    def __init__(self, handler):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.owner = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # no access log on stderr
        pass

    def _body(self) -> bytes:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return gzip.decompress(data) if self.headers.get("Content-Encoding") == "gzip" else data

    def _send(self, code: int, data: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _StubHandler(_Quiet):
    def do_POST(self):
        self._body()
        name = self.path.lstrip("/").split("/", 1)[0]
        f = BODIES / f"{name}.json"
        if not f.is_file():
            self._send(404, b'{"error": "no response body ' + name.encode() + b'"}', "application/json")
            return
        self.server.owner.served.append((name, self.path))
        data = f.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        headers = BODIES / f"{name}.headers.json"  # response headers sent with the body
        for k, v in (json.loads(headers.read_text()) if headers.is_file() else {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class Stub(_Server):
    def __init__(self):
        super().__init__(_StubHandler)
        self.served: list[tuple[str, str]] = []


class _ReceiverHandler(_Quiet):
    def do_POST(self):
        name = self.path.lstrip("/").split("/", 1)[0]
        line = traces_json_line(self._body())
        owner = self.server.owner
        with owner.lock:
            owner.out.mkdir(parents=True, exist_ok=True)
            with open(owner.out / f"{name}.jsonl", "a") as fh:
                fh.write(line + "\n")
        self._send(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")


class Receiver(_Server):
    def __init__(self, out: Path):
        super().__init__(_ReceiverHandler)
        self.out = out
        self.lock = threading.Lock()
