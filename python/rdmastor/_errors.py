"""rdmastor's exceptions, built from the fields the native layer passes (never from its text).

    S3Error                  the server answered with an error: code, status, message, request_id
    ConnectionError          no answer came (a builtins.ConnectionError, as botocore's are):
      EndpointConnectionError  the connection could not be made (nothing was sent)
      ConnectTimeoutError      ... within connect_timeout
      ConnectionClosedError    the connection broke after the request went out
      ReadTimeoutError         no answer within io_timeout
    BufferTooSmallError      the object (or range) is larger than the caller's buffer or slot
                             (a ValueError: a caller mistake, found out from the server)
    RDMATransportError       this client's own RDMA transport failed before the request reached
                             the server (its device is gone or its port down, its RC connection
                             could not be made): ``step`` names what failed
"""

import builtins
import xml.etree.ElementTree as ET


class S3Error(Exception):
    """An error the server answered (then ``status`` is its HTTP status), or a failure of the
    client library that is neither a connection problem nor a caller mistake (``status`` None).

    Attributes: ``code`` (S3 error code text, e.g. "NoSuchKey"), ``status``, ``message`` (the
    server's <Message>), ``request_id`` (x-amz-request-id / <RequestId>), ``fields`` (every
    element of the error document, e.g. {"Resource": ...}), ``operation`` ("GET /b/k")."""

    def __init__(self, message, code="InternalError", status=None, request_id=None,
                 fields=None, operation=None, text=None):
        super().__init__(text or message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.fields = dict(fields or {})
        self.operation = operation

    def __repr__(self):
        return (f"S3Error(code={self.code!r}, status={self.status!r}, "
                f"request_id={self.request_id!r}, message={self.message!r})")


class ConnectionError(builtins.ConnectionError):  # noqa: A001  (botocore's name, on purpose)
    """No answer from the endpoint (botocore.exceptions.ConnectionError's counterpart); a
    builtins.ConnectionError, so ``except ConnectionError`` / ``except OSError`` catch it too.
    ``endpoint``: the URL; ``message``: what failed."""

    def __init__(self, message, endpoint=None):
        super().__init__(message)
        self.message = message
        self.endpoint = endpoint
        self.code = type(self).__name__
        self.status = None
        self.request_id = None


class EndpointConnectionError(ConnectionError):
    """The connection to the endpoint could not be made (refused, unreachable): nothing was
    sent, so any call may be retried."""


class ConnectTimeoutError(EndpointConnectionError):
    """The connection was not made within connect_timeout."""


class ConnectionClosedError(ConnectionError):
    """The connection broke (reset, closed) after the request went out."""


class ReadTimeoutError(ConnectionError):
    """No (complete) answer within io_timeout."""


class RDMATransportError(Exception):
    """This client's RDMA transport failed locally: nothing reached the server. ``step``: "open
    device", "resolve address", "resolve route", "connect" or "register memory"; ``message``:
    what failed (naming the server's address). rdma="auto" redoes such a call over HTTP and
    tries RDMA again on the next one (the device may be back: a removed device is reopened)."""

    def __init__(self, message, step=None):
        super().__init__(message)
        self.message = message
        self.step = step
        self.code = "RDMATransportError"
        self.status = None
        self.request_id = None


class BufferTooSmallError(ValueError):
    """The object (or range) does not fit the caller's buffer or batch slot; nothing was read
    past it. ``needed`` (bytes the object or range has, when known), ``capacity`` (bytes the
    buffer or slot offers), ``key``, ``index`` (get_batch_into: the failing key's position)."""

    def __init__(self, message, needed=None, capacity=None, key=None, index=None):
        super().__init__(message)
        self.needed, self.capacity, self.key, self.index = needed, capacity, key, index


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def from_native(code, text, fields, batch_done=None):
    """Called by the native module for every library Error: `code` is the library's code text,
    `fields` its details (rdmastor/s3_client.h, rdmastor/http_transport.h)."""
    stage = fields.get("ClientFailure")
    if "RDMAStep" in fields:
        exc = RDMATransportError(text, step=fields["RDMAStep"])
    elif stage is not None:
        timeout = code == "RequestTimeout"
        if stage == "connect":
            cls = ConnectTimeoutError if timeout else EndpointConnectionError
        else:
            cls = ReadTimeoutError if timeout else ConnectionClosedError
        exc = cls(text)
    elif "BufferBytes" in fields:
        # The server's 501 for a GET whose object does not fit the token's buffer (RequestedBytes),
        # or the HTTP client's refusal of a body larger than the buffer (ResponseBytes).
        needed = _int(fields.get("RequestedBytes") or fields.get("ResponseBytes"))
        cap = _int(fields["BufferBytes"])
        exc = BufferTooSmallError(
            f"the object's {needed} bytes do not fit the buffer's {cap}" if needed is not None
            else f"the object does not fit the buffer's {cap} bytes", needed, cap)
    elif "HTTPStatus" in fields:
        exc = S3Error(fields.get("Message", ""), code=fields.get("Code") or code,
                      status=_int(fields["HTTPStatus"]), request_id=fields.get("RequestId"),
                      fields=fields, text=text)
    elif code == "InvalidArgument":
        exc = ValueError(text)
    else:
        exc = S3Error(text, code=code, status=None)
    if batch_done is not None:
        exc.batch_done = batch_done
    return exc


_STATUS_CODES = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
                 412: "PreconditionFailed", 416: "InvalidRange", 500: "InternalError",
                 501: "NotImplemented", 503: "SlowDown"}


def from_response(status, headers, body, what):
    """An S3Error from an error response of a control request (listing, HEAD, multipart): the
    error document's elements, or (no document: HEAD) the status, as botocore reports it."""
    fields, rid = {}, headers.get("x-amz-request-id")
    if body:
        try:
            root = ET.fromstring(body)
            if root.tag.split("}")[-1] == "Error":
                fields = {c.tag.split("}")[-1]: (c.text or "") for c in root}
        except ET.ParseError:
            pass
    code = fields.get("Code") or _STATUS_CODES.get(status, str(status))
    msg = fields.get("Message") or (_STATUS_CODES.get(status, "") if not fields else "")
    rid = fields.get("RequestId") or rid
    text = f"S3 {code} (HTTP {status}): {msg} [{what}" + (f", request-id {rid}" if rid else "") + "]"
    return S3Error(msg, code=code, status=status, request_id=rid, fields=fields, operation=what,
                   text=text)
