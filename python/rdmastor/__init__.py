"""rdmastor: a Python client for rdmastor's S3 API, moving object bytes over RDMA.

    import rdmastor
    c = rdmastor.Client("http://127.0.0.1:9000")        # credentials like boto3 (AWS_* env, ~/.aws)
    c.put_object("bucket", "key", numpy_array_or_tensor_or_bytes)
    n = c.get_into("bucket", "key", buffer)             # straight into the caller's memory
    data = c.get_object("bucket", "key")                # bytes

Transfers run with the GIL released. A Client may be shared between threads (each thread uses
its own native connection and RDMA target) and survives fork(): a child process (a DataLoader
worker) opens its own connections on first use. Calls are retried as botocore's standard mode
retries them (throttling, 5xx, broken connections); a server's decline of RDMA is remembered.
Errors: S3Error (the server answered), ConnectionError and its subclasses (no answer),
BufferTooSmallError, ValueError / TypeError (caller mistakes). See docs/python.md.
"""

import concurrent.futures
import configparser
import os
import random
import sys
import threading
import time
import urllib.parse
import warnings
import xml.etree.ElementTree as ET

from . import _native
from ._errors import (BufferTooSmallError, ConnectionClosedError, ConnectionError,  # noqa: A004
                      ConnectTimeoutError, EndpointConnectionError, RDMATransportError,
                      ReadTimeoutError, S3Error, from_response)

__all__ = ["Client", "S3Error", "Transfer", "BatchTransfer", "ObjectBytes", "ObjectInfo",
           "DeviceMemoryError", "Buffer", "ConnectionError", "EndpointConnectionError",
           "ConnectTimeoutError", "ConnectionClosedError", "ReadTimeoutError",
           "BufferTooSmallError", "RDMATransportError", "RDMADeclinedWarning", "register_device", "deregister_device",
           "nearest_rdma_device"]

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


def _aws_settings(access_key, secret_key, endpoint, region):
    """(access key, secret key, endpoint, region) the way AWS tools find them: the arguments,
    else botocore's chain when botocore is installed (AWS_* variables, AWS_PROFILE's profile in
    ~/.aws/credentials and ~/.aws/config, AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE), else
    the variables and the shared credentials file read here. Endpoint: the argument,
    AWS_ENDPOINT_URL, the profile's endpoint_url, http://127.0.0.1:9000. Region: the argument,
    AWS_REGION, AWS_DEFAULT_REGION / the profile's region, us-east-1."""
    env = os.environ
    endpoint = endpoint or env.get("AWS_ENDPOINT_URL")
    region = region or env.get("AWS_REGION")
    if access_key and secret_key and endpoint and region:
        # Everything is given: botocore's chain has nothing to add (and costs 0.1-0.8 s of CPU).
        return access_key, secret_key, endpoint, region
    view = _botocore_view()
    if view is not None:
        endpoint = endpoint or view.endpoint
        region = region or view.region
        if not (access_key and secret_key):
            frozen = view.frozen_credentials()
            if frozen is None or not (frozen.access_key and frozen.secret_key):
                raise S3Error("no credentials: pass access_key/secret_key, set AWS_ACCESS_KEY_ID "
                              "and AWS_SECRET_ACCESS_KEY, or configure a profile (AWS_PROFILE) in "
                              "~/.aws/credentials", code="InvalidAccessKeyId")
            if frozen.token:
                raise ValueError("rdmastor: temporary credentials (a session token, "
                                 "AWS_SESSION_TOKEN) are not supported: the server has no STS; "
                                 "use an access key and secret")
            access_key, secret_key = frozen.access_key, frozen.secret_key
    elif not (access_key and secret_key):
        access_key, secret_key = _credentials_file()
    return (access_key, secret_key, endpoint or "http://127.0.0.1:9000",
            region or env.get("AWS_DEFAULT_REGION") or "us-east-1")


_BOTOCORE_VIEWS = {}  # what botocore's chain answered, by everything that answer depends on
_BOTOCORE_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE",
                 "AWS_SHARED_CREDENTIALS_FILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION",
                 "AWS_ENDPOINT_URL")


def _file_bytes(path):
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read()
    except OSError:
        return None


class _BotocoreView:
    """What botocore's chain answers: the profile's endpoint_url and region now, credentials when
    first asked (walking the providers may reach out to instance metadata: only when needed)."""

    def __init__(self, session, scoped):
        self.session = session
        self.endpoint = scoped.get("endpoint_url")
        self.region = session.get_config_variable("region")
        self._frozen, self._asked = None, False

    def frozen_credentials(self):
        if not self._asked:
            creds = self.session.get_credentials()
            self._frozen = creds.get_frozen_credentials() if creds is not None else None
            self._asked = True
        return self._frozen


