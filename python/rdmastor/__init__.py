"""rdmastor: a Python client for rdmastor's S3 API, moving object bytes over RDMA.

    import rdmastor
    c = rdmastor.Client("http://127.0.0.1:9000")        # credentials like boto3 (AWS_* env, ~/.aws)
    c.put_object("bucket", "key", numpy_array_or_tensor_or_bytes)
    n = c.get_into("bucket", "key", buffer)             # straight into the caller's memory
    data = c.get_object("bucket", "key")                # bytes

Transfers run with the GIL released. A Client may be shared between threads (each thread uses
its own native connection and RDMA target) and survives fork(): a child process (a DataLoader
worker) opens its own connections on first use. See docs/python.md.
"""

import concurrent.futures
import configparser
import os
import sys
import threading
import urllib.parse
import xml.etree.ElementTree as ET

from . import _native
from ._errors import S3Error, from_response

__all__ = ["Client", "S3Error", "Transfer", "BatchTransfer", "ObjectBytes", "ObjectInfo",
           "DeviceMemoryError", "Buffer"]

Buffer = _native.Buffer

MiB = 1024 * 1024
_S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_MODES = ("auto", "soft", "verbs", "off")
_VERBS_ENV = ("MINIO_RDMA_DEVICE", "MINIO_RDMA_PORT", "MINIO_RDMA_GID_INDEX", "MINIO_RDMA_DC_KEY",
              "MINIO_RDMA_TRAFFIC_CLASS", "MINIO_RDMA_SERVICE_LEVEL", "MINIO_RDMA_PKEY_INDEX")


class Transfer(int):
    """The byte count of a transfer (an int), with how it went: ``transport`` ("rdma" or
    "http"), ``status`` (200 / 206), ``etag``, ``object_size`` (GET: the whole object's size)."""

    def __new__(cls, n, transport, status=200, etag="", object_size=None):
        self = int.__new__(cls, n)
        self.transport = transport
        self.status = status
        self.etag = etag
        self.object_size = object_size
        return self

    def __repr__(self):
        return f"Transfer({int(self)}, transport={self.transport!r}, etag={self.etag!r})"


class BatchTransfer(list):
    """get_batch_into's result: the byte count of each object, in key order (a list), with
    ``transport``: "rdma", "http", or "mixed" (some objects fell back to HTTP)."""

    def __init__(self, counts, transport):
        super().__init__(counts)
        self.transport = transport

    def __repr__(self):
        return f"BatchTransfer({list.__repr__(self)}, transport={self.transport!r})"


class ObjectBytes(bytes):
    """get_object's result: the object's bytes, with ``transport``, ``etag``, ``object_size``."""

    transport = "http"
    etag = ""
    object_size = None


class ObjectInfo:
    """One entry of list_objects: an object, or (is_prefix, with a delimiter) a common prefix."""

    __slots__ = ("key", "size", "etag", "last_modified", "is_prefix")

    def __init__(self, key, size, etag, last_modified, is_prefix=False):
        self.key, self.size, self.etag, self.last_modified = key, size, etag, last_modified
        self.is_prefix = is_prefix

    def __repr__(self):
        return f"ObjectInfo(key={self.key!r}, size={self.size})"


def _credentials(access_key, secret_key):
    """Explicit keys, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else the profile
    (AWS_PROFILE or "default") of AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials."""
    if access_key and secret_key:
        return access_key, secret_key
    ak, sk = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if ak and sk:
        return ak, sk
    path = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.expanduser("~/.aws/credentials")
    profile = os.environ.get("AWS_PROFILE", "default")
    cp = configparser.ConfigParser()
    try:
        cp.read(path)
    except configparser.Error as e:
        raise S3Error(f"cannot read {path}: {e}", code="InvalidArgument") from None
    if cp.has_section(profile):
        ak = cp.get(profile, "aws_access_key_id", fallback=None)
        sk = cp.get(profile, "aws_secret_access_key", fallback=None)
        if ak and sk:
            return ak, sk
    raise S3Error("no credentials: pass access_key/secret_key, set AWS_ACCESS_KEY_ID and "
                  f"AWS_SECRET_ACCESS_KEY, or add profile [{profile}] to {path}",
                  code="InvalidAccessKeyId")


