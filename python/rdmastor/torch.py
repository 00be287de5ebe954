"""PyTorch integration: datasets over objects and checkpoints in object storage.

    from rdmastor.torch import ObjectDataset, ObjectIterableDataset, save, load
    from rdmastor.torch import save_sharded, load_sharded   # one shard per rank, a manifest
    ds = ObjectDataset("s3://data/train/", decode=lambda t, key: t.float())
    loader = torch.utils.data.DataLoader(ObjectIterableDataset("s3://data/train/"), num_workers=4)
    save(model.state_dict(), "s3://ckpt/step-100/model.pt")
    state = load("s3://ckpt/step-100/model.pt")

URLs are s3://bucket/key (or rdmastor://bucket/key). Without an explicit client, a Client built
from the environment is used (AWS_ENDPOINT_URL, AWS_* credentials; one per process).
"""

import os
import random
import threading

import torch
import torch.utils.data

from . import Buffer, Client, S3Error
from ._stream import MultipartWriter, ObjectReader

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


# Objects up to this size are read into a reused registered buffer (a map-style batch in calls
# of up to this many bytes) and copied out: a copy costs less CPU than registering fresh memory
# for every read. Larger ones are read straight into a new tensor (registered for that call).
_SCRATCH_MAX = 16 * 1024 * 1024