def _botocore_view():
    """botocore's chain (a _BotocoreView), or None without botocore. Asked once per process for
    the same environment and the same bytes in the config and credentials files: a session reads
    and parses both files each time (tens of ms), and every DataLoader worker makes its own
    Client, so without this the chain ran once per worker and epoch. Forked workers inherit it."""
    env = os.environ
    key = (tuple(env.get(k) for k in _BOTOCORE_ENV),
           _file_bytes(env.get("AWS_CONFIG_FILE") or "~/.aws/config"),
           _file_bytes(env.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"))
    if key in _BOTOCORE_VIEWS:
        return _BOTOCORE_VIEWS[key]
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:
        return None
    try:
        session = botocore.session.Session()
        view = _BotocoreView(session, session.get_scoped_config())
    except botocore.exceptions.ProfileNotFound as e:
        raise ValueError(f"rdmastor: {e}") from None
    _BOTOCORE_VIEWS.clear()  # one environment at a time is what a process has
    _BOTOCORE_VIEWS[key] = view
    return view


def _credentials_file():
    """Without botocore: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else the profile
    (AWS_PROFILE or "default") of AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials."""
    ak, sk = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if ak and sk:
        if os.environ.get("AWS_SESSION_TOKEN"):
            raise ValueError("rdmastor: temporary credentials (AWS_SESSION_TOKEN) are not "
                             "supported: the server has no STS; use an access key and secret")
        return ak, sk
    path = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.expanduser("~/.aws/credentials")
    profile = os.environ.get("AWS_PROFILE", "default")
    cp = configparser.ConfigParser()
    try:
        cp.read(path)
    except configparser.Error as e:
        raise ValueError(f"rdmastor: cannot read {path}: {e}") from None
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

    __slots__ = ("ptr", "nbytes", "what", "owner", "sync")

    def __init__(self, ptr, nbytes, what, owner, sync=None):
        self.ptr, self.nbytes, self.what, self.owner = int(ptr), int(nbytes), what, owner
        self.sync = sync  # waits for the work queued on the memory's stream, or None


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
    # Version 3's producer stream: work on it must finish before anyone else touches the memory
    # (None: nothing to wait for; 1 and 2 name the legacy and per-thread default streams).
    stream = cai.get("stream")
    sync = None
    if stream is not None and ptr:
        sync = lambda: _native.device_sync(int(ptr), int(stream))  # noqa: E731
    return _DeviceBuffer(ptr or 0, n * itemsize,
                         f"{type(obj).__name__} (CUDA device memory: __cuda_array_interface__)", obj,
                         sync)


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
                                 f"a CUDA tensor ({obj.device})", obj,
                                 lambda: torch.cuda.current_stream(obj.device).synchronize())
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
    """Calls the user's callback(done, total), or draws a bar on a terminal for large transfers
    (tqdm's when it is installed, else one of ours), with the rate and the time left."""

    def __init__(self, progress, total, what):
        self.cb = None
        self.total = total
        self.done = 0
        self.lock = threading.Lock()
        if callable(progress):
            self.cb = progress
        elif progress or (progress is None and total >= 64 * MiB and sys.stderr.isatty()):
            self.what = what
            self.start = time.monotonic()
            try:
                import tqdm
                self.tqdm = tqdm.tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                                      desc=what, file=sys.stderr)
                self.cb = self._tqdm
            except ImportError:
                self.cb = self._bar

    def _tqdm(self, done, total):
        self.tqdm.update(done - self.tqdm.n)
        if done >= total:
            self.tqdm.close()

    def _bar(self, done, total):
        width = 30
        filled = width * done // max(total, 1)
        elapsed = max(time.monotonic() - self.start, 1e-6)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else 0.0
        sys.stderr.write(f"\r{self.what} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{done / MiB:.1f}/{total / MiB:.1f} MiB {rate / MiB:.1f} MiB/s "
                         f"ETA {eta:.0f} s")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def add(self, n):
        if self.cb is None:
            return
        with self.lock:
            self.done += n
            self.cb(self.done, self.total)


# botocore's standard retry mode (botocore/retries/standard.py): which failures are retried, the
# exponential back-off with full jitter, and the retry quota (a token bucket per client).
_THROTTLING = frozenset((
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown",
    "PriorRequestNotComplete", "EC2ThrottledException"))
_TRANSIENT_CODES = frozenset(("RequestTimeout", "RequestTimeoutException", "InternalError",
                              "ServiceUnavailable", "RDMATransferFailed"))
_TRANSIENT_STATUS = frozenset((500, 502, 503, 504))
_QUOTA, _RETRY_COST, _TIMEOUT_COST, _SUCCESS_REFUND = 500, 5, 10, 1


def _retry_kind(exc, idempotent):
    """"throttle", "transient", "timeout" or "connect" when exc may be retried, else None. A
    call that is not idempotent (creating a multipart upload, completing one) is retried only
    when nothing reached the server (the connection was never made)."""
    if isinstance(exc, EndpointConnectionError):
        return "connect"
    if not idempotent:
        return None
    if isinstance(exc, ReadTimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError):
        return "transient"
    if isinstance(exc, S3Error) and exc.status is not None:
        if exc.code in _THROTTLING or exc.status == 429:
            return "throttle"
        if exc.status in _TRANSIENT_STATUS or exc.code in _TRANSIENT_CODES:
            return "transient"
    return None


def _retry_config(retries):
    """{"max_attempts", "mode", "base_delay", "max_backoff"} from Client's retries= (a dict as
    botocore's Config(retries=...), or an int: max_attempts), else AWS_MAX_ATTEMPTS, else 3."""
    cfg = {"max_attempts": None, "mode": "standard", "base_delay": 1.0, "max_backoff": 20.0}
    if isinstance(retries, bool):
        raise TypeError("retries must be a dict or an int, not a bool")
    if isinstance(retries, int):
        retries = {"max_attempts": retries}
    if retries is not None:
        if not isinstance(retries, dict):
            raise TypeError(f"retries must be a dict or an int, not {type(retries).__name__}")
        unknown = set(retries) - set(cfg) - {"total_max_attempts"}
        if unknown:
            raise ValueError(f"unknown retries keys: {sorted(unknown)}")
        cfg.update({k: v for k, v in retries.items() if k != "total_max_attempts"})
        if "total_max_attempts" in retries:
            cfg["max_attempts"] = retries["total_max_attempts"]
    if cfg["mode"] != "standard":
        raise ValueError(f"retries mode must be 'standard', not {cfg['mode']!r}")
    if cfg["max_attempts"] is None:
        env = os.environ.get("AWS_MAX_ATTEMPTS")
        try:
            cfg["max_attempts"] = int(env) if env else 3
        except ValueError:
            raise ValueError(f"AWS_MAX_ATTEMPTS must be an integer, not {env!r}") from None
    if not isinstance(cfg["max_attempts"], int) or cfg["max_attempts"] < 1:
        raise ValueError(f"max_attempts must be an integer of at least 1, not "
                         f"{cfg['max_attempts']!r}")
    cfg["base_delay"], cfg["max_backoff"] = float(cfg["base_delay"]), float(cfg["max_backoff"])
    return cfg