class _DeviceBuffer:
    """CUDA device memory [ptr, ptr + nbytes) of `what` (a CUDA tensor, an object with
    __cuda_array_interface__): moved through dma-buf on the verbs fabric, or refused."""

    __slots__ = ("ptr", "nbytes", "what", "owner")

    def __init__(self, ptr, nbytes, what, owner):
        self.ptr, self.nbytes, self.what, self.owner = int(ptr), int(nbytes), what, owner


def _cuda_array(obj, cai):
    """A _DeviceBuffer from the CUDA Array Interface (version 0-3) dict `cai` of obj."""
    try:
        ptr, _readonly = cai["data"]
        shape = tuple(int(n) for n in cai["shape"])
        itemsize = int(cai["typestr"][2:])
    except (KeyError, TypeError, ValueError, IndexError):
        raise ValueError(f"rdmastor: {type(obj).__name__}.__cuda_array_interface__ is malformed: "
                         f"{cai!r}") from None
    n = 1
    for d in shape:
        n *= d
    strides = cai.get("strides")
    if strides is not None and n > 0:  # None means C-contiguous
        expect, want = itemsize, []
        for d in reversed(shape):
            want.append(expect)
            expect *= d
        if tuple(int(s) for s in strides) != tuple(reversed(want)):
            raise ValueError("rdmastor: the CUDA array is not C-contiguous")
    return _DeviceBuffer(ptr or 0, n * itemsize,
                         f"{type(obj).__name__} (CUDA device memory: __cuda_array_interface__)", obj)


def _buffer(obj, writable):
    """A C-contiguous buffer-protocol view of obj (torch tensors through their CPU storage), or a
    _DeviceBuffer for CUDA memory. Host memory comes first: an object that exports the buffer
    protocol is CPU-addressable (pinned, mapped or managed memory included), even when it also
    offers __cuda_array_interface__."""
    torch = sys.modules.get("torch")  # a tensor exists only once torch is imported
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.is_cuda:
            if not obj.is_contiguous():
                raise ValueError("rdmastor: the tensor is not contiguous (call .contiguous())")
            return _DeviceBuffer(obj.data_ptr(), obj.numel() * obj.element_size(),
                                 f"a CUDA tensor ({obj.device})", obj)
        if not obj.is_cpu:
            raise ValueError(
                f"rdmastor: a {obj.device.type} tensor cannot be a transfer buffer: only CPU "
                "memory and CUDA device memory (over verbs, through dma-buf) can; copy it to "
                "a CPU tensor first")
        if not obj.is_contiguous():
            raise ValueError("rdmastor: the tensor is not contiguous (call .contiguous())")
        t = obj.detach()
        if t.numel() == 0:
            return bytearray(0) if writable else b""
        try:  # per call: numpy's views cost less than torch's
            return t.numpy().reshape(-1).view("u1")
        except (TypeError, RuntimeError):  # no numpy dtype (bfloat16, ...)
            return t.reshape(-1).view(torch.uint8).numpy()
    try:
        memoryview(obj).release()
        return obj
    except TypeError:
        pass
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        cai = None
    if cai is not None:
        return _cuda_array(obj, cai)
    dl = getattr(obj, "__dlpack_device__", None)
    if dl is not None:
        try:
            kind, dev = dl()
        except Exception:  # not ours to judge: the buffer check below names the type
            kind = 1
        if kind != 1:  # DLPack device types: 1 = CPU, 2 = CUDA, 3 = CUDA host, 10 = ROCm, ...
            raise ValueError(f"rdmastor: {type(obj).__name__} lives on DLPack device type "
                             f"{kind} (device {dev}): only CPU memory and CUDA memory exposing "
                             "__cuda_array_interface__ can be transfer buffers")
    return obj


