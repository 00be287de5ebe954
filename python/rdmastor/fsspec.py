"""An fsspec filesystem for rdmastor, registered for the protocol rdmastor:// on import.

    import fsspec, rdmastor.fsspec
    with fsspec.open("rdmastor://bucket/data.csv", endpoint="http://127.0.0.1:9000") as f:
        df = pandas.read_csv(f)

Reads go through Client.get_into (ranged, over RDMA when the server offers it); writes stream
in parts of the block size (at least 5 MiB) as a multipart upload, or one PUT for a file within
one block. Storage options are Client's arguments (endpoint, access_key, secret_key, region,
rdma, ...) or s3fs's names for them (endpoint_url, key, secret, token, client_kwargs={
"endpoint_url", "region_name"}). For s3:// URLs, register it for that protocol:
fsspec.register_implementation("s3", rdmastor.fsspec.RdmastorFileSystem, clobber=True).
"""

import fsspec
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from . import Client, S3Error

_MIN_PART = 5 * 1024 * 1024  # S3's smallest part (all but the last)


def _client_options(kw):
    """Client's arguments from storage options, s3fs's names mapped onto ours."""
    kw = dict(kw)
    extra = kw.pop("client_kwargs", None) or {}
    for theirs, ours in (("endpoint_url", "endpoint"), ("region_name", "region")):
        if theirs in extra:
            kw.setdefault(ours, extra.pop(theirs))
    if extra:
        raise TypeError(f"client_kwargs not understood by rdmastor: {sorted(extra)}")
    for theirs, ours in (("endpoint_url", "endpoint"), ("key", "access_key"),
                         ("secret", "secret_key")):
        if theirs in kw:
            v = kw.pop(theirs)
            if ours in kw and kw[ours] != v:
                raise TypeError(f"both {theirs}= and {ours}= given")
            kw[ours] = v
    if kw.pop("anon", False):
        raise ValueError("rdmastor: anonymous access (anon=True) is not supported")
    return kw


class RdmastorFileSystem(AbstractFileSystem):
    protocol = ("rdmastor", "s3", "s3a")
    root_marker = ""

    def __init__(self, client=None, **storage_options):
        super().__init__(client=client, **storage_options)
        self.client = client or Client(**_client_options(storage_options))

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        for scheme in ("rdmastor://", "s3://", "s3a://"):
            if path.startswith(scheme):
                path = path[len(scheme):]
                break
        return path.strip("/")

    @staticmethod
    def _split(path):
        bucket, _, key = path.partition("/")
        return bucket, key

    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        if not bucket:  # the root: the buckets
            out = [{"name": b["name"], "size": 0, "type": "directory"}
                   for b in self.client.list_buckets()]
            return out if detail else [o["name"] for o in out]
        prefix = key + "/" if key else ""
        out = []
        for o in self.client.list_objects(bucket, prefix=prefix, delimiter="/"):
            name = f"{bucket}/{o.key.rstrip('/')}"
            if o.is_prefix:
                out.append({"name": name, "size": 0, "type": "directory"})
            else:
                out.append({"name": name, "size": o.size, "type": "file", "ETag": o.etag})
        if not out and key:
            info = self.info(path)
            if info["type"] == "file":
                out = [info]
        return out if detail else [o["name"] for o in out]

    def info(self, path, **kwargs):
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        if key:
            try:
                h = self.client.head_object(bucket, key)
                return {"name": path, "size": h["size"], "type": "file", "ETag": h["etag"]}
            except S3Error as e:
                if e.status != 404:
                    raise
            if any(True for _ in self.client.list_objects(bucket, prefix=key + "/", max_keys=1)):
                return {"name": path, "size": 0, "type": "directory"}
            raise FileNotFoundError(path)
        return {"name": bucket, "size": 0, "type": "directory"}

    def mkdir(self, path, create_parents=True, **kwargs):
        bucket, key = self._split(self._strip_protocol(path))
        if not key:
            self.client.create_bucket(bucket)

    def rm_file(self, path):
        bucket, key = self._split(self._strip_protocol(path))
        self.client.delete_object(bucket, key)

    def _rm(self, path):
        self.rm_file(path)

    def cat_file(self, path, start=None, end=None, **kwargs):
        bucket, key = self._split(self._strip_protocol(path))
        if start is None and end is None:
            return bytes(self.client.get_object(bucket, key))
        size = self.info(path)["size"]
        start = 0 if start is None else (start if start >= 0 else max(size + start, 0))
        end = size if end is None else (end if end >= 0 else max(size + end, 0))
        end = min(end, size)
        if end <= start:
            return b""
        return bytes(self.client.get_object(bucket, key, offset=start, length=end - start))

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        return RdmastorFile(self, self._strip_protocol(path), mode, block_size=block_size or
                            self.blocksize, cache_options=cache_options, **kwargs)


class RdmastorFile(AbstractBufferedFile):
    def _fetch_range(self, start, end):
        bucket, key = self.fs._split(self.path)
        end = min(end, self.size)
        if end <= start:
            return b""
        buf = bytearray(end - start)
        n = self.fs.client.get_into(bucket, key, buf, offset=start, length=end - start)
        return bytes(memoryview(buf)[:int(n)])

    def _initiate_upload(self):
        # Started with the first full part (_upload_chunk): a file within one block is one PUT.
        self._upload_id, self._parts = None, []

    def _upload_chunk(self, final=False):
        """Sends the buffer as the next part once it holds at least 5 MiB (or at close); a
        file that never filled a block is one PUT at close."""
        bucket, key = self.fs._split(self.path)
        data = self.buffer.getbuffer()
        try:
            if final and self._upload_id is None:
                self.fs.client.put_object(bucket, key, data)
                return True
            if not final and len(data) < _MIN_PART:
                return False  # keep buffering: parts but the last are at least 5 MiB
            client = self.fs.client
            if self._upload_id is None:
                self._upload_id = client.create_multipart_upload(bucket, key)
            if len(data) or not self._parts:
                n = len(self._parts) + 1
                self._parts.append((n, client.upload_part(bucket, key, self._upload_id, n,
                                                          data).etag))
            if final:
                client.complete_multipart_upload(bucket, key, self._upload_id, self._parts)
            return True
        except BaseException:
            if self._upload_id is not None:
                self._abort_upload(bucket, key)
            raise
        finally:
            data.release()

    def _abort_upload(self, bucket, key):
        try:
            self.fs.client.abort_multipart_upload(bucket, key, self._upload_id)
        except Exception:  # the original error is what the caller needs
            pass
        self._upload_id = None

    def discard(self):
        if getattr(self, "_upload_id", None) is not None:
            self._abort_upload(*self.fs._split(self.path))
        super().discard()


fsspec.register_implementation("rdmastor", RdmastorFileSystem, clobber=True)
