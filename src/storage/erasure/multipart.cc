// Multipart uploads on an erasure set: upload records, part commits, listing, abort, completion.

#include <algorithm>
#include <map>
#include <tuple>

#include "common/hash.h"
#include "storage/erasure/set.h"
#include "storage/multipart_checksum.h"
#include "storage/s3_limits.h"

namespace rdmastor::storage {


Result<UploadRecord> ErasureSet::LoadUpload(const std::string& bucket, const std::string& key,
                                            const std::string& upload_id) {
  if (!IsUploadId(upload_id)) return MakeError(ErrorCode::kNoSuchUpload);
  const std::string file = Join(Join(rel::MultipartBucket(bucket), upload_id), kUploadFile);
  std::vector<std::optional<UploadRecord>> recs(roots_.size());
  const int copies = Count(ForEachDrive(
      [&](size_t p) {
        auto raw = roots_[p]->ReadFile(file);
        if (!raw.ok() || !raw->has_value()) return false;
        auto parsed = ParseUploadRecord(**raw, file);
        if (parsed.ok()) recs[p] = std::move(*parsed);
        return parsed.ok();
      },
      DriveWork::kLookup));
  auto first = std::find_if(recs.begin(), recs.end(), [](const auto& r) { return r.has_value(); });
  if (first == recs.end() || copies < read_quorum()) return MakeError(ErrorCode::kNoSuchUpload);
  auto& rec = *first;
  if (rec->key != key) return MakeError(ErrorCode::kNoSuchUpload, "upload belongs to another key");
  return *rec;
}

Result<std::string> ErasureSet::NewMultipartUpload(const std::string& bucket,
                                                   const std::string& key, const PutOptions& opts) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  auto made = NewUploadRecord(key, opts);
  if (!made.ok()) return made.error();
  UploadRecord rec = std::move(*made);
  const Shape shape = ShapeFor(rec.storage_class);
  rec.parity = shape.parity;  // the parts' geometry, whatever the settings when they arrive
  const std::string id = hash::RandomHex(16);
  std::vector<bool> alive(roots_.size(), true);
  Stagings st(*this, alive, /*create=*/true);
  std::shared_lock bucket_lock(BucketLock(bucket));
  const std::string mp = rel::MultipartBucket(bucket);
  const int done = Count(ForEachDrive(alive, [&](size_t p) {
    Drive& d = *roots_[p];
    const std::string staged = Join(st[p], "upload");
    if (!d.MakeDir(staged).ok() ||
        !d.WriteFile(Join(staged, kUploadFile), SerializeUploadRecord(rec)).ok() ||
        !d.MakeDirAll(rel::MultipartRoot(), mp).ok() || !d.Rename(staged, Join(mp, id)).ok()) {
      return false;
    }
    (void)d.FsyncDir(mp);
    return true;
  }));
  if (done < shape.write_quorum()) {
    ForEachDrive([&](size_t p) { return roots_[p]->RemoveAll(Join(mp, id)).ok(); });
    return WriteQuorumError(done, shape.write_quorum());
  }
  return id;
}

