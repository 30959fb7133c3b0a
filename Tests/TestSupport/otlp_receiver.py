"""A local OpenTelemetry collector endpoint for the tests: OTLP/HTTP traces as the OTLP specification defines them
(https://opentelemetry.io/docs/specs/otlp/#otlphttp), decoded with the OpenTelemetry project's own generated types
(`opentelemetry-proto` and `protobuf`, from PyPI). Plain HTTP/1.1, no TLS, as a collector's 4318 port answers.

Usage: python3 otlp_receiver.py DIR
Prints "port PORT" once it listens on a free loopback port; exits when the process that started it is gone.

  POST /v1/traces  an ExportTraceServiceRequest, `Content-Type: application/x-protobuf` (binary) or
      `application/json` (OTLP/JSON: lowerCamelCase keys, hex trace and span ids, enum values as integers; a field
      of another name is ignored as unknown, as the spec requires), optionally `Content-Encoding: gzip`.
      200 with an ExportTraceServiceResponse (partial_success unset) in the request's encoding.
  Failures answer a google.rpc.Status (code and message) in the request's encoding (binary unless it was JSON):
      400  a body that does not decode (protobuf, JSON, gzip), or a span whose trace id is not 16 bytes or whose
           span id (or a parent or link id) is not 8, or all zero
      404  another path (/v1/metrics and /v1/logs too: CarbScan exports traces only)
      405  another method on /v1/traces (with `Allow: POST`)
      413  a body over 20 MiB, before or after decompression (the spec's recommended limit)
      415  another Content-Type, or a Content-Encoding other than gzip or identity (with `Accept-Encoding: gzip`)
      500  only for a bug of the receiver's own (recorded like the others)
  A test may script refusals, as a collector under load or one that rejects a batch answers: each line of
  DIR/refusals ("STATUS" or "STATUS RETRY_AFTER_SECONDS") answers one valid export in turn, with that status, a
  Status whose message is "refused as the test asked", and Retry-After when given; its spans are not kept.
  DIR/spans.jsonl  one line per span received, written before the 200 is sent: trace_id, span_id, parent_span_id
      (lowercase hex, "" for a root span), name, kind (SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL, UNSPECIFIED),
      service (the resource's service.name, null without one), scope (the instrumentation scope's name), resource and
      attributes (flat objects: strings, integers, doubles and booleans as JSON scalars, arrays as lists, key-value
      lists as objects, bytes as base64), status (UNSET, OK, ERROR), status_message, start_ns, end_ns,
      links ([{trace_id, span_id, attributes}]) and events (their names).
  DIR/requests.jsonl  one line per request: path, method, content_type, content_encoding, status (answered), spans
      (how many it carried), error (the Status message, null on success), deviations (OTLP/JSON rules the sender
      broke that the receiver tolerates, such as enum names for integers) and headers (lowercase names; the value of
      Authorization and Proxy-Authorization replaced by "[redacted]").
"""
import base64
import json
import math
import os
import re
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import descriptor, descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MAX_BODY = 20 * 1024 * 1024
PROTOBUF, JSON = "application/x-protobuf", "application/json"
# Bytes fields that OTLP/JSON writes in hex instead of protobuf's base64: every trace and span id.
HEX_FIELDS = {"trace_id", "span_id", "parent_span_id"}
REDACTED_HEADERS = {"authorization", "proxy-authorization"}
directory = None
write_lock = threading.Lock()


def status_class():
    """google.rpc.Status (code, message; details left out: this receiver sends none), built from its descriptor
    in a pool of its own rather than taken from googleapis-common-protos, one dependency less."""
    file = descriptor_pb2.FileDescriptorProto(name="google/rpc/status.proto", package="google.rpc", syntax="proto3")
    status = file.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                     label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL, json_name="code")
    status.field.add(name="message", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                     label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL, json_name="message")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("google.rpc.Status"))


RPCStatus = status_class()
# gRPC codes for the Status.code field (the spec lets clients ignore it; collectors set it).
RPC_CODES = {400: 3, 404: 5, 405: 12, 413: 8, 415: 12, 500: 13}


class Refused(Exception):
    def __init__(self, status, message, headers=()):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, list(headers)


def is_repeated(field):
    if hasattr(field, "is_repeated"):  # protobuf 6.31+; `label` is gone in 7
        return field.is_repeated
    return field.label == descriptor.FieldDescriptor.LABEL_REPEATED


