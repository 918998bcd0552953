"""A webhook receiver on loopback that verifies every delivery with the official
Standard Webhooks library (PyPI: standardwebhooks), as a partner's server would.

Usage: signed_receiver.py LOG_PATH SECRET [SECRET...]
Prints its port on the first line of standard output, then serves until killed.
Each request appends one JSON line to LOG_PATH: the path, the webhook-* headers,
the body as text, and for each SECRET whether it alone verifies the delivery.
A path /fail-N/... answers 500 to the first N deliveries of each webhook-id and 200
after; any other path answers 200.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

log_path = sys.argv[1]
verifiers = [Webhook(secret) for secret in sys.argv[2:]]
lock = threading.Lock()
deliveries = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        verified = []
        for verifier in verifiers:
            try:
                verifier.verify(body, headers, json_parse=False)
                verified.append(True)
            except (WebhookVerificationError, ValueError):
                verified.append(False)
        webhook_id = headers.get("webhook-id")
        with lock:
            count = deliveries.get((self.path, webhook_id), 0)
            deliveries[(self.path, webhook_id)] = count + 1
            status = 200
            parts = self.path.split("/")
            if len(parts) > 1 and parts[1].startswith("fail-") and count < int(parts[1][5:]):
                status = 500
            record = {
                "path": self.path,
                "webhook_headers": {k: v for k, v in headers.items() if k.startswith("webhook-")},
                "body": body.decode("utf-8"),
                "verified": verified,
                "status": status,
            }
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = handle_one
    do_PUT = handle_one
    do_GET = handle_one

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
