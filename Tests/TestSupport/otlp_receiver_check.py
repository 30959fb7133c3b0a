"""A self-test of otlp_receiver.py (a second or two): starts it, sends it what an OTLP/HTTP exporter sends and what a
broken one might, and checks its answers and files against the OTLP specification.

Usage: .local/venv/bin/python3 Tests/TestSupport/otlp_receiver_check.py   (needs opentelemetry-proto: ops/install.sh)
Prints one line per check and exits 1 when one fails.
"""
import base64
import gzip
import http.client
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
failures = []


def check(condition, what):
    print(f"{'ok  ' if condition else 'FAIL'} {what}")
    if not condition:
        failures.append(what)


def attribute(key, value):
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    if isinstance(value, list):
        return KeyValue(key=key, value=AnyValue(array_value={"values": [attribute("", v).value for v in value]}))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def export(trace_byte):
    """A request with a server span and its client child, as an instrumented API process sends them."""
    trace_id = bytes([trace_byte]) * 16
    server = Span(trace_id=trace_id, span_id=b"\x01" * 8, name="POST /api/mobile/v1/chat", kind=Span.SPAN_KIND_SERVER,
                  start_time_unix_nano=1_700_000_000_000_000_000, end_time_unix_nano=1_700_000_000_500_000_000,
                  attributes=[attribute("http.request.method", "POST"), attribute("http.response.status_code", 202),
                              attribute("sampled.ratio", 0.5), attribute("retried", False), attribute("queues", ["ai", "default"])],
                  status=Status(code=Status.STATUS_CODE_OK))
    client = Span(trace_id=trace_id, span_id=b"\x02" * 8, parent_span_id=b"\x01" * 8, name="POST", kind=Span.SPAN_KIND_CLIENT,
                  start_time_unix_nano=1_700_000_000_100_000_000, end_time_unix_nano=1_700_000_000_400_000_000,
                  status=Status(code=Status.STATUS_CODE_ERROR, message="503 from the model"),
                  links=[Span.Link(trace_id=b"\x09" * 16, span_id=b"\x08" * 8)], events=[Span.Event(name="exception")])
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource={"attributes": [attribute("service.name", "carbscan-api"), attribute("deployment.environment.name", "test")]},
        scope_spans=[ScopeSpans(scope={"name": "carbscan"}, spans=[server, client])])])