def otlp_json_to_proto3_json(value, message_descriptor, where, deviations):
    """OTLP/JSON as protobuf's own JSON mapping reads it: hex ids to base64, keys that are not a field's
    lowerCamelCase name dropped (the spec makes original field names invalid keys, and unknown keys are ignored)."""
    if not isinstance(value, dict):
        raise Refused(400, f"{where or 'the body'}: a JSON object expected")
    fields = {field.json_name: field for field in message_descriptor.fields}
    names = {field.name for field in message_descriptor.fields}
    converted = {}
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            if key in names:
                deviations.append(f"{where}{key}: a proto field name, not lowerCamelCase (ignored as unknown)")
            continue
        if item is None:
            continue
        path = f"{where}{key}"
        items = item if is_repeated(field) else [item]
        if is_repeated(field) and not isinstance(item, list):
            raise Refused(400, f"{path}: a JSON array expected")
        out = []
        for index, element in enumerate(items):
            at = f"{path}[{index}]." if is_repeated(field) else f"{path}."
            if field.message_type is not None:
                element = otlp_json_to_proto3_json(element, field.message_type, at, deviations)
            elif field.name in HEX_FIELDS and field.type == descriptor.FieldDescriptor.TYPE_BYTES:
                if not isinstance(element, str) or not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", element):
                    # protobuf's own JSON mapping writes bytes in base64; OTLP/JSON (and the Collector) want hex.
                    raise Refused(400, f"{path}: not a hex string: {str(element)[:64]!r} (OTLP/JSON ids are hex, not base64)")
                element = base64.b64encode(bytes.fromhex(element)).decode()
            elif field.enum_type is not None and isinstance(element, str):
                deviations.append(f"{path}: enum value as the name {element[:64]!r}, not an integer")
            out.append(element)
        converted[key] = out if is_repeated(field) else out[0]
    return converted


def decode(body, content_type, deviations):
    if content_type == PROTOBUF:
        try:
            return ExportTraceServiceRequest.FromString(body)
        except (DecodeError, RuntimeError) as error:
            raise Refused(400, f"the body is not a protobuf ExportTraceServiceRequest: {error}")
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise Refused(400, f"the body is not JSON: {error}")
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(otlp_json_to_proto3_json(document, request.DESCRIPTOR, "", deviations), request)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as error:
        raise Refused(400, f"the body is not an OTLP/JSON ExportTraceServiceRequest: {error}")
    return request


def check_id(value, length, where, optional=False):
    if optional and not value:
        return
    if len(value) != length:
        raise Refused(400, f"{where} is {len(value)} bytes, not {length}")
    if not any(value):
        raise Refused(400, f"{where} is all zero (an invalid id)")


def any_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return flat(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if kind == "double_value" and not math.isfinite(value.double_value):
        return str(value.double_value)  # JSON has no NaN or infinity
    return getattr(value, kind) if kind else None


def flat(attributes):
    return {attribute.key: any_value(attribute.value) for attribute in attributes}


def enum_name(enum, value, prefix):
    try:
        return enum.Name(value).removeprefix(prefix)
    except ValueError:  # a value newer than these generated types
        return str(value)


def records(request):
    """One record per span, checking every id first: a request with a bad one is refused whole."""
    out = []
    for r, resource_spans in enumerate(request.resource_spans):
        resource = flat(resource_spans.resource.attributes)
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            for p, span in enumerate(scope_spans.spans):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{p}]"
                check_id(span.trace_id, 16, f"{where}.traceId")
                check_id(span.span_id, 8, f"{where}.spanId")
                check_id(span.parent_span_id, 8, f"{where}.parentSpanId", optional=True)
                for l, link in enumerate(span.links):
                    check_id(link.trace_id, 16, f"{where}.links[{l}].traceId")
                    check_id(link.span_id, 8, f"{where}.links[{l}].spanId")
                out.append({
                    "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(), "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name, "kind": enum_name(Span.SpanKind, span.kind, "SPAN_KIND_"),
                    "service": resource.get("service.name"), "scope": scope_spans.scope.name,
                    "resource": resource, "attributes": flat(span.attributes),
                    "status": enum_name(Status.StatusCode, span.status.code, "STATUS_CODE_"), "status_message": span.status.message,
                    "start_ns": span.start_time_unix_nano, "end_ns": span.end_time_unix_nano,
                    "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(), "attributes": flat(link.attributes)}
                              for link in span.links],
                    "events": [event.name for event in span.events],
                })
    return out


def append(name, lines):
    # One write per request under a lock: lines of concurrent requests never interleave.
    with write_lock, open(os.path.join(directory, name), "a") as file:
        file.write("".join(json.dumps(line) + "\n" for line in lines))


