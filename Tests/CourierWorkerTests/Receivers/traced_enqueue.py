"""An application traced with the official OpenTelemetry Python SDK (PyPI: opentelemetry-sdk)
that enqueues two jobs through psycopg inside one span, as a web request handler would:
one passing its W3C traceparent to courier.enqueue, one through the transaction-local
setting courier.traceparent (set_config(..., true) is `set local` with a bound value).

Usage: traced_enqueue.py DATABASE_URL URL_BY_PARAMETER URL_BY_SETTING
Prints one JSON line: the span's trace_id and span_id (hex), its traceparent, and the job ids.
"""
import json
import sys

import psycopg
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

database_url, url_by_parameter, url_by_setting = sys.argv[1:4]
tracer = TracerProvider().get_tracer("courier-test-app")
propagator = TraceContextTextMapPropagator()

with psycopg.connect(database_url) as db:
    with tracer.start_as_current_span("checkout") as span:
        carrier = {}
        propagator.inject(carrier)
        traceparent = carrier["traceparent"]
        with db.transaction():
            by_parameter = db.execute(
                "select courier.enqueue(url => %s, traceparent => %s, tracestate => %s)",
                (url_by_parameter, traceparent, "app=checkout")).fetchone()[0]
        with db.transaction():
            db.execute("select set_config('courier.traceparent', %s, true)", (traceparent,))
            by_setting = db.execute("select courier.enqueue(url => %s)", (url_by_setting,)).fetchone()[0]
        context = span.get_span_context()
        print(json.dumps({
            "trace_id": format(context.trace_id, "032x"),
            "span_id": format(context.span_id, "016x"),
            "traceparent": traceparent,
            "jobs": [by_parameter, by_setting],
        }))
