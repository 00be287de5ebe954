"""The one exception type of rdmastor, and its construction from native and HTTP errors."""

import re
import xml.etree.ElementTree as ET

_SERVER = re.compile(r"^S3 (\S+) \(HTTP (\d+)\)")
_REQUEST_ID = re.compile(r"request-id ([^\],\s]+)")


class S3Error(Exception):
    """An S3 error answered by the server, or a client-side failure (then ``status`` is None).

    Attributes: ``code`` (S3 error code text, e.g. "NoSuchKey"), ``status`` (HTTP status or None
    when no response came), ``request_id`` (the server's x-amz-request-id, or None), ``message``.
    """

    def __init__(self, message, code="InternalError", status=None, request_id=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id

    def __repr__(self):
        return (f"S3Error(code={self.code!r}, status={self.status!r}, "
                f"request_id={self.request_id!r}, message={self.message!r})")


def from_native(code, table_status, message):
    """Called by the native module for every library Error."""
    m = _SERVER.match(message)
    rid = _REQUEST_ID.search(message)
    if m:
        return S3Error(message, code=m.group(1), status=int(m.group(2)),
                       request_id=rid.group(1) if rid else None)
    # Not an answer from the server (connect/timeout/usage): the code from the table, no status.
    return S3Error(message, code=code, status=None, request_id=None)


def from_response(status, headers, body, what):
    """An S3Error from an error response of a control request (listing, HEAD, multipart)."""
    code, msg, rid = None, "", headers.get("x-amz-request-id")
    if body:
        try:
            root = ET.fromstring(body)
            if root.tag.split("}")[-1] == "Error":
                code = root.findtext("Code")
                msg = root.findtext("Message") or ""
                rid = root.findtext("RequestId") or rid
        except ET.ParseError:
            pass
    if not code:
        code = {403: "AccessDenied", 404: "NoSuchKey", 412: "PreconditionFailed",
                416: "InvalidRange", 501: "NotImplemented", 503: "SlowDown"}.get(status, "UnknownError")
    text = f"S3 {code} (HTTP {status}): {msg} [{what}" + (f", request-id {rid}" if rid else "") + "]"
    return S3Error(text, code=code, status=status, request_id=rid)