Result<PartInfo> ErasureSet::PutObjectPart(const std::string& bucket, const std::string& key,
                                           const std::string& upload_id, int part_number,
                                           BodySource& body, std::optional<uint64_t> size,
                                           const CommitCheck& check) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "Part number must be an integer between 1 and 10000, inclusive");
  }
  auto rec = LoadUpload(bucket, key, upload_id);
  if (!rec.ok()) return rec.error();
  auto shape = ShapeOf(*rec);
  if (!shape.ok()) return shape.error();
  const int quorum = shape->write_quorum();
  auto codec = GetCodec(shape->data, shape->parity);
  if (!codec.ok()) return codec.error();
  const std::vector<int> dist = Distribution(key);
  std::vector<bool> alive(roots_.size(), true);
  Stagings st(*this, alive, /*create=*/true);
  if (Count(alive) < quorum) return WriteQuorumError(Count(alive), quorum);
  std::string md5;
  auto got = Encode(body, size, MaxStoredPutSize(rec->internal), **codec, dist, st, alive, "part",
                    /*inline_limit=*/std::nullopt, nullptr, check ? nullptr : &md5);
  if (!got.ok()) return got.error();
  CommitInfo ci;
  if (check) {
    auto r = check(*got);
    if (!r.ok()) return r.error();
    ci = std::move(*r);
  } else {
    ci.etag = md5;
  }
  PartRecord part;
  part.info.number = part_number;
  part.info.etag = StripQuotes(ci.etag);
  part.info.size = *got;
  part.info.mtime_ns = NowNs();
  part.info.checksums = ci.checksums;
  part.data_file = PartFileName(static_cast<size_t>(part_number)) + "." + hash::RandomHex(8);
  // The upload's lock orders part commits against completion and abort (on every node).
  auto lock = LockUpload(bucket, upload_id, "PutObjectPart");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  rec = LoadUpload(bucket, key, upload_id);  // aborted or completed meanwhile?
  if (!rec.ok()) return rec.error();
  if ((*lock)->lost()) return MakeError(ErrorCode::kSlowDown, "upload lock lost");
  const std::string upload_dir = Join(rel::MultipartBucket(bucket), upload_id);
  const std::string rec_path = Join(upload_dir, PartRecordName(part_number));
  const int done = Count(ForEachDrive(alive, [&](size_t p) {
    Drive& d = *roots_[p];
    const std::string staged_rec = Join(st[p], "part.json");
    if (!d.IsDir(upload_dir) || !d.WriteFile(staged_rec, SerializePartRecord(part)).ok()) {
      return false;
    }
    std::string old_data;
    if (auto raw = d.ReadFile(rec_path); raw.ok() && raw->has_value()) {
      if (auto old = ParsePartRecord(**raw, rec_path); old.ok()) old_data = old->data_file;
    }
    const std::string dest = Join(upload_dir, part.data_file);
    if (!d.Rename(Join(st[p], "part"), dest).ok()) return false;
    if (!d.Rename(staged_rec, rec_path).ok()) {
      (void)d.Unlink(dest);
      return false;
    }
    (void)d.FsyncDir(upload_dir);
    if (!old_data.empty() && old_data != part.data_file) {
      (void)d.Unlink(Join(upload_dir, old_data));
    }
    return true;
  }));
  if (done < quorum) return WriteQuorumError(done, quorum);
  return part.info;
}

std::map<int, std::vector<std::optional<PartRecord>>> ErasureSet::LoadParts(
    const std::string& bucket, const std::string& upload_id) {
  const std::string dir = Join(rel::MultipartBucket(bucket), upload_id);
  std::vector<std::vector<PartRecord>> found(roots_.size());  // per position
  ForEachDrive(
      [&](size_t p) {
        auto names = roots_[p]->ListDir(dir, /*dirs_only=*/false);
        if (!names.ok()) return false;
        for (const auto& n : *names) {
          if (!n.starts_with("part.") || !n.ends_with(".json")) continue;
          const std::string path = Join(dir, n);
          auto raw = roots_[p]->ReadFile(path);
          if (!raw.ok() || !raw->has_value()) continue;
          auto r = ParsePartRecord(**raw, path);
          if (r.ok()) found[p].push_back(std::move(*r));
        }
        return true;
      },
      DriveWork::kLookup);
  std::map<int, std::vector<std::optional<PartRecord>>> out;
  for (size_t p = 0; p < found.size(); ++p) {
    for (auto& r : found[p]) {
      auto& v = out[r.info.number];
      v.resize(roots_.size());
      v[p] = std::move(r);
    }
  }
  // Keep, per part, the records of the etag most drives agree on (and only with read quorum).
  for (auto it = out.begin(); it != out.end();) {
    std::map<std::string, int> votes;
    for (const auto& r : it->second)
      if (r) ++votes[r->info.etag];
    std::string best;
    int best_n = 0;
    for (const auto& [etag, c] : votes)
      if (c > best_n) best = etag, best_n = c;
    if (best_n < read_quorum()) {
      it = out.erase(it);
      continue;
    }
    for (auto& r : it->second)
      if (r && r->info.etag != best) r.reset();
    ++it;
  }
  return out;
}

Result<std::vector<PartInfo>> ErasureSet::ListParts(const std::string& bucket,
                                                    const std::string& key,
                                                    const std::string& upload_id) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto rec = LoadUpload(bucket, key, upload_id);
  if (!rec.ok()) return rec.error();
  std::vector<PartInfo> out;
  for (auto& [num, recs] : LoadParts(bucket, upload_id)) {
    for (auto& r : recs) {
      if (r) {
        out.push_back(r->info);
        break;
      }
    }
  }
  return out;
}

