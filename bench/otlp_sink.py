"""A loopback OTLP/HTTP sink for the tracing bench (bench/run.sh, ONLY=tracing): answers every
POST /v1/traces with an empty ExportTraceServiceResponse (zero bytes are a valid protobuf message)
and counts exports and bytes; it does not decode (the tests decode with opentelemetry-proto).

Usage: otlp_sink.py COUNT_FILE   prints its port on the first line; on SIGTERM writes
"exports bytes" to COUNT_FILE.
"""
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

count_path = sys.argv[1]
totals = [0, 0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        totals[0] += 1
        totals[1] += length
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format, *args):
        pass


def stop(*_):
    with open(count_path, "w") as f:
        f.write(f"{totals[0]} {totals[1]}\n")
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