def post(port, body, content_type="application/x-protobuf", path="/v1/traces", method="POST", headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def rpc_status(body, json_encoded=False):
    """(code, message) of a google.rpc.Status, read without googleapis-common-protos: its schema is fields 1 and 2."""
    from otlp_receiver import RPCStatus
    status = json_format.Parse(body, RPCStatus()) if json_encoded else RPCStatus.FromString(body)
    return status.code, status.message


def lines(directory, name):
    path = os.path.join(directory, name)
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def main():
    directory = tempfile.mkdtemp(prefix="otlp-receiver-check-")
    receiver = subprocess.Popen([sys.executable, os.path.join(HERE, "otlp_receiver.py"), directory], stdout=subprocess.PIPE, text=True)
    try:
        words = receiver.stdout.readline().split()
        check(len(words) == 2 and words[0] == "port", f"announces its port: {words}")
        port = int(words[1])

        status, headers, body = post(port, export(0xA1).SerializeToString())
        check(status == 200 and headers["Content-Type"] == "application/x-protobuf", f"protobuf: 200 protobuf ({status})")
        check(ExportTraceServiceResponse.FromString(body) == ExportTraceServiceResponse(), "protobuf: an empty ExportTraceServiceResponse")
        spans = lines(directory, "spans.jsonl")
        check(len(spans) == 2, f"protobuf: two span lines ({len(spans)})")
        server, client = spans[0], spans[1]
        check(server["trace_id"] == "a1" * 16 and server["span_id"] == "01" * 8 and server["parent_span_id"] == "", "ids in hex, root's parent empty")
        check(client["parent_span_id"] == "01" * 8, "the child's parent is the server span")
        check((server["kind"], client["kind"]) == ("SERVER", "CLIENT"), f"kinds without prefix: {server['kind']}, {client['kind']}")
        check(server["service"] == "carbscan-api" and server["resource"]["deployment.environment.name"] == "test", "service and resource")
        check(server["attributes"] == {"http.request.method": "POST", "http.response.status_code": 202, "sampled.ratio": 0.5,
                                       "retried": False, "queues": ["ai", "default"]}, f"attributes as JSON values: {server['attributes']}")
        check((server["status"], client["status"], client["status_message"]) == ("OK", "ERROR", "503 from the model"), "status")
        check(server["start_ns"] == 1_700_000_000_000_000_000 and server["end_ns"] == 1_700_000_000_500_000_000, "times in ns")
        check(client["links"] == [{"trace_id": "09" * 16, "span_id": "08" * 8, "attributes": {}}] and client["events"] == ["exception"],
              "links and events")
        check(server["scope"] == "carbscan", "scope name")

        status, headers, body = post(port, gzip.compress(export(0xA2).SerializeToString()), headers={"Content-Encoding": "gzip"})
        check(status == 200 and len(lines(directory, "spans.jsonl")) == 4, f"gzip'd protobuf: 200 and two more spans ({status})")

        document = json_format.MessageToDict(export(0xA3))  # protobuf's JSON mapping: base64 ids, enum names
        for resource_spans in document["resourceSpans"]:
            for span in resource_spans["scopeSpans"][0]["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex().upper()  # OTLP/JSON: hex, any case
                span["kind"] = Span.SpanKind.Value(span["kind"])
                span["status"]["code"] = Status.StatusCode.Value(span["status"].get("code", "STATUS_CODE_UNSET"))
                for link in span.get("links", []):
                    link["traceId"], link["spanId"] = (base64.b64decode(link[k]).hex() for k in ("traceId", "spanId"))
        status, headers, body = post(port, json.dumps(document).encode(), "application/json", headers={"Authorization": "Bearer s3cret"})
        check(status == 200 and headers["Content-Type"] == "application/json" and json.loads(body) == {}, f"JSON: 200 {{}} ({status} {body!r})")
        spans = lines(directory, "spans.jsonl")
        check(len(spans) == 6 and spans[4]["trace_id"] == "a3" * 16 and spans[5]["parent_span_id"] == "01" * 8, "JSON: hex ids read")
        check(spans[4]["kind"] == "SERVER" and spans[4]["attributes"]["http.response.status_code"] == 202, "JSON: kind and int attribute")
        record = lines(directory, "requests.jsonl")[-1]
        check(record["headers"].get("authorization") == "[redacted]" and "s3cret" not in open(os.path.join(directory, "requests.jsonl")).read(),
              "the Authorization value never reaches the files")
        check(record["deviations"] == [] and record["spans"] == 2 and record["content_type"] == "application/json", f"JSON request record: {record}")

        deviant = json.loads(json.dumps(document))
        deviant["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = "SPAN_KIND_SERVER"
        status, _, _ = post(port, json.dumps(deviant).encode(), "application/json")
        record = lines(directory, "requests.jsonl")[-1]
        check(status == 200 and len(record["deviations"]) == 1 and "enum" in record["deviations"][0], f"an enum name: 200, noted {record['deviations']}")

        snake = json.loads(json.dumps(document))
        snake["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["trace_id"] = snake["resourceSpans"][0]["scopeSpans"][0]["spans"][0].pop("traceId")
        status, headers, body = post(port, json.dumps(snake).encode(), "application/json")
        check(status == 400 and "traceId is 0 bytes" in rpc_status(body, True)[1], f"trace_id (snake case) ignored, so no trace id: 400 ({body!r})")

        written = len(lines(directory, "spans.jsonl"))
        status, headers, body = post(port, b"garbage")
        check(status == 400 and headers["Content-Type"] == "application/x-protobuf", f"garbage protobuf: 400 ({status})")
        code, message = rpc_status(body)
        check(code == 3 and "not a protobuf" in message, f"garbage protobuf: a Status, INVALID_ARGUMENT: {message!r}")
        status, headers, body = post(port, b"{not json", "application/json")
        check(status == 400 and headers["Content-Type"] == "application/json" and "not JSON" in rpc_status(body, True)[1], "garbage JSON: 400, JSON Status")
        status, _, body = post(port, b"\x1f\x8b garbage", headers={"Content-Encoding": "gzip"})
        check(status == 400 and "gzip" in rpc_status(body)[1], f"garbage gzip: 400 ({status})")
        bad_id = export(0xA4)
        bad_id.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01" * 4
        status, _, body = post(port, bad_id.SerializeToString())
        check(status == 400 and "spanId is 4 bytes" in rpc_status(body)[1], f"a 4-byte span id: 400 ({rpc_status(body)})")
        zero = export(0xA4)
        zero.resource_spans[0].scope_spans[0].spans[1].trace_id = bytes(16)
        status, _, _ = post(port, zero.SerializeToString())
        check(status == 400, f"an all-zero trace id: 400 ({status})")
        check(len(lines(directory, "spans.jsonl")) == written, "no span of a refused request is written")

        status, headers, body = post(port, b"{}", "text/plain")
        check(status == 415 and rpc_status(body)[1].startswith("Content-Type"), f"text/plain: 415 ({status})")
        status, headers, _ = post(port, b"", headers={"Content-Encoding": "br"})
        check(status == 415 and headers["Accept-Encoding"] == "gzip", f"Content-Encoding br: 415 naming gzip ({status})")
        status, headers, body = post(port, None, method="GET")
        check(status == 405 and headers["Allow"] == "POST" and rpc_status(body)[0] == 12, f"GET: 405 Allow: POST ({status})")
        for path in ("/v1/metrics", "/v1/logs", "/"):
            status, _, _ = post(port, export(0xA5).SerializeToString(), path=path)
            check(status == 404, f"{path}: 404 ({status})")
        status, _, _ = post(port, b"")
        check(status == 200, f"an empty export (no spans): 200 ({status})")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.putrequest("POST", "/v1/traces")  # the headers alone: the receiver answers before any body
        connection.putheader("Content-Type", "application/x-protobuf")
        connection.putheader("Content-Length", str(20 * 1024 * 1024 + 1))
        connection.endheaders()
        status = connection.getresponse().status
        connection.close()
        check(status == 413, f"a body over 20 MiB: 413 ({status})")
        status, _, _ = post(port, gzip.compress(b"\x00" * (20 * 1024 * 1024 + 1)), headers={"Content-Encoding": "gzip"})
        check(status == 413, f"a gzip body inflating over 20 MiB: 413 ({status})")

        records = lines(directory, "requests.jsonl")
        check([r["status"] for r in records][:3] == [200, 200, 200] and records[0]["headers"]["user-agent"].startswith("Python-urllib"),
              "requests.jsonl: statuses and headers")
        check(receiver.poll() is None, "still running after every bad request")
    finally:
        receiver.terminate()
        receiver.wait()
    print(f"otlp_receiver_check: {len(failures)} failed" if failures else "otlp_receiver_check: all pass")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