Result<std::vector<UploadInfo>> ErasureSet::ListMultipartUploads(const std::string& bucket,
                                                                 const std::string& prefix) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  const std::string mp = rel::MultipartBucket(bucket);
  // Every drive's upload directory names (one readdir each); an upload is listed when a read
  // quorum holds its directory. Records are read only for ids not seen before: a record never
  // changes once written, so a listing costs readdirs, not a read of every record on every drive.
  std::vector<std::vector<std::string>> ids(roots_.size());
  ForEachDrive(
      [&](size_t p) {
        auto l = roots_[p]->ListDir(mp, /*dirs_only=*/true);
        if (!l.ok()) return false;
        ids[p] = std::move(*l);
        return true;
      },
      DriveWork::kLookup);
  std::map<std::string, std::vector<size_t>> holders;  // upload id -> positions holding it
  for (size_t p = 0; p < ids.size(); ++p)
    for (const auto& id : ids[p])
      if (IsUploadId(id)) holders[id].push_back(p);
  std::map<std::string, UploadInfo> known;
  {
    std::lock_guard lock(uploads_mu_);
    known = upload_cache_[bucket];
  }
  std::map<std::string, UploadInfo> now;
  for (const auto& [id, where] : holders) {
    if (static_cast<int>(where.size()) < read_quorum()) continue;
    if (auto it = known.find(id); it != known.end()) {
      now.emplace(id, std::move(it->second));
      continue;
    }
    for (size_t p : where) {  // the first copy that parses
      const std::string file = Join(Join(mp, id), kUploadFile);
      auto raw = roots_[p]->ReadFile(file);
      if (!raw.ok() || !raw->has_value()) continue;
      auto rec = ParseUploadRecord(**raw, file);
      if (!rec.ok()) continue;
      now.emplace(id, UploadInfo{rec->key, id, rec->initiated_ns, rec->storage_class,
                                 rec->checksum_algorithm, rec->checksum_type, rec->owner});
      break;
    }
  }
  std::vector<UploadInfo> out;
  for (const auto& [id, info] : now)
    if (info.key.starts_with(prefix)) out.push_back(info);
  {
    std::lock_guard lock(uploads_mu_);
    upload_cache_[bucket] = std::move(now);  // uploads gone since are forgotten here
  }
  std::sort(out.begin(), out.end(), [](const UploadInfo& a, const UploadInfo& b) {
    return std::tie(a.key, a.initiated_ns, a.upload_id) <
           std::tie(b.key, b.initiated_ns, b.upload_id);
  });
  return out;
}

Result<int> ErasureSet::ExpireUploads(int64_t initiated_before_ns) {
  int removed = 0;
  for (const auto& bucket : BucketNames()) {
    auto uploads = ListMultipartUploads(bucket, "");
    if (!uploads.ok()) continue;  // deleted meanwhile, or below quorum: the next sweep
    for (const auto& u : *uploads) {
      if (u.initiated_ns >= initiated_before_ns) continue;
      // As AbortMultipartUpload, so that a part or a completion in flight finishes first.
      if (AbortMultipartUpload(bucket, u.key, u.upload_id).ok()) ++removed;
    }
  }
  return removed;
}

Status ErasureSet::AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                        const std::string& upload_id) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto lock = LockUpload(bucket, upload_id, "AbortMultipartUpload");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  auto rec = LoadUpload(bucket, key, upload_id);
  if (!rec.ok()) return rec.error();
  RemoveUpload(bucket, upload_id);
  return {};
}

void ErasureSet::RemoveUpload(const std::string& bucket, const std::string& upload_id) {
  const std::string dir = Join(rel::MultipartBucket(bucket), upload_id);
  const std::string staging = rel::Staging(hash::RandomHex(16));
  ForEachDrive([&](size_t p) {
    Drive& d = *roots_[p];
    // One rename makes the upload disappear from this drive; the files go with the staging dir.
    if (d.MakeDir(staging).ok() && !d.Rename(dir, Join(staging, "upload")).ok()) {
      (void)d.RemoveAll(dir);
    }
    return d.RemoveAll(staging).ok();
  });
}