def _device_refusal(dev, fabric):
    """Why this binding/Client cannot move device memory, or None when it can."""
    if not _native.built_with_verbs():
        why = ("this is the standard build of rdmastor (soft fabric and HTTP only); GPU memory "
               "moves only over the verbs fabric through dma-buf: use the RDMA build "
               "(python3-rdmastor-rdma) with CUDA")
    elif not _native.cuda_built():
        why = ("this RDMA build of rdmastor was built without CUDA (cuda.h not found when it "
               "was configured), so it cannot export GPU memory as a dma-buf")
    elif fabric != "verbs":
        why = (f"this Client uses the {fabric} fabric; GPU memory moves only over verbs "
               "(rdma=\"verbs\", or \"auto\" with a usable RDMA device)")
    else:
        return None
    return (f"rdmastor: {dev.what} cannot be a transfer buffer here: {why}. rdmastor never "
            "copies device memory through the host on its own: copy it to host memory first "
            "(tensor.cpu(), cupy.asnumpy(a), a.copy_to_host()) if that is what you want")


class DeviceMemoryError(ValueError):
    """A transfer buffer in GPU memory that this binding or Client cannot reach (the message
    says why); no bytes were moved and none were copied through the host."""


def _nbytes(buf, writable):
    """The buffer's size in bytes, after checking it can take a transfer."""
    with memoryview(buf) as mv:
        if not mv.c_contiguous:
            raise ValueError("rdmastor: the buffer is not C-contiguous")
        if writable and mv.readonly:
            raise TypeError("rdmastor: the buffer is read-only")
        return mv.nbytes


class _Progress:
    """Calls the user's callback(done, total), or draws a bar on a terminal for large transfers."""

    def __init__(self, progress, total, what):
        self.cb = None
        self.total = total
        self.done = 0
        self.lock = threading.Lock()
        if callable(progress):
            self.cb = progress
        elif progress or (progress is None and total >= 64 * MiB and sys.stderr.isatty()):
            self.cb = self._bar
            self.what = what

    def _bar(self, done, total):
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r{self.what} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{done / MiB:.1f}/{total / MiB:.1f} MiB")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def add(self, n):
        if self.cb is None:
            return
        with self.lock:
            self.done += n
            self.cb(self.done, self.total)