class _RetryState:
    """The retry quota and counters of one Client in one process (a forked child starts over)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.quota = _QUOTA
        self.counts = {"retries": 0, "throttle": 0, "transient": 0, "timeout": 0, "connect": 0,
                       "quota_exhausted": 0, "rdma_declined": 0, "rdma_local_failures": 0}

    def take(self, kind):
        cost = _TIMEOUT_COST if kind == "timeout" else _RETRY_COST
        with self.lock:
            if self.quota < cost:
                self.counts["quota_exhausted"] += 1
                return 0
            self.quota -= cost
            self.counts["retries"] += 1
            self.counts[kind] += 1
            return cost

    def succeeded(self, refund):
        with self.lock:
            self.quota = min(_QUOTA, self.quota + (refund or _SUCCESS_REFUND))

    def count(self, what):
        with self.lock:
            self.counts[what] += 1


class RDMADeclinedWarning(RuntimeWarning):
    """A server declined S3 over RDMA (501): for a while this process sends its payloads over
    HTTP (Client's rdma_decline_ttl); the message says why the server declined."""


# Servers that declined S3 over RDMA, by endpoint: (monotonic time until which payloads go over
# HTTP, the server's reason). Per process, inherited by forked DataLoader workers, shared by every
# Client of the endpoint: a declined server costs one extra request per process and period.
_declines = {}
_DEGRADED_TTL = 2.0  # seconds a "degraded" decline (RDMADeclineReason) is remembered
_declines_warned = set()
_declines_lock = threading.Lock()


def _after_fork_in_child():
    global _declines_lock
    _declines_lock = threading.Lock()  # another thread of the parent may have held it


os.register_at_fork(after_in_child=_after_fork_in_child)


class Client:
    """An S3 client that moves object payloads over RDMA when it can.

    endpoint: "http://host:port" (or https://). rdma: "auto" (verbs when this build has an RDMA
    device, else the soft fabric; HTTP when the server declines a request with 501), "soft",
    "verbs", or "off" (plain HTTP). allow_http_fallback: on a 501 from the server, redo the
    request over HTTP (default: True for "auto", False otherwise); such a server-wide decline is
    remembered for rdma_decline_ttl seconds (payloads go straight over HTTP meanwhile) and
    reported once as an RDMADeclinedWarning. Objects larger than multipart_threshold are written
    as multipart uploads and read as parallel ranges of part_size bytes, max_concurrency at a
    time. retries: botocore's standard mode ({"max_attempts": 3} by default, or
    AWS_MAX_ATTEMPTS; an int is max_attempts): throttling, 5xx and broken connections are
    retried with jittered exponential back-off; counted in stats(). transport: "dc" (default:
    the server reaches this client's target; DC on verbs) or "rc" (each native client, one per
    thread, opens one persistent RC connection to the server's rc_port, default
    MINIO_RDMA_RC_PORT or 9100: for NICs without DC). rdma_device: the verbs device to use
    instead of MINIO_RDMA_DEVICE (nearest_rdma_device(gpu) picks the one beside a GPU).

    Construction does not connect (as botocore's clients): a dead endpoint raises
    EndpointConnectionError on the first call.
    """

    def __init__(self, endpoint=None, access_key=None, secret_key=None, region=None, rdma="auto",
                 allow_http_fallback=None, multipart_threshold=64 * MiB, part_size=16 * MiB,
                 max_concurrency=4, connect_timeout=5.0, io_timeout=60.0, retries=None,
                 rdma_decline_ttl=300.0, transport="dc", rc_port=None, rdma_device=None):
        if transport not in ("dc", "rc"):
            raise ValueError(f"transport must be 'dc' or 'rc', not {transport!r}")
        self.transport = transport
        self.rc_port = int(rc_port if rc_port is not None else
                           os.environ.get("MINIO_RDMA_RC_PORT") or 9100)
        if not isinstance(rdma, str) or rdma not in _MODES:
            raise ValueError(f"rdma must be one of {_MODES}, not {rdma!r}")
        if endpoint is not None and not isinstance(endpoint, str):
            raise TypeError(f"endpoint must be a str, not {type(endpoint).__name__}")
        for name, v in (("multipart_threshold", multipart_threshold), ("part_size", part_size),
                        ("max_concurrency", max_concurrency)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        for name, v in (("connect_timeout", connect_timeout), ("io_timeout", io_timeout),
                        ("rdma_decline_ttl", rdma_decline_ttl)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"{name} must be a number, not {type(v).__name__}")
            if v < 0 or (v == 0 and name != "rdma_decline_ttl"):
                raise ValueError(f"{name} must be positive, not {v}")
        if part_size < 5 * MiB:
            raise ValueError("part_size must be at least 5 MiB (S3's minimum part size)")
        self._retry_cfg = _retry_config(retries)
        self.max_attempts = self._retry_cfg["max_attempts"]
        self.rdma_decline_ttl = float(rdma_decline_ttl)
        self._ak, self._sk, self.endpoint, self.region = _aws_settings(
            access_key, secret_key, endpoint, region)
        if not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must be http://host:port or https://..., not "
                             f"{self.endpoint!r}")
        self.rdma = rdma
        self.allow_http_fallback = (rdma == "auto") if allow_http_fallback is None else bool(
            allow_http_fallback)
        self.multipart_threshold = int(multipart_threshold)
        self.part_size = int(part_size)
        self.max_concurrency = max(1, int(max_concurrency))
        self.connect_timeout = float(connect_timeout)
        self.io_timeout = float(io_timeout)
        self._verbs_env = {k: os.environ[k] for k in _VERBS_ENV if k in os.environ}
        if rdma_device is not None:  # e.g. nearest_rdma_device(local_rank)
            self._verbs_env["MINIO_RDMA_DEVICE"] = str(rdma_device)
        self._reset()
        # Resolve "auto" now (this sends no request: a dead endpoint fails on the first call).
        self.fabric = self._resolve_fabric()

    # -- per-thread / per-process native clients --------------------------------------------
    def _reset(self):
        self._local = threading.local()
        self._pid = os.getpid()
        self._pool = None
        self._pool_lock = threading.Lock()
        self._retry = _RetryState()

    def __getstate__(self):  # picklable for spawn-started DataLoader workers
        state = self.__dict__.copy()
        for k in ("_local", "_pool", "_pool_lock", "_pid", "_retry"):
            state.pop(k, None)
        return state

    # -- retries and the RDMA decline cache ----------------------------------------------------
    @property
    def retries(self):
        """Retries this Client made in this process (all threads)."""
        return self._retry_state().counts["retries"]

    def stats(self):
        """Counters of this Client in this process: retries (by cause: throttle, transient,
        timeout, connect), quota_exhausted (failures not retried for want of retry quota),
        rdma_declined (server declines that sent a payload over HTTP), rdma_local_failures
        (calls this client's own RDMA transport failed, RDMATransportError: over HTTP with
        rdma="auto"), retry_quota (left)."""
        st = self._retry_state()
        with st.lock:
            out = dict(st.counts)
            out["retry_quota"] = st.quota
        return out

    def _retry_state(self):
        if self._pid != os.getpid():  # a forked child counts its own
            self._retry, self._pid = _RetryState(), os.getpid()
        return self._retry

    def rdma_declined(self):
        """The reason the server gave when it last declined S3 over RDMA, while that decline is
        remembered (payloads then go over HTTP), else None."""
        with _declines_lock:
            d = _declines.get(self.endpoint)
        if d is None or d[0] <= time.monotonic():
            return None
        return d[1]

    def _over_http(self):
        if self.fabric == "off" or not self.allow_http_fallback:  # strict: never over HTTP
            return False
        d = _declines.get(self.endpoint)  # a dict read: atomic under the GIL
        return d is not None and d[0] > time.monotonic()

    def _remember_decline(self, exc):
        reason = exc.message or exc.code
        self._retry_state().count("rdma_declined")
        ttl = self.rdma_decline_ttl
        if exc.fields.get("RDMADeclineReason") == "degraded":
            ttl = min(ttl, _DEGRADED_TTL)  # the server's device is coming back: ask again soon
        if ttl <= 0:
            return
        with _declines_lock:
            _declines[self.endpoint] = (time.monotonic() + ttl, reason)
            first = self.endpoint not in _declines_warned
            _declines_warned.add(self.endpoint)
        if first:
            warnings.warn(f"rdmastor: {self.endpoint} declined S3 over RDMA ({reason}); payloads "
                          f"go over HTTP for the next {self.rdma_decline_ttl:g} s",
                          RDMADeclinedWarning, stacklevel=5)

    def _call(self, fn, idempotent=True, host_memory=True):
        """fn(native, http) with retries (botocore's standard mode) and, for host memory, the
        HTTP fallback on a server's decline of RDMA (remembered: later calls go over HTTP). The
        path of a call that succeeds at once stays short: it runs for every transfer."""
        http = bool(_declines) and self._over_http()
        try:
            r = fn(self._native(), http)
        except (S3Error, ConnectionError, RDMATransportError) as e:
            return self._call_again(fn, e, http, idempotent, host_memory)
        if self._retry.quota < _QUOTA:  # refill the quota a failure drew on
            self._retry_state().succeeded(0)
        return r

    def _call_again(self, fn, err, http, idempotent, host_memory):
        """The rest of _call after its first attempt failed with err."""
        st = self._retry_state()
        cfg = self._retry_cfg
        attempt, refund = 1, 0
        for _ in range(2 * cfg["max_attempts"] + 2):  # attempts, plus one fallback each
            if (isinstance(err, S3Error) and err.status == 501
                    and err.code in _native.RDMA_DECLINE_CODES
                    and not http and host_memory and self.allow_http_fallback):
                self._remember_decline(err)
                http = True  # the same attempt, over HTTP
            elif (isinstance(err, RDMATransportError) and not http and host_memory
                  and self.allow_http_fallback):
                st.count("rdma_local_failures")
                http = True  # this call over HTTP; the next one tries RDMA again
            else:
                kind = _retry_kind(err, idempotent)
                if kind is None or attempt >= cfg["max_attempts"]:
                    raise err
                refund = st.take(kind)
                if not refund:
                    raise err
                time.sleep(min(random.random() * cfg["base_delay"] * 2 ** (attempt - 1),
                               cfg["max_backoff"]))
                attempt += 1
                http = bool(_declines) and self._over_http()
            try:
                r = fn(self._native(), http)
            except (S3Error, ConnectionError, RDMATransportError) as e:
                err = e
                continue
            st.succeeded(refund)
            return r
        raise err

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset()

    def _make_native(self, fabric):
        # No fallback in the library: _call falls back and remembers the server's decline.
        # "auto": a verbs device that cannot be used now (port down, removed) does not fail the
        # client: its calls go over HTTP (RDMATransportError) until the device is back.
        return _native.Native(self.endpoint, self._ak, self._sk, self.region, fabric, False,
                              self._verbs_env, self.connect_timeout, self.io_timeout,
                              self.transport, self.rc_port, self.rdma == "auto")

    def _resolve_fabric(self):
        if self.rdma != "auto":
            n = self._make_native(self.rdma)
        else:
            n = None
            if _native.built_with_verbs() and _native.rdma_devices()[0]:
                try:
                    n = self._make_native("verbs")
                except (S3Error, RDMATransportError):
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
    def _request(self, method, bucket, key="", query=None, headers=None, body=b"", ok=(200,),
                 idempotent=None):
        raw_query = ""
        if query:
            raw_query = "&".join(
                urllib.parse.quote(k, safe="-_.~") +
                ("" if v is None else "=" + urllib.parse.quote(str(v), safe="-_.~"))
                for k, v in sorted(query.items()))
        what = f"{method} /{bucket}" + (f"/{key}" if key else "")

        def once(native, _http):
            status, hdrs, data = native.request(method, bucket, key, raw_query, headers or {},
                                                body)
            if status not in ok:
                raise from_response(status, hdrs, data, what)
            return status, hdrs, data

        return self._call(once, idempotent=method != "POST" if idempotent is None else idempotent)

    def list_buckets(self):
        """[{"name", "creation_date"}] of the buckets this account owns."""
        _, _, body = self._request("GET", "")
        return [{"name": b.findtext(_S3_NS + "Name"),
                 "creation_date": b.findtext(_S3_NS + "CreationDate")}
                for b in ET.fromstring(body).iter(_S3_NS + "Bucket")]

    def copy_object(self, bucket, key, src_bucket, src_key, metadata=None, content_type=None):
        """Server-side copy of src_bucket/src_key to bucket/key (no payload moves through the
        client); metadata/content_type replace the source's when given. Returns the new ETag."""
        headers = {"x-amz-copy-source": "/" + urllib.parse.quote(f"{src_bucket}/{src_key}",
                                                                  safe="/-_.~")}
        if metadata is not None or content_type is not None:
            headers.update(_put_headers(content_type, metadata))
            headers["x-amz-metadata-directive"] = "REPLACE"
        _, _, body = self._request("PUT", bucket, key, headers=headers)
        root = ET.fromstring(body)
        if root.tag.split("}")[-1] == "Error":  # a copy may fail inside a 200
            raise from_response(500, {}, body, f"PUT /{bucket}/{key} (copy)")
        return root.findtext(_S3_NS + "ETag") or ""

    def delete_objects(self, bucket, keys):
        """Deletes the keys (DeleteObjects, 1,000 per request). Returns {"deleted": [keys],
        "errors": [{"key", "code", "message"}]}; a key that did not exist counts as deleted."""
        import base64
        import hashlib
        from xml.sax.saxutils import escape
        keys = list(keys)
        out = {"deleted": [], "errors": []}
        for at in range(0, len(keys), 1000):
            xml = "".join(f"<Object><Key>{escape(k)}</Key></Object>" for k in keys[at:at + 1000])
            body = f"<Delete>{xml}</Delete>".encode()
            md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
            _, _, reply = self._request("POST", bucket, query={"delete": None},
                                        headers={"content-md5": md5}, body=body,
                                        idempotent=True)
            root = ET.fromstring(reply)
            out["deleted"] += [d.findtext(_S3_NS + "Key") for d in root.iter(_S3_NS + "Deleted")]
            out["errors"] += [{"key": e.findtext(_S3_NS + "Key"),
                               "code": e.findtext(_S3_NS + "Code"),
                               "message": e.findtext(_S3_NS + "Message")}
                              for e in root.iter(_S3_NS + "Error")]
        return out

    def generate_presigned_url(self, method, bucket, key, expires_in=3600):
        """A SigV4 presigned URL for method ("GET", "PUT", ...) on bucket/key, valid for
        expires_in seconds (1 s to 7 days): anyone holding it can make that request over HTTP."""
        if not isinstance(expires_in, int) or not 1 <= expires_in <= 604800:
            raise ValueError(f"expires_in must be 1..604800 seconds, not {expires_in!r}")
        return self._native().presign(method.upper(), bucket, key, "", expires_in)

    def upload_file(self, filename, bucket, key, callback=None, content_type=None,
                    metadata=None):
        """Uploads a file, streamed in part_size parts (multipart, max_concurrency at a time;
        one PUT when it fits one part); callback(n) gets each part's byte count as boto3's
        Callback does. Returns a Transfer."""
        from ._stream import MultipartWriter
        w = MultipartWriter(self, bucket, key, callback=callback, content_type=content_type,
                            metadata=metadata)
        try:
            with open(filename, "rb") as f:
                for _ in range(1 << 40):  # bounded by the file's size
                    if w.readfrom(f) == 0:
                        break
            return w.finish()
        except BaseException:
            w.abort()
            raise

    def download_file(self, bucket, key, filename, callback=None):
        """Downloads the object to filename (written to a temporary name beside it and renamed
        when complete, as boto3 does), in parallel ranges of part_size; callback(n) gets each
        range's byte count. Returns a Transfer."""
        size = self.head_object(bucket, key)["size"]
        tmp = f"{filename}.rdmastor-{os.getpid()}-{random.getrandbits(32):08x}"
        ranges = [(o, min(self.part_size, size - o)) for o in range(0, size, self.part_size)]
        local = threading.local()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            def one(r):
                o, ln = r
                buf = getattr(local, "buf", None)
                if buf is None:
                    buf = local.buf = memoryview(Buffer(self.part_size))
                t = self.get_into(bucket, key, buf[:ln], offset=o, length=ln)
                if int(t) != ln:
                    raise S3Error(f"GET /{bucket}/{key}: short range read at {o}")
                view = buf[:ln]
                while view:
                    view = view[os.pwrite(fd, view, o + ln - len(view)):]
                if callback:
                    callback(ln)
                return t.transport

            transports = set(self._executor().map(one, ranges)) or {"none"}
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, filename)
        return Transfer(size, _transport(transports), 200)

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
    def put_object(self, bucket, key, data, content_type=None, metadata=None, progress=None,
                   sync=True):
        """Writes data (bytes-like, numpy array, CPU tensor, GPU memory: see docs/python.md) as
        the object; returns a Transfer. Larger than multipart_threshold: a multipart upload, parts
        in parallel. sync (GPU memory): first wait for the kernels queued on the tensor's current
        stream (an array's __cuda_array_interface__ stream), which may still be writing it;
        sync=False for callers who order their streams themselves."""
        buf = _buffer(data, writable=False)
        if isinstance(buf, _DeviceBuffer):
            return self._put_device(bucket, key, buf, content_type, metadata, sync)
        size = _nbytes(buf, False)
        headers = _put_headers(content_type, metadata)
        prog = _Progress(progress, size, f"put {key}")
        if size <= self.multipart_threshold:
            r = self._call(lambda native, http: native.put(bucket, key, buf, headers, http))
            prog.add(size)
            return Transfer(r["bytes"], r["transport"], r["status"], r["etag"])
        mv = memoryview(buf).cast("B")
        return self._put_multipart(bucket, key, size, headers, prog, lambda upload_id, n, off, ln:
                                   self._upload_part(bucket, key, upload_id, n, mv[off:off + ln]))

    # Multipart uploads (boto3's names; the payload of a part over RDMA when the server offers it).
    def create_multipart_upload(self, bucket, key, content_type=None, metadata=None):
        """Starts a multipart upload; returns its UploadId."""
        _, _, body = self._request("POST", bucket, key, query={"uploads": None},
                                   headers=_put_headers(content_type, metadata))
        return ET.fromstring(body).findtext(_S3_NS + "UploadId")

    def upload_part(self, bucket, key, upload_id, part_number, data):
        """Uploads part part_number (1-10000) of the upload from data (host memory); returns a
        Transfer whose etag goes into complete_multipart_upload."""
        buf = _buffer(data, writable=False)
        if isinstance(buf, _DeviceBuffer):
            raise DeviceMemoryError("rdmastor: upload_part takes host memory; put_object moves "
                                    "device memory")
        _nbytes(buf, False)
        return self._upload_part(bucket, key, upload_id, part_number, buf)

    def _upload_part(self, bucket, key, upload_id, part_number, buf):
        r = self._call(lambda native, http: native.upload_part(bucket, key, upload_id,
                                                               int(part_number), buf, http))
        return Transfer(r["bytes"], r["transport"], r["status"], r["etag"])

    def complete_multipart_upload(self, bucket, key, upload_id, parts):
        """Completes the upload from parts [(part_number, etag), ...]; returns the ETag."""
        xml = "".join(f"<Part><PartNumber>{int(n)}</PartNumber><ETag>{e}</ETag></Part>"
                      for n, e in parts)
        _, _, body = self._request(
            "POST", bucket, key, query={"uploadId": upload_id},
            body=f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode())
        root = ET.fromstring(body)
        if root.tag.split("}")[-1] == "Error":  # S3 may report failure inside a 200
            raise from_response(500, {}, body, f"POST /{bucket}/{key}?uploadId")
        return root.findtext(_S3_NS + "ETag") or ""

    def abort_multipart_upload(self, bucket, key, upload_id):
        self._request("DELETE", bucket, key, query={"uploadId": upload_id}, ok=(204, 200))

    def list_multipart_uploads(self, bucket, prefix=""):
        """Yields (key, upload_id, initiated) for every upload in progress under prefix
        (ListMultipartUploads, following pages); initiated is the server's ISO 8601 time."""
        markers = {}
        for _ in range(1 << 30):  # bounded by the listing itself: stops when not truncated
            _, _, body = self._request("GET", bucket, query={"uploads": None, "prefix": prefix,
                                                             **markers})
            root = ET.fromstring(body)
            for u in root.iter(_S3_NS + "Upload"):
                yield (u.findtext(_S3_NS + "Key"), u.findtext(_S3_NS + "UploadId"),
                       u.findtext(_S3_NS + "Initiated"))
            if root.findtext(_S3_NS + "IsTruncated") != "true":
                return
            markers = {"key-marker": root.findtext(_S3_NS + "NextKeyMarker") or "",
                       "upload-id-marker": root.findtext(_S3_NS + "NextUploadIdMarker") or ""}

    def _put_multipart(self, bucket, key, size, headers, prog, upload_part):
        """A multipart upload of size bytes, parts of part_size max_concurrency at a time, each
        sent by upload_part(upload_id, part_number, offset, length) -> Transfer."""
        _, _, body = self._request("POST", bucket, key, query={"uploads": None}, headers=headers)
        upload_id = ET.fromstring(body).findtext(_S3_NS + "UploadId")
        parts = [(i + 1, off, min(self.part_size, size - off))
                 for i, off in enumerate(range(0, size, self.part_size))]

        def one(part):
            n, off, ln = part
            t = upload_part(upload_id, n, off, ln)
            prog.add(ln)
            return n, t

        try:
            results = list(self._executor().map(one, parts))
            etag = self.complete_multipart_upload(bucket, key, upload_id,
                                                  [(n, t.etag) for n, t in results])
        except BaseException:
            try:
                self.abort_multipart_upload(bucket, key, upload_id)
            except (S3Error, ConnectionError):
                pass
            raise
        return Transfer(size, _transport({t.transport for _, t in results}), 200, etag)

    def get_into(self, bucket, key, buf, offset=0, length=None, progress=None, sync=True):
        """Reads the object (or bytes [offset, offset+length)) into buf, a writable buffer
        (bytearray, memoryview, numpy array, CPU tensor, GPU memory: see docs/python.md);
        returns the byte count (a Transfer). buf must be large enough for what is read (else
        BufferTooSmallError). sync (GPU memory): first wait for the kernels queued on the
        tensor's current stream, which may still read or write it while the NIC overwrites it;
        sync=False for callers who order their streams themselves."""
        dst = _buffer(buf, writable=True)
        for name, v in (("offset", offset), ("length", length)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        if isinstance(dst, _DeviceBuffer):
            return self._get_device(bucket, key, dst, offset, length, sync)
        cap = _nbytes(dst, True)
        if length is not None:
            if length > cap:
                raise ValueError(f"length {length} exceeds the buffer's {cap} bytes")
            if length == 0:
                return Transfer(0, "none", 200)
        want = cap if length is None else length
        prog = _Progress(progress, want, f"get {key}")
        if want <= self.multipart_threshold:
            ln = -1 if length is None else length
            try:
                r = self._call(lambda native, http: native.get_into(bucket, key, dst, offset, ln,
                                                                    http))
            except BufferTooSmallError as e:
                e.key = key
                raise
            prog.add(r["bytes"])
            return Transfer(r["bytes"], r["transport"], r["status"], r["etag"], r["object_size"])
        mv = memoryview(dst).cast("B")
        return self._get_parallel(bucket, key, offset, length, want, prog,
                                  lambda at, o, ln: self._call(lambda native, http: native.get_into(
                                      bucket, key, mv[at:at + ln], o, ln, http)))

    def get_batch_into(self, bucket, keys, buf, slot=None):
        """Reads the objects `keys` into buf, object i into bytes [i*slot, (i+1)*slot), in one
        call: for many small objects (a data loader's batch) Python's per-call cost is paid once
        per batch, the GIL is released throughout, and over RDMA the buffer is registered once
        (an rdmastor.Buffer / registered_tensor: once per client thread). buf: a writable
        C-contiguous CPU buffer, e.g. a uint8 tensor of shape (len(keys), slot); slot defaults
        to buf's size // len(keys). Each object must fit its slot (else BufferTooSmallError,
        with the key and its index). Returns a BatchTransfer: the byte count of each object (a
        list), with ``transport``. Throttling and transient failures are retried from the
        failing key on; any other error stops the batch: the objects before the failing key
        have been read."""
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
        if isinstance(slot, bool) or not isinstance(slot, int):
            raise TypeError(f"slot must be an int, not {type(slot).__name__}")
        if slot <= 0 or slot * len(keys) > cap:
            raise ValueError(f"{len(keys)} slots of {slot} bytes do not fit the buffer's "
                             f"{cap} bytes")
        counts, transports = [], set()

        def rest(native, http):
            at = len(counts)  # objects before it were read by an earlier attempt
            part = dst if at == 0 else memoryview(dst).cast("B")[at * slot:]
            try:
                got, transport = native.get_batch_into(bucket, keys[at:] if at else keys, part,
                                                       slot, http)
            except (S3Error, ConnectionError, BufferTooSmallError) as e:
                done = getattr(e, "batch_done", None) or []
                counts.extend(done)
                if done:
                    transports.add("http" if http else "rdma")
                if isinstance(e, BufferTooSmallError):
                    e.index = len(counts)
                    e.key = keys[len(counts)]
                raise
            counts.extend(got)
            transports.add(transport)

        self._call(rest)
        transports.discard("none")
        return BatchTransfer(counts, _transport(transports))

    def _get_parallel(self, bucket, key, offset, length, want, prog, read_range):
        """Reads the object (or [offset, offset+length)) as parallel ranges of part_size, each by
        read_range(buffer offset, object offset, length) -> result dict."""
        first = read_range(0, offset, min(self.part_size, want))
        total = first["object_size"]
        if total is None:
            raise S3Error(f"GET /{bucket}/{key}: no object size in the ranged reply")
        end = total if length is None else min(total, offset + length)
        if end - offset > want:
            raise BufferTooSmallError(f"GET /{bucket}/{key}: the object's {end - offset} bytes "
                                      f"do not fit the buffer's {want}", end - offset, want, key)
        prog.add(first["bytes"])
        chunks = [(o, min(self.part_size, end - o))
                  for o in range(offset + first["bytes"], end, self.part_size)]

        def one(chunk):
            o, ln = chunk
            r = read_range(o - offset, o, ln)
            if r["bytes"] != ln:
                raise S3Error(f"GET /{bucket}/{key}: short range read at {o}")
            if r["etag"] != first["etag"]:  # replaced between ranges: never a mix of two
                raise _changed(bucket, key, first["etag"], r["etag"])
            prog.add(ln)
            return r["transport"]

        transports = {first["transport"]} | set(self._executor().map(one, chunks))
        return Transfer(end - offset, _transport(transports),
                        206 if offset or length is not None else 200, first["etag"], total)

    # -- CUDA device memory (verbs + dma-buf; docs/python.md "GPU memory") ---------------------
    def _device_native(self, dev):
        why = _device_refusal(dev, self.fabric)
        if why:
            raise DeviceMemoryError(why)
        return self._native()

    def _put_device(self, bucket, key, dev, content_type, metadata, sync):
        if dev.nbytes == 0:  # nothing to read from the device
            return self.put_object(bucket, key, b"", content_type, metadata)
        self._device_native(dev)
        if sync and dev.sync:
            dev.sync()
        headers = _put_headers(content_type, metadata)
        prog = _Progress(None, dev.nbytes, f"put {key}")
        if dev.nbytes > self.multipart_threshold:  # parts straight from device memory
            def part(upload_id, n, off, ln):
                r = self._call(lambda native, _http: native.put_device(
                    bucket, key, dev.ptr + off, ln, {}, upload_id, n), host_memory=False)
                return Transfer(r["bytes"], r["transport"], r["status"], r["etag"])
            return self._put_multipart(bucket, key, dev.nbytes, headers, prog, part)
        r = self._call(lambda native, _http: native.put_device(bucket, key, dev.ptr, dev.nbytes,
                                                               headers, "", 0), host_memory=False)
        prog.add(dev.nbytes)
        return Transfer(r["bytes"], r["transport"], r["status"], r["etag"])

    def _get_device(self, bucket, key, dev, offset, length, sync):
        self._device_native(dev)
        if length is not None and length > dev.nbytes:
            raise ValueError(f"length {length} exceeds the buffer's {dev.nbytes} bytes")
        if length == 0 or dev.nbytes == 0:
            return Transfer(0, "none", 200)
        if sync and dev.sync:
            dev.sync()
        want = dev.nbytes if length is None else length
        if want > self.multipart_threshold:  # parallel ranges straight into device memory
            return self._get_parallel(bucket, key, offset, length, want,
                                      _Progress(None, want, f"get {key}"),
                                      lambda at, o, ln: self._call(
                                          lambda native, _http: native.get_into_device(
                                              bucket, key, dev.ptr + at, ln, o, ln),
                                          host_memory=False))
        r = self._call(lambda native, _http: native.get_into_device(
            bucket, key, dev.ptr, want, offset, -1 if length is None else length),
            host_memory=False)
        return Transfer(r["bytes"], r["transport"], r["status"], r["etag"], r["object_size"])

    def get_object(self, bucket, key, offset=0, length=None):
        """The object's bytes (an ObjectBytes: bytes with transport/etag/object_size)."""
        for attempt in range(2):  # once more if the object grew between HEAD and GET
            if length is None:
                try:
                    size = max(self.head_object(bucket, key)["size"] - offset, 0)
                except S3Error as e:
                    if e.fields:
                        raise
                    # A HEAD error has no document (a 403 says neither AccessDenied nor
                    # SignatureDoesNotMatch): a GET of one byte fetches the server's own.
                    self.get_into(bucket, key, bytearray(1), 0, 1)
                    raise
            else:
                size = length
            buf = bytearray(size)
            try:
                t = self.get_into(bucket, key, buf, offset, length if length is not None else (
                    None if offset == 0 else size))
            except BufferTooSmallError:
                if attempt == 0 and length is None:
                    continue
                raise
            out = ObjectBytes(bytes(memoryview(buf)[:int(t)]))
            out.transport, out.etag, out.object_size = t.transport, t.etag, t.object_size
            return out
        raise S3Error(f"GET /{bucket}/{key}: the object kept changing size")


def _changed(bucket, key, was, now):
    """The error for an object replaced while it was read in ranges (as a read with If-Match
    would have met: 412 PreconditionFailed)."""
    return S3Error(f"GET /{bucket}/{key}: the object changed while it was read (ETag {was}, "
                   f"then {now})", code="PreconditionFailed")


def _put_headers(content_type, metadata):
    headers = {"content-type": content_type} if content_type else {}
    for k, v in (metadata or {}).items():
        headers["x-amz-meta-" + k.lower()] = str(v)
    return headers


def _transport(seen):
    """One transport name for a transfer made of parts: "rdma", "http", or "mixed"."""
    seen = set(seen)
    return seen.pop() if len(seen) == 1 else ("none" if not seen else "mixed")


def _device_of(obj, what):
    """The _DeviceBuffer of obj (GPU memory), or DeviceMemoryError naming why it cannot be."""
    buf = _buffer(obj, writable=False)
    if not isinstance(buf, _DeviceBuffer):
        raise ValueError(f"rdmastor: {what} takes GPU memory (a CUDA tensor, an object with "
                         f"__cuda_array_interface__), not {type(obj).__name__}; host memory "
                         "that is reused belongs in an rdmastor.Buffer")
    if buf.ptr == 0 or buf.nbytes == 0:
        raise ValueError(f"rdmastor: {what} of an empty device buffer")
    why = _device_refusal(buf, "verbs")  # the build's reasons; a Client's fabric is its own
    if why:
        raise DeviceMemoryError(why)
    return buf


def register_device(tensor):
    """Registers the CUDA allocation holding `tensor` (GPU memory) for RDMA once, for every
    Client of this process: later transfers in any part of that allocation export and register
    nothing per call (by default each call exports the buffer's own pages and registers them
    for that call only). The driver tells nobody when memory is freed: call
    deregister_device(tensor) before the allocation goes back to the driver (cudaFree; with
    PyTorch's caching allocator, whose allocation is the cached segment, torch.cuda.empty_cache()
    or the allocator releasing segments; a tensor freed into the cache leaves the segment
    allocated). A range that was freed and allocated again is noticed (its CUDA buffer id
    changed) and dropped rather than used. Registering the same allocation again counts; it
    stays until deregistered as often."""
    buf = _device_of(tensor, "register_device")
    _native.register_device(buf.ptr, buf.nbytes)


def deregister_device(tensor):
    """Undoes one register_device of the allocation holding `tensor`; the last one drops its
    registrations in every Client. Returns False when it was not registered."""
    buf = _device_of(tensor, "deregister_device")
    return _native.deregister_device(buf.ptr)


def nearest_rdma_device(gpu):
    """The RDMA device (e.g. "mlx5_3") nearest a GPU on the PCIe tree, read from /sys: the NIC
    under the same PCIe switch, else the same root complex, else the same NUMA node. gpu: a
    CUDA device index or torch.device (needs PyTorch's PCI ids), or the GPU's PCI address as
    `nvidia-smi --query-gpu=pci.bus_id` prints it. Pass it as Client(rdma_device=...) (or
    MINIO_RDMA_DEVICE) in each rank's process so that GPUDirect RDMA crosses no socket."""
    if not isinstance(gpu, str):
        import torch
        props = torch.cuda.get_device_properties(gpu)
        try:
            gpu = "%04x:%02x:%02x.0" % (props.pci_domain_id, props.pci_bus_id,
                                        props.pci_device_id)
        except AttributeError:
            raise ValueError("rdmastor: this PyTorch does not report PCI ids: pass the GPU's "
                             "PCI address (nvidia-smi --query-gpu=pci.bus_id)") from None
    return _native.nearest_rdma_device(gpu)


def native_info():
    """What this build of the binding offers: {"verbs_built", "rdma_devices", "probe_error"}."""
    devs, err = _native.rdma_devices()
    return {"verbs_built": _native.built_with_verbs(), "rdma_devices": list(devs),
            "probe_error": err}