Result<ObjectInfo> ErasureSet::CompleteMultipartUpload(const std::string& bucket,
                                                       const std::string& key,
                                                       const std::string& upload_id,
                                                       const std::vector<CompletePart>& parts,
                                                       const WritePrecondition& precondition,
                                                       const CompleteChecksum& declared) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  if (parts.empty()) {
    return MakeError(ErrorCode::kMalformedXML, "You must specify at least one part");
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].number < 1 || parts[i].number > kMaxPartNumber) {
      return InvalidPartError(upload_id, parts[i]);
    }
    if (i > 0 && parts[i].number <= parts[i - 1].number) {
      return MakeError(ErrorCode::kInvalidPartOrder);
    }
  }
  std::vector<bool> alive(roots_.size(), true);
  Stagings st(*this, alive, /*create=*/true);
  // Lock order everywhere: upload, object, bucket (the in-process bucket lock is innermost).
  auto upload_lock = LockUpload(bucket, upload_id, "CompleteMultipartUpload");
  if (!upload_lock.ok()) return upload_lock.error();
  auto lock = LockObject(bucket, key, LockMode::kExclusive, "CompleteMultipartUpload");
  if (!lock.ok()) return lock.error();
  std::shared_lock bucket_lock(BucketLock(bucket));
  auto rec = LoadUpload(bucket, key, upload_id);
  if (!rec.ok()) return rec.error();
  RS_RETURN_IF_ERROR(CheckPrecondition(bucket, key, *loc, precondition));
  auto all = LoadParts(bucket, upload_id);
  std::vector<const std::vector<std::optional<PartRecord>>*> chosen;
  std::vector<PartInfo> infos;
  for (const auto& p : parts) {
    auto it = all.find(p.number);
    const PartRecord* any = nullptr;
    if (it != all.end())
      for (const auto& r : it->second)
        if (r && !any) any = &*r;
    if (!any || any->info.etag != StripQuotes(p.etag)) return InvalidPartError(upload_id, p);
    chosen.push_back(&it->second);
    infos.push_back(any->info);
  }
  uint64_t total = 0, total_plain = 0;  // stored; as sent (S3's limits: differ when encrypted)
  for (size_t i = 0; i < infos.size(); ++i) {
    const uint64_t plain = PlaintextSize(infos[i].size, rec->internal);
    if (i + 1 < infos.size() && plain < kMinPartSize) {
      return MakeError(ErrorCode::kEntityTooSmall,
                       "part " + std::to_string(infos[i].number) +
                           " is smaller than 5 MiB and not the last part");
    }
    total += infos[i].size;
    total_plain += plain;
  }
  if (total_plain > kMaxObjectSize) return MakeError(ErrorCode::kEntityTooLarge);

  auto shape = ShapeOf(*rec);  // the geometry the parts were coded with
  if (!shape.ok()) return shape.error();
  ObjectMeta meta = NewMeta(key, *loc, *shape);
  // Completing makes a version like a PUT does (a new id when the bucket is Enabled).
  auto version_id = NewVersionId(bucket, key);
  if (!version_id.ok()) return version_id.error();
  meta.version_id = std::move(*version_id);
  const std::string suffix = "-" + std::to_string(infos.size());
  std::vector<std::string> etags;
  for (const auto& r : infos) etags.push_back(r.etag);
  meta.etag = MultipartEtag(etags);
  // The checksums: the client's per-part values against the stored ones, the object's value
  // from the parts' (composite or combined CRC), checked against a declared one.
  auto sums = CompleteChecksums(*rec, upload_id, parts, infos, declared);
  if (!sums.ok()) return sums.error();
  meta.checksums = std::move(*sums);
  meta.size = total;
  meta.mtime_ns = NowNs();
  CopyDeclared(*rec, meta);
  meta.multipart = true;
  for (size_t i = 0; i < infos.size(); ++i) {
    meta.parts.push_back(
        PartMeta{static_cast<int>(i + 1), infos[i].size, infos[i].etag, infos[i].checksums});
  }
  // Per drive: hard-link this drive's shard of every part into the new data directory.
  const std::string upload_dir = Join(rel::MultipartBucket(bucket), upload_id);
  alive = ForEachDrive(alive, [&](size_t p) {
    Drive& d = *roots_[p];
    const std::string data = Join(st[p], "data");
    bool ok = d.MakeDir(data).ok();
    for (size_t i = 0; ok && i < chosen.size(); ++i) {
      const auto& r = (*chosen[i])[p];
      ok = r && d.Link(Join(upload_dir, r->data_file), Join(data, PartFileName(i + 1))).ok();
    }
    return ok && d.FsyncDir(data).ok();
  });
  const auto& dist = meta.erasure->distribution;
  std::vector<ObjectMeta> metas;
  for (size_t p = 0; p < roots_.size(); ++p) metas.push_back(MetaFor(meta, dist, p, nullptr));
  const int quorum = shape->write_quorum();
  if (Count(alive) < quorum) return WriteQuorumError(Count(alive), quorum);
  RS_RETURN_IF_ERROR(CommitAll(bucket, *loc, st, alive, metas, quorum, **lock));
  RemoveUpload(bucket, upload_id);
  return meta.ToInfo(bucket, key);
}

Result<PutOptions> ErasureSet::GetUploadOptions(const std::string& bucket, const std::string& key,
                                                const std::string& upload_id) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto rec = LoadUpload(bucket, key, upload_id);
  if (!rec.ok()) return rec.error();
  PutOptions opts;
  CopyDeclared(*rec, opts);
  opts.checksum_algorithm = rec->checksum_algorithm;
  opts.checksum_type = rec->checksum_type;
  return opts;
}

}  // namespace rdmastor::storage