class Client:
    """An S3 client that moves object payloads over RDMA when it can.

    endpoint: "http://host:port" (or https://). rdma: "auto" (verbs when this build has an RDMA
    device, else the soft fabric; HTTP when the server declines a request with 501), "soft",
    "verbs", or "off" (plain HTTP). allow_http_fallback: on a 501 from the server, redo the
    request over HTTP (default: True for "auto", False otherwise). Objects larger than
    multipart_threshold are written as multipart uploads and read as parallel ranges of
    part_size bytes, max_concurrency at a time. transport: "dc" (default: the server reaches
    this client's target; DC on verbs) or "rc" (each native client, one per thread, opens one
    persistent RC connection to the server's rc_port, default MINIO_RDMA_RC_PORT or 9100: for
    NICs without DC).
    """

    def __init__(self, endpoint=None, access_key=None, secret_key=None, region=None, rdma="auto",
                 allow_http_fallback=None, multipart_threshold=64 * MiB, part_size=16 * MiB,
                 max_concurrency=4, connect_timeout=5.0, io_timeout=60.0, transport="dc",
                 rc_port=None):
        if transport not in ("dc", "rc"):
            raise ValueError(f"transport must be 'dc' or 'rc', not {transport!r}")
        self.transport = transport
        self.rc_port = int(rc_port if rc_port is not None else
                           os.environ.get("MINIO_RDMA_RC_PORT") or 9100)
        if rdma not in _MODES:
            raise ValueError(f"rdma must be one of {_MODES}, not {rdma!r}")
        if part_size < 5 * MiB:
            raise ValueError("part_size must be at least 5 MiB (S3's minimum part size)")
        self.endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL") or "http://127.0.0.1:9000"
        self._ak, self._sk = _credentials(access_key, secret_key)
        self.region = region or os.environ.get("AWS_REGION") or os.environ.get(
            "AWS_DEFAULT_REGION") or "us-east-1"
        self.rdma = rdma
        self.allow_http_fallback = (rdma == "auto") if allow_http_fallback is None else bool(
            allow_http_fallback)
        self.multipart_threshold = int(multipart_threshold)
        self.part_size = int(part_size)
        self.max_concurrency = max(1, int(max_concurrency))
        self.connect_timeout = float(connect_timeout)
        self.io_timeout = float(io_timeout)
        self._verbs_env = {k: os.environ[k] for k in _VERBS_ENV if k in os.environ}
        self._reset()
        # Resolve "auto" now, so that a bad endpoint or credentials setup fails here, once.
        self.fabric = self._resolve_fabric()

    # -- per-thread / per-process native clients --------------------------------------------
    def _reset(self):
        self._local = threading.local()
        self._pid = os.getpid()
        self._pool = None
        self._pool_lock = threading.Lock()

    def __getstate__(self):  # picklable for spawn-started DataLoader workers
        state = self.__dict__.copy()
        for k in ("_local", "_pool", "_pool_lock", "_pid"):
            state.pop(k, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset()

    def _make_native(self, fabric):
        return _native.Native(self.endpoint, self._ak, self._sk, self.region, fabric,
                              self.allow_http_fallback, self._verbs_env, self.connect_timeout,
                              self.io_timeout, self.transport, self.rc_port)

    def _resolve_fabric(self):
        if self.rdma != "auto":
            n = self._make_native(self.rdma)
        else:
            n = None
            if _native.built_with_verbs() and _native.rdma_devices()[0]:
                try:
                    n = self._make_native("verbs")
                except S3Error:
                    n = None  # no usable device after all: the soft fabric
            if n is None:
                try:
                    n = self._make_native("soft")
                except S3Error:
                    n = self._make_native("off")
        self._local.native, self._local.pid = n, os.getpid()
        return n.fabric

    def _native(self):
        loc = self._local
        pid = os.getpid()
        n = getattr(loc, "native", None)
        if n is None or loc.pid != pid:
            # A thread's first call, or the first call in a forked child (whose copy of the
            # parent's native client is left alone: see native.cc).
            n = self._make_native(self.fabric)
            loc.native, loc.pid = n, pid
        return n

    def _executor(self):
        with self._pool_lock:
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.max_concurrency, thread_name_prefix="rdmastor")
                self._pool_pid = os.getpid()
            return self._pool

    def close(self):
        """Stops the part-transfer threads (connections close when threads and the Client go)."""
        with self._pool_lock:
            if self._pool is not None and self._pool_pid == os.getpid():
                self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- control requests ---------------------------------------------------------------------
    def _request(self, method, bucket, key="", query=None, headers=None, body=b"", ok=(200,)):
        raw_query = ""
        if query:
            raw_query = "&".join(
                urllib.parse.quote(k, safe="-_.~") +
                ("" if v is None else "=" + urllib.parse.quote(str(v), safe="-_.~"))
                for k, v in sorted(query.items()))
        status, hdrs, data = self._native().request(method, bucket, key, raw_query,
                                                    headers or {}, body)
        if status not in ok:
            what = f"{method} /{bucket}" + (f"/{key}" if key else "")
            raise from_response(status, hdrs, data, what)
        return status, hdrs, data

    def create_bucket(self, bucket, exist_ok=False):
        """Creates the bucket. exist_ok: a bucket this account already owns is not an error
        (BucketAlreadyOwnedByYou is swallowed; BucketAlreadyExists, someone else's, still raises),
        so a script that creates its bucket can run again."""
        try:
            self._request("PUT", bucket)
        except S3Error as e:
            if not (exist_ok and e.code == "BucketAlreadyOwnedByYou"):
                raise

    def delete_bucket(self, bucket):
        self._request("DELETE", bucket, ok=(204, 200))

    def delete_object(self, bucket, key):
        self._request("DELETE", bucket, key, ok=(204, 200))

    def head_object(self, bucket, key):
        """{"size", "etag", "content_type", "last_modified", "metadata"} of an object."""
        _, h, _ = self._request("HEAD", bucket, key)
        return {"size": int(h.get("content-length", 0)), "etag": h.get("etag", ""),
                "content_type": h.get("content-type"), "last_modified": h.get("last-modified"),
                "metadata": {k[len("x-amz-meta-"):]: v for k, v in h.items()
                             if k.startswith("x-amz-meta-")}}

    def list_objects(self, bucket, prefix="", delimiter=None, max_keys=1000):
        """Yields ObjectInfo for every key under prefix (ListObjectsV2, following pages); with a
        delimiter, also the common prefixes (is_prefix=True)."""
        token = None
        for _ in range(1 << 30):  # bounded by the listing itself: stops when not truncated
            q = {"list-type": "2", "prefix": prefix, "max-keys": str(max_keys)}
            if delimiter:
                q["delimiter"] = delimiter
            if token:
                q["continuation-token"] = token
            _, _, body = self._request("GET", bucket, query=q)
            root = ET.fromstring(body)
            for c in root.iter(_S3_NS + "Contents"):
                yield ObjectInfo(c.findtext(_S3_NS + "Key"), int(c.findtext(_S3_NS + "Size") or 0),
                                 c.findtext(_S3_NS + "ETag"), c.findtext(_S3_NS + "LastModified"))
            for c in root.iter(_S3_NS + "CommonPrefixes"):
                yield ObjectInfo(c.findtext(_S3_NS + "Prefix"), 0, None, None, is_prefix=True)
            if root.findtext(_S3_NS + "IsTruncated") != "true":
                return
            token = root.findtext(_S3_NS + "NextContinuationToken")
            if not token:
                return

    # -- payload transfers --------------------------------------------------------------------
    def put_object(self, bucket, key, data, content_type=None, metadata=None, progress=None):
        """Writes data (bytes-like, numpy array, CPU tensor) as the object; returns a Transfer.
        Larger than multipart_threshold: a multipart upload, parts in parallel."""
        buf = _buffer(data, writable=False)
        if isinstance(buf, _DeviceBuffer):
            return self._put_device(bucket, key, buf, content_type, metadata)
        size = _nbytes(buf, False)
        headers = {}
        if content_type:
            headers["content-type"] = content_type
        for k, v in (metadata or {}).items():
            headers["x-amz-meta-" + k.lower()] = str(v)
        prog = _Progress(progress, size, f"put {key}")
        if size <= self.multipart_threshold:
            r = self._native().put(bucket, key, buf, headers)
            prog.add(size)
            return Transfer(r["bytes"], r["transport"], r["status"], r["etag"])
        mv = memoryview(buf).cast("B")
        return self._put_multipart(bucket, key, size, headers, prog, lambda native, upload_id, n,
                                   off, ln: native.upload_part(bucket, key, upload_id, n,
                                                               mv[off:off + ln]))

    def _put_multipart(self, bucket, key, size, headers, prog, upload_part):
        """A multipart upload of size bytes, parts of part_size max_concurrency at a time, each
        sent by upload_part(native, upload_id, part_number, offset, length) -> result dict."""
        _, _, body = self._request("POST", bucket, key, query={"uploads": None}, headers=headers)
        upload_id = ET.fromstring(body).findtext(_S3_NS + "UploadId")
        parts = [(i + 1, off, min(self.part_size, size - off))
                 for i, off in enumerate(range(0, size, self.part_size))]

        def one(part):
            n, off, ln = part
            r = upload_part(self._native(), upload_id, n, off, ln)
            prog.add(ln)
            return n, r

        try:
            results = list(self._executor().map(one, parts))
            xml = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{r['etag']}</ETag></Part>"
                          for n, r in results)
            _, _, body = self._request(
                "POST", bucket, key, query={"uploadId": upload_id},
                body=f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode())
            root = ET.fromstring(body)
            if root.tag.split("}")[-1] == "Error":  # S3 may report failure inside a 200
                raise from_response(500, {}, body, f"POST /{bucket}/{key}?uploadId")
        except BaseException:
            try:
                self._request("DELETE", bucket, key, query={"uploadId": upload_id}, ok=(204, 200))
            except S3Error:
                pass
            raise
        transports = {r["transport"] for _, r in results}
        return Transfer(size, transports.pop() if len(transports) == 1 else "mixed", 200,
                        root.findtext(_S3_NS + "ETag") or "")

    def get_into(self, bucket, key, buf, offset=0, length=None, progress=None):
        """Reads the object (or bytes [offset, offset+length)) into buf, a writable buffer
        (bytearray, memoryview, numpy array, CPU tensor); returns the byte count (a Transfer).
        buf must be large enough for what is read."""
        dst = _buffer(buf, writable=True)
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        if isinstance(dst, _DeviceBuffer):
            return self._get_device(bucket, key, dst, offset, length)
        cap = _nbytes(dst, True)
        if length is not None:
            if length > cap:
                raise ValueError(f"length {length} exceeds the buffer's {cap} bytes")
            if length == 0:
                return Transfer(0, "none", 200)
        want = cap if length is None else length
        prog = _Progress(progress, want, f"get {key}")
        if want <= self.multipart_threshold:
            r = self._native().get_into(bucket, key, dst, offset, -1 if length is None else length)
            prog.add(r["bytes"])
            return Transfer(r["bytes"], r["transport"], r["status"], r["etag"], r["object_size"])
        mv = memoryview(dst).cast("B")
        return self._get_parallel(bucket, key, offset, length, want, prog,
                                  lambda native, at, o, ln: native.get_into(
                                      bucket, key, mv[at:at + ln], o, ln))

    def get_batch_into(self, bucket, keys, buf, slot=None):
        """Reads the objects `keys` into buf, object i into bytes [i*slot, (i+1)*slot), in one
        call: for many small objects (a data loader's batch) Python's per-call cost is paid once
        per batch, the GIL is released throughout, and over RDMA the buffer is registered once
        (an rdmastor.Buffer / registered_tensor: once per client thread). buf: a writable
        C-contiguous CPU buffer, e.g. a uint8 tensor of shape (len(keys), slot); slot defaults
        to buf's size // len(keys). Each object must fit its slot. Returns a BatchTransfer: the
        byte count of each object (a list), with ``transport``. An error (S3Error) stops the
        batch; the objects before the failing key have been read."""
        keys = list(keys)
        dst = _buffer(buf, writable=True)
        if isinstance(dst, _DeviceBuffer):
            raise DeviceMemoryError("rdmastor: get_batch_into reads into host memory only; "
                                    "use get_into for device memory")
        cap = _nbytes(dst, True)
        if not keys:
            return BatchTransfer([], "none")
        if slot is None:
            slot = cap // len(keys)
        slot = int(slot)
        if slot <= 0 or slot * len(keys) > cap:
            raise ValueError(f"{len(keys)} slots of {slot} bytes do not fit the buffer's "
                             f"{cap} bytes")
        counts, transport = self._native().get_batch_into(bucket, keys, dst, slot)
        return BatchTransfer(counts, transport)

    def _get_parallel(self, bucket, key, offset, length, want, prog, read_range):
        """Reads the object (or [offset, offset+length)) as parallel ranges of part_size, each by
        read_range(native, buffer offset, object offset, length) -> result dict."""
        first = read_range(self._native(), 0, offset, min(self.part_size, want))
        total = first["object_size"]
        if total is None:
            raise S3Error(f"GET /{bucket}/{key}: no object size in the ranged reply")
        end = total if length is None else min(total, offset + length)
        if end - offset > want:
            raise S3Error(f"GET /{bucket}/{key}: the object's {end - offset} bytes do not fit "
                          f"the buffer's {want}", code="InvalidArgument")
        prog.add(first["bytes"])
        chunks = [(o, min(self.part_size, end - o))
                  for o in range(offset + first["bytes"], end, self.part_size)]

        def one(chunk):
            o, ln = chunk
            r = read_range(self._native(), o - offset, o, ln)
            if r["bytes"] != ln:
                raise S3Error(f"GET /{bucket}/{key}: short range read at {o}")
            prog.add(ln)
            return r["transport"]

        transports = {first["transport"]} | set(self._executor().map(one, chunks))
        return Transfer(end - offset, transports.pop() if len(transports) == 1 else "mixed",
                        206 if offset or length is not None else 200, first["etag"], total)

    # -- CUDA device memory (verbs + dma-buf; docs/python.md "GPU memory") ---------------------
    def _device_native(self, dev):
        why = _device_refusal(dev, self.fabric)
        if why:
            raise DeviceMemoryError(why)
        return self._native()

    def _put_device(self, bucket, key, dev, content_type, metadata):
        if dev.nbytes == 0:  # nothing to read from the device
            return self.put_object(bucket, key, b"", content_type, metadata)
        native = self._device_native(dev)
        headers = {"content-type": content_type} if content_type else {}
        for k, v in (metadata or {}).items():
            headers["x-amz-meta-" + k.lower()] = str(v)
        prog = _Progress(None, dev.nbytes, f"put {key}")
        if dev.nbytes > self.multipart_threshold:  # parts straight from device memory
            return self._put_multipart(bucket, key, dev.nbytes, headers, prog, lambda n_, upload_id,
                                       n, off, ln: n_.put_device(bucket, key, dev.ptr + off, ln,
                                                                 {}, upload_id, n))
        r = native.put_device(bucket, key, dev.ptr, dev.nbytes, headers, "", 0)
        prog.add(dev.nbytes)
        return Transfer(r["bytes"], r["transport"], r["status"], r["etag"])

    def _get_device(self, bucket, key, dev, offset, length):
        native = self._device_native(dev)
        if length is not None and length > dev.nbytes:
            raise ValueError(f"length {length} exceeds the buffer's {dev.nbytes} bytes")
        if length == 0 or dev.nbytes == 0:
            return Transfer(0, "none", 200)
        want = dev.nbytes if length is None else length
        if want > self.multipart_threshold:  # parallel ranges straight into device memory
            return self._get_parallel(bucket, key, offset, length, want,
                                      _Progress(None, want, f"get {key}"),
                                      lambda n_, at, o, ln: n_.get_into_device(
                                          bucket, key, dev.ptr + at, ln, o, ln))
        r = native.get_into_device(bucket, key, dev.ptr, want, offset,
                                   -1 if length is None else length)
        return Transfer(r["bytes"], r["transport"], r["status"], r["etag"], r["object_size"])

    def get_object(self, bucket, key, offset=0, length=None):
        """The object's bytes (an ObjectBytes: bytes with transport/etag/object_size)."""
        for attempt in range(2):  # once more if the object grew between HEAD and GET
            if length is None:
                size = max(self.head_object(bucket, key)["size"] - offset, 0)
            else:
                size = length
            buf = bytearray(size)
            try:
                t = self.get_into(bucket, key, buf, offset, length if length is not None else (
                    None if offset == 0 else size))
            except S3Error as e:
                if attempt == 0 and length is None and e.code in ("RDMANotSupported", "InternalError"):
                    continue
                raise
            out = ObjectBytes(bytes(memoryview(buf)[:int(t)]))
            out.transport, out.etag, out.object_size = t.transport, t.etag, t.object_size
            return out
        raise S3Error(f"GET /{bucket}/{key}: the object kept changing size")


def native_info():
    """What this build of the binding offers: {"verbs_built", "rdma_devices", "probe_error"}."""
    devs, err = _native.rdma_devices()
    return {"verbs_built": _native.built_with_verbs(), "rdma_devices": list(devs),
            "probe_error": err}
