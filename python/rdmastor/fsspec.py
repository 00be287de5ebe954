"""An fsspec filesystem for rdmastor, registered for the protocol rdmastor:// on import.

    import fsspec, rdmastor.fsspec
    with fsspec.open("rdmastor://bucket/data.csv", endpoint="http://127.0.0.1:9000") as f:
        df = pandas.read_csv(f)

Reads go through Client.get_into (ranged, over RDMA when the server offers it); writes are
buffered and uploaded on close (multipart when large). Storage options are Client's arguments
(endpoint, access_key, secret_key, region, rdma, allow_http_fallback, ...).
"""

import fsspec
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from . import Client, S3Error


class RdmastorFileSystem(AbstractFileSystem):
    protocol = ("rdmastor",)
    root_marker = ""

    def __init__(self, client=None, **client_kwargs):
        super().__init__(client=client, **client_kwargs)
        self.client = client or Client(**client_kwargs)

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("rdmastor://"):
            path = path[len("rdmastor://"):]
        return path.strip("/")

    @staticmethod
    def _split(path):
        bucket, _, key = path.partition("/")
        return bucket, key

    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
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
        self._parts = []

    def _upload_chunk(self, final=False):
        # The whole file is uploaded at close (Client.put_object goes multipart when large).
        self._parts.append(self.buffer.getvalue())
        if final:
            bucket, key = self.fs._split(self.path)
            self.fs.client.put_object(bucket, key, b"".join(self._parts))
            self._parts = []
        return True


fsspec.register_implementation("rdmastor", RdmastorFileSystem, clobber=True)
