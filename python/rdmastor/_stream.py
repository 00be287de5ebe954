"""Streams between Python's file protocol and objects, in bounded memory: MultipartWriter (a
writable stream uploading parts as they fill: rdmastor.torch.save, Client.upload_file) and
ObjectReader (a seekable readable stream of ranged reads into the caller's memory:
rdmastor.torch.load)."""

import io

from . import Buffer, ConnectionError, S3Error, Transfer, _changed  # noqa: A004


class MultipartWriter(io.RawIOBase):
    """A write-only stream into an object: bytes are gathered into part buffers of the client's
    part_size (rdmastor.Buffer: registered once per upload thread) and each full part is uploaded
    while the next fills, at most max_concurrency at once; the buffers are the only memory it
    holds (max_concurrency + 1 parts). A stream that ends within its first part is one PUT. An
    error aborts the upload: the object is unchanged."""

    def __init__(self, client, bucket, key, callback=None, content_type=None, metadata=None):
        super().__init__()
        self.client, self.bucket, self.key = client, bucket, key
        self.callback = callback
        self.content_type, self.metadata = content_type, metadata
        self.part_size = client.part_size
        self.free = []  # part buffers not in flight
        self.cur = self._buffer()
        self.fill = 0
        self.size = 0
        self.upload_id = None
        self.inflight = []  # (part number, future, buffer)
        self.parts = []  # (part number, Transfer)
        self.result = None

    def _buffer(self):
        return self.free.pop() if self.free else memoryview(Buffer(self.part_size))

    def writable(self):
        return True

    def write(self, b):
        with memoryview(b) as mv:
            mv = mv.cast("B")
            n = len(mv)
            pos = 0
            while pos < n:
                take = min(self.part_size - self.fill, n - pos)
                self.cur[self.fill:self.fill + take] = mv[pos:pos + take]
                self.fill += take
                pos += take
                if self.fill == self.part_size:
                    self._send_part()
        self.size += n
        return n

    def readfrom(self, f):
        """Reads the next bytes of file f straight into the current part buffer; 0 at its end."""
        n = f.readinto(self.cur[self.fill:])
        if not n:
            return 0
        self.fill += n
        self.size += n
        if self.fill == self.part_size:
            self._send_part()
        return n

    def _reap(self, block):
        """Collects finished uploads (the oldest one at least when block)."""
        while self.inflight and (block or self.inflight[0][1].done()):
            n, fut, buf = self.inflight.pop(0)
            t = fut.result()
            self.parts.append((n, t))
            self.free.append(buf)
            if self.callback:
                self.callback(int(t))
            block = False

    def _send_part(self):
        if self.upload_id is None:
            self.upload_id = self.client.create_multipart_upload(
                self.bucket, self.key, self.content_type, self.metadata)
        n = len(self.parts) + len(self.inflight) + 1
        data = self.cur[:self.fill]
        fut = self.client._executor().submit(self.client._upload_part, self.bucket, self.key,
                                             self.upload_id, n, data)
        self.inflight.append((n, fut, self.cur))
        self._reap(block=len(self.inflight) >= self.client.max_concurrency)
        self.cur, self.fill = self._buffer(), 0

    def finish(self):
        """Uploads what is left and commits the object; returns its Transfer."""
        if self.upload_id is None:
            self.result = self.client.put_object(self.bucket, self.key, self.cur[:self.fill],
                                                 self.content_type, self.metadata)
            if self.callback:
                self.callback(self.fill)
            return self.result
        if self.fill:
            self._send_part()
        while self.inflight:
            self._reap(block=True)
        self.parts.sort(key=lambda p: p[0])
        etag = self.client.complete_multipart_upload(self.bucket, self.key, self.upload_id,
                                                     [(n, t.etag) for n, t in self.parts])
        transports = {t.transport for _, t in self.parts}
        self.result = Transfer(self.size, transports.pop() if len(transports) == 1 else "mixed",
                               200, etag)
        return self.result

    def abort(self):
        for _, fut, _ in self.inflight:
            fut.cancel()
        for _, fut, _ in self.inflight:
            try:
                fut.result()
            except Exception:  # the upload is being aborted anyway
                pass
        self.inflight = []
        if self.upload_id is not None:
            try:
                self.client.abort_multipart_upload(self.bucket, self.key, self.upload_id)
            except (S3Error, ConnectionError):
                pass


class ObjectReader(io.RawIOBase):
    """A seekable read-only stream over an object: reads of at least `block` bytes go straight
    into the caller's memory (torch.load hands its tensors' storage to readinto: no copy; large
    ones as parallel ranges), smaller ones are served from one cached block."""

    def __init__(self, client, bucket, key, block=1 << 20):
        super().__init__()
        self.client, self.bucket, self.key = client, bucket, key
        head = client.head_object(bucket, key)
        self.size, self.etag = head["size"], head["etag"]
        self.pos = 0
        self.block = block
        self.cache = bytearray(block)
        self.cache_at, self.cache_len = 0, 0

    def _read(self, dst, offset, length):
        """A ranged read, checked to be of the version the stream started with: an object
        replaced mid-read raises instead of yielding a mix of two checkpoints."""
        t = self.client.get_into(self.bucket, self.key, dst, offset=offset, length=length)
        if t.etag != self.etag:
            raise _changed(self.bucket, self.key, self.etag, t.etag)
        return int(t)

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self.pos = base + offset
        return self.pos

    def readinto(self, b):
        with memoryview(b) as mv:
            mv = mv.cast("B")
            n = min(len(mv), self.size - self.pos)
            if n <= 0:
                return 0
            if n >= self.block:
                got = self._read(mv[:n], self.pos, n)
                self.pos += got
                return got
            if not (self.cache_at <= self.pos and self.pos + n <= self.cache_at + self.cache_len):
                ln = min(self.block, self.size - self.pos)
                self.cache_len = self._read(self.cache, self.pos, ln)
                self.cache_at = self.pos
            at = self.pos - self.cache_at
            n = min(n, self.cache_len - at)
            mv[:n] = self.cache[at:at + n]
            self.pos += n
            return n