class _Scratch(threading.local):
    """A registered_tensor per thread (and per process: a forked DataLoader worker makes its own),
    grown when a read needs more: reads into it register nothing after the first."""

    def get(self, nbytes):
        pid = os.getpid()
        t = getattr(self, "t", None)
        if t is None or self.pid != pid or t.numel() < nbytes:
            self.t, self.pid = registered_tensor(max(nbytes, 1)), pid
        return self.t


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
    a new uint8 tensor and passed through decode(tensor, key) when given.

    A DataLoader with batch_size (automatic batching) fetches a batch through __getitems__:
    get_batch_into calls of up to 16 MiB each into a reused registered buffer per worker
    (registered once, not per item), each object then copied into its own tensor. Single items
    up to 16 MiB go through that buffer too; larger objects are read straight into their
    tensor."""

    def __init__(self, url_prefix, decode=None, client=None, keys=None):
        self._client = client
        self.decode = decode
        self.bucket, items = _resolve_keys(self, url_prefix, keys)
        self.keys = [k for k, _ in items]
        self.sizes = [s for _, s in items]
        self._scratch = _Scratch()

    def __getstate__(self):  # picklable for spawn-started workers (each makes its own buffer)
        state = self.__dict__.copy()
        state.pop("_scratch", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._scratch = _Scratch()

    @property
    def client(self):
        return self._client or default_client()

    def __len__(self):
        return len(self.keys)

    def _size(self, i):
        size = self.sizes[i]
        if size is None:
            size = self.client.head_object(self.bucket, self.keys[i])["size"]
        return size

    def _finish(self, t, key):
        return self.decode(t, key) if self.decode else t

    def __getitem__(self, i):
        return self.__getitems__([i])[0]

    def __getitems__(self, indices):
        """The items at indices (a list): get_batch_into calls of up to 16 MiB into the reused
        buffer, each object then copied into its own tensor; objects over 16 MiB are read one by
        one straight into their tensors."""
        indices = list(indices)
        sizes = [self._size(i) for i in indices]
        slot = max(sizes, default=0)
        client = self.client
        if slot == 0 or slot > _SCRATCH_MAX:
            out = []
            for i, size in zip(indices, sizes):
                t = torch.empty(size, dtype=torch.uint8)
                n = client.get_into(self.bucket, self.keys[i], t)
                out.append(self._finish(t[:n], self.keys[i]))
            return out
        per_call = min(len(indices), _SCRATCH_MAX // slot)
        buf = self._scratch.get(per_call * slot)[:per_call * slot].view(per_call, slot)
        out = []
        for at in range(0, len(indices), per_call):
            part = indices[at:at + per_call]
            counts = client.get_batch_into(self.bucket, [self.keys[i] for i in part], buf, slot)
            out.extend(self._finish(buf[j, :n].clone(), self.keys[i])
                       for j, (i, n) in enumerate(zip(part, counts)))
        return out


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
    reused buffer per worker (a registered_tensor); decode(view, key) gets a view of it that is
    valid only during the call (it must return something that owns its memory). Without decode,
    a copy is yielded. shuffle: the key order changes per epoch (set_epoch) the same way in
    every worker.

    batch_size=B: each worker reads B objects of its shard at a time with one get_batch_into
    call into a reused registered buffer of B slots (slot: the batch's largest object) and yields
    one item per batch: (data, lengths), a uint8 tensor of shape (b, slot) (b <= B for the
    last batch; row j holds lengths[j] bytes, zeros after them) and an int64 tensor of the byte
    counts; or, with decode, decode(view, lengths, keys) of the buffer's view (valid only during
    the call). Use it with DataLoader(batch_size=None): the batches are already made."""

    def __init__(self, url_prefix, decode=None, client=None, keys=None, shuffle=False, seed=0,
                 rank=None, world_size=None, batch_size=None):
        if batch_size is not None and int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self._client = client
        self.decode = decode
        self.bucket, items = _resolve_keys(self, url_prefix, keys)
        self.items = items
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.rank = rank
        self.world_size = world_size
        self.batch_size = None if batch_size is None else int(batch_size)

    @property
    def client(self):
        return self._client or default_client()

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.items)

    # Mid-epoch resume, torchdata's StatefulDataLoader protocol: it calls state_dict() in each
    # worker (the worker's copy of the dataset) with the items it hands over, and
    # load_state_dict(that state) in the same worker of a restarted job before iterating.
    def state_dict(self):
        """Where this worker (of this rank) is in the epoch: the epoch, its shard and how many
        objects of the shard it has yielded."""
        shard, shards = shard_info(self.rank, self.world_size)
        return {"epoch": self.epoch, "seed": self.seed, "shuffle": self.shuffle,
                "shard": shard, "shards": shards, "objects": len(self.items),
                "yielded": getattr(self, "_yielded", 0)}

    def load_state_dict(self, state):
        """Resumes from state_dict()'s state: the next iteration of the same epoch (in the same
        worker of the same rank, over the same listing) skips the objects yielded before."""
        if state["objects"] != len(self.items) or state["seed"] != self.seed or bool(
                state["shuffle"]) != bool(self.shuffle):
            raise ValueError("the state is of another dataset (objects, seed or shuffle differ)")
        self.epoch = state["epoch"]
        self._resume = dict(state)

    def _shard(self):
        order = list(range(len(self.items)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        shard, shards = shard_info(self.rank, self.world_size)
        mine = order[shard::shards]
        resume, self._resume = getattr(self, "_resume", None), None
        skip = 0
        if resume is not None:
            if (resume["shard"], resume["shards"]) != (shard, shards):
                raise ValueError(f"the state is of shard {resume['shard']}/{resume['shards']}, "
                                 f"this worker reads shard {shard}/{shards}: resume with the "
                                 "same ranks and workers")
            if resume["epoch"] == self.epoch:
                skip = min(int(resume["yielded"]), len(mine))
        self._yielded = skip
        return mine[skip:]

    def __iter__(self):
        if self.batch_size is not None:
            yield from self._batches()
            return
        client = self.client
        buf = torch.empty(0, dtype=torch.uint8)
        for i in self._shard():
            key, size = self.items[i]
            if size is None:
                size = client.head_object(self.bucket, key)["size"]
            if buf.numel() < size:
                buf = registered_tensor(max(size, 2 * buf.numel()))
            view = buf[:size]
            n = client.get_into(self.bucket, key, view)
            view = view[:n]
            self._yielded += 1
            yield self.decode(view, key) if self.decode else view.clone()

    def _batches(self):
        client = self.client
        mine = self._shard()
        sizes = [s for _, s in self.items]
        buf = torch.empty(0, dtype=torch.uint8)
        for at in range(0, len(mine), self.batch_size):
            idx = mine[at:at + self.batch_size]
            keys = [self.items[i][0] for i in idx]
            for i in idx:
                if sizes[i] is None:
                    sizes[i] = client.head_object(self.bucket, self.items[i][0])["size"]
            slot = max(max(sizes[i] for i in idx), 1)
            if buf.numel() < slot * len(idx):
                buf = registered_tensor(max(slot * len(idx), 2 * buf.numel()))
            view = buf[:slot * len(idx)].view(len(idx), slot)
            counts = client.get_batch_into(self.bucket, keys, view, slot)
            lengths = torch.tensor(counts, dtype=torch.int64)
            self._yielded += len(idx)
            if self.decode:
                yield self.decode(view, lengths, keys)
                continue
            data = view.clone()
            for j, n in enumerate(counts):
                if n < slot:
                    data[j, n:] = 0
            yield data, lengths


def save(obj, url, client=None, **kwargs):
    """torch.save(obj) to the object at url, streamed: torch's writes go into part buffers that
    are uploaded (multipart, parts in parallel) as they fill, so memory beyond obj is bounded by
    (max_concurrency + 1) * part_size whatever the checkpoint's size. Returns a Transfer."""
    bucket, key = split_url(url)
    w = MultipartWriter(client or default_client(), bucket, key)
    try:
        torch.save(obj, w, **kwargs)
        return w.finish()
    except BaseException:
        w.abort()
        raise


def load(url, client=None, map_location=None, **kwargs):
    """torch.load of the object at url, streamed: each tensor's bytes are read straight into its
    storage (ranged reads), so memory beyond the result is one 1 MiB block."""
    bucket, key = split_url(url)
    r = ObjectReader(client or default_client(), bucket, key)
    return torch.load(r, map_location=map_location, **kwargs)


# -- sharded checkpoints (one shard per rank, committed by a manifest) -------------------------
_MANIFEST = "manifest.json"
_FORMAT = "rdmastor-sharded/1"


def _rank_world(rank, world_size):
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        if rank is None:
            rank = dist.get_rank()
        if world_size is None:
            world_size = dist.get_world_size()
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in 0..{world_size - 1}")
    return rank, world_size


def _collective():
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _manifest(client, bucket, key):
    import json
    data = client.get_object(bucket, f"{key}/{_MANIFEST}")
    m = json.loads(bytes(data))
    if m.get("format") != _FORMAT:
        raise ValueError(f"s3://{bucket}/{key}/{_MANIFEST} is not an rdmastor sharded checkpoint")
    return m


def _iso_time(text):
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _remove_superseded(client, bucket, key, manifest, previous):
    """After a commit: the previous checkpoint's shards, and the shards and unfinished uploads
    that saves which never committed (a rank killed mid-save) left under key/, are deleted. An
    orphan is a shard-named object not in the new manifest and written (server time) before the
    new checkpoint's first shard, so a save started since, still running, keeps its shards."""
    import re
    mine = {s["key"] for s in manifest["shards"]}
    shard_name = re.compile(re.escape(key) + r"/[^/]+/shard-\d{5}-of-\d{5}\.pt")
    listed = [o for o in client.list_objects(bucket, prefix=key + "/")
              if shard_name.fullmatch(o.key)]
    began = min((_iso_time(o.last_modified) for o in listed if o.key in mine), default=None)
    if began is None:
        return
    stale = {s["key"] for s in (previous or {}).get("shards", [])} - mine
    stale |= {o.key for o in listed if o.key not in mine and _iso_time(o.last_modified) < began}
    if stale:
        client.delete_objects(bucket, sorted(stale))
    for k, upload_id, initiated in list(client.list_multipart_uploads(bucket, prefix=key + "/")):
        if shard_name.fullmatch(k) and k not in mine and _iso_time(initiated) < began:
            client.abort_multipart_upload(bucket, k, upload_id)


def save_sharded(state_dict, url, rank=None, world_size=None, client=None, generation=None):
    """Saves this rank's state_dict as one shard of a checkpoint at url (a prefix), every rank in
    parallel (each streamed over RDMA as save() does); the checkpoint becomes visible only when
    rank 0 commits url/manifest.json, after every shard landed (their sizes and ETags gathered
    through torch.distributed), so a reader (load_sharded) never sees a half-written one. Shards
    go under url/<generation>/, so the previous checkpoint at url stays readable until the new
    manifest replaces its manifest; its shards are deleted after that, with what saves that
    never committed (a rank killed mid-save) left behind. rank / world_size come
    from torch.distributed when it is initialized; without it (one process per rank and no
    collective), pass them and the same generation to every rank, and rank 0 commits only once
    all shards exist. Returns the manifest (a dict)."""
    import json
    import time as _time
    client = client or default_client()
    bucket, key = split_url(url)
    key = key.rstrip("/")
    rank, world = _rank_world(rank, world_size)
    collective = _collective()
    if generation is None:
        if world > 1 and not collective:
            raise ValueError("save_sharded without torch.distributed needs generation= (the same "
                             "on every rank)")
        gen = [f"{_time.strftime('%Y%m%dT%H%M%S', _time.gmtime())}-{random.getrandbits(32):08x}"]
        if collective:
            torch.distributed.broadcast_object_list(gen, src=0)
        generation = gen[0]
    shard_key = f"{key}/{generation}/shard-{rank:05d}-of-{world:05d}.pt"
    t = save(state_dict, f"s3://{bucket}/{shard_key}", client=client)
    mine = {"key": shard_key, "size": int(t), "etag": t.etag}
    if collective:
        shards = [None] * world
        torch.distributed.all_gather_object(shards, mine)
    else:
        shards = [mine] + [None] * (world - 1)
    manifest = None
    if rank == 0:
        for r in range(world):  # without a collective: the other ranks' shards, from the store
            if shards[r] is None:
                k = f"{key}/{generation}/shard-{r:05d}-of-{world:05d}.pt"
                h = client.head_object(bucket, k)
                shards[r] = {"key": k, "size": h["size"], "etag": h["etag"]}
        try:
            previous = _manifest(client, bucket, key)
        except S3Error:
            previous = None
        manifest = {"format": _FORMAT, "generation": generation, "world_size": world,
                    "shards": shards}
        client.put_object(bucket, f"{key}/{_MANIFEST}", json.dumps(manifest).encode(),
                          content_type="application/json")
        _remove_superseded(client, bucket, key, manifest, previous)
    if collective:
        box = [manifest]
        torch.distributed.broadcast_object_list(box, src=0)  # every rank returns after the commit
        manifest = box[0]
    return manifest


def load_sharded(url, rank=None, client=None, map_location=None, **kwargs):
    """This rank's shard of the checkpoint committed at url (its manifest names the shards):
    rank from torch.distributed when initialized, else 0. A shard that changed since the commit
    (its ETag) raises ValueError instead of loading a mix of checkpoints."""
    client = client or default_client()
    bucket, key = split_url(url)
    key = key.rstrip("/")
    m = _manifest(client, bucket, key)
    if rank is None:
        rank = _rank_world(None, None)[0] if _collective() else 0
    shards = m["shards"]
    if not 0 <= int(rank) < len(shards):
        raise ValueError(f"rank {rank}: the checkpoint has {len(shards)} shards")
    shard = shards[int(rank)]
    r = ObjectReader(client, bucket, shard["key"])
    if r.etag != shard["etag"]:
        raise ValueError(f"s3://{bucket}/{shard['key']} changed after the checkpoint was "
                         f"committed (ETag {r.etag}, manifest {shard['etag']})")
    return torch.load(r, map_location=map_location, **kwargs)