def next_refusal():
    """The first line of DIR/refusals, taken out of it; None when there is none."""
    path = os.path.join(directory, "refusals")
    with write_lock:
        try:
            with open(path) as file:
                lines = file.read().splitlines()
        except FileNotFoundError:
            return None
        if not lines:
            return None
        with open(path, "w") as file:
            file.write("".join(line + "\n" for line in lines[1:]))
        return lines[0]


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as OTLP clients expect
    server_version = "otlp_receiver"
    timeout = 60

    def log_message(self, format, *args):
        pass  # requests.jsonl is the log

    def read_body(self):
        """The raw body (Content-Length or chunked), or Refused 413 past MAX_BODY (the connection is then closed)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(8192).strip():
                        pass  # trailers
                    return body
                if len(body) + size > MAX_BODY:
                    self.close_connection = True
                    raise Refused(413, f"the body is over {MAX_BODY} bytes")
                body += self.rfile.read(size)
                self.rfile.readline(8)
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        if length > MAX_BODY:
            self.close_connection = True
            raise Refused(413, f"the body is {length} bytes, over {MAX_BODY}")
        return self.rfile.read(length)

    def handle_request(self):
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        headers = {}
        for name, value in self.headers.items():
            value = "[redacted]" if name.lower() in REDACTED_HEADERS else value
            headers[name.lower()] = f"{headers[name.lower()]}, {value}" if name.lower() in headers else value
        record = {"path": self.path.split("?", 1)[0], "method": self.command, "content_type": self.headers.get("Content-Type"),
                  "content_encoding": self.headers.get("Content-Encoding"), "status": 200, "spans": 0, "error": None,
                  "deviations": [], "headers": headers}
        answer_type = JSON if content_type == JSON else PROTOBUF
        try:
            spans = self.receive(record["path"], content_type, record["deviations"])
            append("spans.jsonl", spans)
            record["spans"] = len(spans)
            answer, extra = ExportTraceServiceResponse(), []
        except Exception as error:
            refused = error if isinstance(error, Refused) else Refused(500, f"the receiver failed: {error!r}")
            record.update(status=refused.status, error=refused.message)
            answer, extra = RPCStatus(code=RPC_CODES.get(refused.status, 2), message=refused.message), refused.headers
        # On disk before the answer: a client that has its 200 finds its spans in the files.
        append("requests.jsonl", [record])
        data = json_format.MessageToJson(answer).encode() if answer_type == JSON else answer.SerializeToString()
        self.answer(record["status"], answer_type, data, extra)

    def receive(self, path, content_type, deviations):
        """The span records of a valid export, or Refused as the OTLP spec has a server refuse it."""
        try:
            body = self.read_body()
        except (ValueError, OSError) as error:
            self.close_connection = True
            raise Refused(400, f"the body cannot be read: {error}")
        if path != "/v1/traces":
            raise Refused(404, f"no {path} here: this receiver takes traces only, at /v1/traces")
        if self.command != "POST":
            raise Refused(405, f"{self.command} is not allowed: OTLP/HTTP exports are POSTs", [("Allow", "POST")])
        refusal = next_refusal()
        if refusal:
            status, *retry = refusal.split()
            raise Refused(int(status), "refused as the test asked", [("Retry-After", retry[0])] if retry else [])
        if content_type not in (PROTOBUF, JSON):
            raise Refused(415, f"Content-Type {self.headers.get('Content-Type')!r} is neither {PROTOBUF} nor {JSON}")
        encoding = self.headers.get("Content-Encoding", "").strip().lower()
        if encoding == "gzip":
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            try:
                body = inflater.decompress(body, MAX_BODY + 1)
            except zlib.error as error:
                raise Refused(400, f"the body is not gzip: {error}")
            if len(body) > MAX_BODY or inflater.unconsumed_tail:
                raise Refused(413, f"the body inflates to over {MAX_BODY} bytes")
            if not inflater.eof:
                raise Refused(400, "the gzip body is truncated")
        elif encoding not in ("", "identity"):
            raise Refused(415, f"Content-Encoding {encoding!r} is not supported (gzip is)", [("Accept-Encoding", "gzip")])
        return records(decode(body, content_type, deviations))

    def answer(self, status, content_type, data, headers):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_POST = do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = handle_request


def exit_when_orphaned(parent):
    # A test process that dies never stops its receiver: the receiver stops when it is orphaned.
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    server.daemon_threads = True
    threading.Thread(target=exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever(poll_interval=0.5)
