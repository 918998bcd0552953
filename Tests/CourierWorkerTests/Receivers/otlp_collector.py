"""A loopback OTLP/HTTP trace collector that decodes every export with the official
opentelemetry-proto package (PyPI: opentelemetry-proto), not a parser of our own.

Usage:
  otlp_collector.py LOG_PATH [STATUS]   serve on 127.0.0.1; print the port on the first line,
                                        then append one JSON line per received span to LOG_PATH;
                                        answer STATUS (default 200) to every export.
  otlp_collector.py --decode FILE       decode FILE (an ExportTraceServiceRequest body) and print
                                        its spans, one JSON line each.
Each span line: trace_id, span_id, parent_span_id (hex, "" when none), trace_state, name, kind,
start/end times, attributes, events, links, status, flags, resource attributes, scope, and the
export request's headers.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(any_value):
    kind = any_value.WhichOneof("value")
    return None if kind is None else getattr(any_value, kind)


def attributes(key_values):
    return {kv.key: value(kv.value) for kv in key_values}


def spans_of(body, headers=None):
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "trace_state": span.trace_state,
                    "name": span.name,
                    "kind": span.kind,
                    "start_time_unix_nano": span.start_time_unix_nano,
                    "end_time_unix_nano": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "events": [{"name": e.name, "time_unix_nano": e.time_unix_nano, "attributes": attributes(e.attributes)}
                               for e in span.events],
                    "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex(), "trace_state": l.trace_state,
                               "attributes": attributes(l.attributes), "flags": l.flags} for l in span.links],
                    "status": {"code": span.status.code, "message": span.status.message},
                    "flags": span.flags,
                    "resource": resource,
                    "scope": {"name": scope_spans.scope.name, "version": scope_spans.scope.version},
                    "headers": headers or {},
                }


if sys.argv[1] == "--decode":
    with open(sys.argv[2], "rb") as f:
        for line in spans_of(f.read()):
            print(json.dumps(line))
    sys.exit(0)

log_path = sys.argv[1]
status = int(sys.argv[2]) if len(sys.argv) > 2 else 200
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        lines = [json.dumps(span) for span in spans_of(body, headers)] if status == 200 else []
        with lock:
            with open(log_path, "a") as f:
                for line in lines:
                    f.write(line + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
