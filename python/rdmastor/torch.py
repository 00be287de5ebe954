"""PyTorch integration: datasets over objects and checkpoints in object storage.

    from rdmastor.torch import ObjectDataset, ObjectIterableDataset, save, load
    ds = ObjectDataset("s3://data/train/", decode=lambda t, key: t.float())
    loader = torch.utils.data.DataLoader(ObjectIterableDataset("s3://data/train/"), num_workers=4)
    save(model.state_dict(), "s3://ckpt/step-100/model.pt")
    state = load("s3://ckpt/step-100/model.pt")

URLs are s3://bucket/key (or rdmastor://bucket/key). Without an explicit client, a Client built
from the environment is used (AWS_ENDPOINT_URL, AWS_* credentials; one per process).
"""

import io
import os
import random
import threading

import torch
import torch.utils.data

from . import Buffer, Client

_default = {}
_default_lock = threading.Lock()


def default_client():
    """The process's Client from the environment (re-created after fork)."""
    pid = os.getpid()
    with _default_lock:
        c = _default.get(pid)
        if c is None:
            c = Client()
            _default.clear()
            _default[pid] = c
        return c


def registered_tensor(nbytes):
    """A uint8 CPU tensor of nbytes on an rdmastor.Buffer: memory registered for RDMA once per
    client thread, so reading into it again and again registers nothing per call. Slices of it
    keep that (the registration covers the whole Buffer)."""
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    return torch.frombuffer(Buffer(nbytes), dtype=torch.uint8)


def split_url(url):
    """("bucket", "key") of s3://bucket/key or rdmastor://bucket/key."""
    for scheme in ("s3://", "rdmastor://"):
        if url.startswith(scheme):
            rest = url[len(scheme):]
            bucket, _, key = rest.partition("/")
            if not bucket:
                break
            return bucket, key
    raise ValueError(f"expected s3://bucket/key or rdmastor://bucket/key, not {url!r}")


def _list_keys(client, url_prefix):
    bucket, prefix = split_url(url_prefix)
    items = [(o.key, o.size) for o in client.list_objects(bucket, prefix=prefix)]
    items.sort()
    return bucket, items


def _resolve_keys(dataset, url_prefix, keys):
    """(bucket, [(key, size or None)]): the given keys, else a listing of url_prefix. The dataset's
    client is touched only to list, so a dataset built from keys makes no client before it reads."""
    if keys is None:
        return _list_keys(dataset.client, url_prefix)
    bucket, _ = split_url(url_prefix)
    return bucket, [(k, None) for k in keys]


class ObjectDataset(torch.utils.data.Dataset):
    """Map-style dataset: item i is the i-th object (sorted by key) under url_prefix, read into
    a new uint8 tensor and passed through decode(tensor, key) when given."""

    def __init__(self, url_prefix, decode=None, client=None, keys=None):
        self._client = client
        self.decode = decode
        self.bucket, items = _resolve_keys(self, url_prefix, keys)
        self.keys = [k for k, _ in items]
        self.sizes = [s for _, s in items]

    @property
    def client(self):
        return self._client or default_client()

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        key = self.keys[i]
        size = self.sizes[i]
        if size is None:
            size = self.client.head_object(self.bucket, key)["size"]
        t = torch.empty(size, dtype=torch.uint8)
        n = self.client.get_into(self.bucket, key, t)
        t = t[:n]
        return self.decode(t, key) if self.decode else t


def shard_info(rank=None, world_size=None):
    """(shard index, shard count) of this DataLoader worker in this distributed rank."""
    if rank is None or world_size is None:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, world_size = torch.distributed.get_rank(), torch.distributed.get_world_size()
        else:
            rank = int(os.environ.get("RANK", 0)) if rank is None else rank
            world_size = int(os.environ.get("WORLD_SIZE", 1)) if world_size is None else world_size
    info = torch.utils.data.get_worker_info()
    wid, nworkers = (info.id, info.num_workers) if info else (0, 1)
    return rank * nworkers + wid, world_size * nworkers


class ObjectIterableDataset(torch.utils.data.IterableDataset):
    """Iterable dataset over the objects under url_prefix, sharded so that every object is read
    exactly once per epoch across DataLoader workers and distributed ranks (rank/world_size
    from the arguments, torch.distributed, or RANK/WORLD_SIZE). Each object is read into one
    reused buffer per worker (a registered_tensor); decode(view, key) gets a view of it that is valid only during the
    call (it must return something that owns its memory). Without decode, a copy is yielded.
    shuffle: the key order changes per epoch (set_epoch) the same way in every worker."""

    def __init__(self, url_prefix, decode=None, client=None, keys=None, shuffle=False, seed=0,
                 rank=None, world_size=None):
        self._client = client
        self.decode = decode
        self.bucket, items = _resolve_keys(self, url_prefix, keys)
        self.items = items
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.rank = rank
        self.world_size = world_size

    @property
    def client(self):
        return self._client or default_client()

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        order = list(range(len(self.items)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        shard, shards = shard_info(self.rank, self.world_size)
        client = self.client
        buf = torch.empty(0, dtype=torch.uint8)
        for i in order[shard::shards]:
            key, size = self.items[i]
            if size is None:
                size = client.head_object(self.bucket, key)["size"]
            if buf.numel() < size:
                buf = registered_tensor(max(size, 2 * buf.numel()))
            view = buf[:size]
            n = client.get_into(self.bucket, key, view)
            view = view[:n]
            yield self.decode(view, key) if self.decode else view.clone()


def save(obj, url, client=None, **kwargs):
    """torch.save(obj) to the object at url (multipart with parallel parts when large)."""
    bucket, key = split_url(url)
    bio = io.BytesIO()
    torch.save(obj, bio, **kwargs)
    return (client or default_client()).put_object(bucket, key, bio.getbuffer())


def load(url, client=None, map_location=None, **kwargs):
    """torch.load of the object at url."""
    bucket, key = split_url(url)
    data = (client or default_client()).get_object(bucket, key)
    return torch.load(io.BytesIO(data), map_location=map_location, **kwargs)
