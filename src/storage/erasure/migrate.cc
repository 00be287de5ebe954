// Upgrading a drive of the retired single-drive layout (DriveStore, removed since one drive
// became a one-drive erasure set) in place, once, at start-up. That layout is this one without the
// erasure parts: the same paths, bucket records and metadata files, but no format file, metadata
// without an `erasure` block and plain part files. Each object's parts are rewritten as
// bitrot-framed shards of a 1+0 set and committed with the drive's own RenameData (old version or
// new one after a crash, never a mix); the part files of multipart uploads in progress are framed
// and renamed over the plain ones. The format file is written last, so a conversion that a crash
// cut short starts again and skips what is done (objects with an `erasure` block, framed part
// files).

#include <spdlog/spdlog.h>

#include "common/hash.h"
#include "storage/erasure/set.h"
#include "storage/format.h"

namespace rdmastor::storage {

namespace {

ErasureMeta OneDriveErasure() {
  ErasureMeta e;
  e.data = 1;
  e.parity = 0;
  e.stripe_size = erasure::kStripeSize;
  e.index = 0;
  e.distribution = {0};
  e.bitrot = erasure::kBitrotAlgorithm;
  return e;
}

// Copies the plain file `from` (`size` bytes) into the new shard file `to`, framed as a 1+0
// erasure shard (what Encode writes for one drive). Sync: Finish (true) or Close (RenameData's
// barrier syncs it).
Status FrameFile(Drive& d, const erasure::Codec& codec, const std::string& from, uint64_t size,
                 const std::string& to, bool sync) {
  auto in = d.OpenShard(from, size);
  if (!in.ok()) return in.error();
  const erasure::Geometry g{1, 0, erasure::kStripeSize};
  auto out = d.CreateShard(to, g.ShardFileSize(size));
  if (!out.ok()) return out.error();
  std::vector<char> buf(erasure::kStripeSize);
  std::vector<std::string> framed(1);
  std::vector<uint8_t> scratch;
  for (uint64_t off = 0; off < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
    auto got = (*in)->ReadAt(off, buf.data(), want);
    if (!got.ok()) return got.error();
    if (*got != want) {
      return MakeError(ErrorCode::kInternalError, from + " is shorter than its metadata says (" +
                                                      std::to_string(size) + " bytes)");
    }
    framed[0].clear();
    erasure::EncodeStripe(codec, buf.data(), want, framed, scratch);
    RS_RETURN_IF_ERROR((*out)->Append(framed[0]));
    off += want;
  }
  return sync ? (*out)->Finish() : (*out)->Close();
}

// One object: true when it was converted now, false when it already was.
Result<bool> MigrateObject(Drive& d, const erasure::Codec& codec, const std::string& bucket,
                           const std::string& key) {
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  const std::string key_dir = Join(bucket, loc->rel_dir);
  const std::string meta_path = Join(key_dir, loc->meta_name);
  auto raw = d.ReadFile(meta_path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return false;  // listed, then gone: nothing to convert
  auto meta = ParseObjectMeta(**raw, meta_path);
  if (!meta.ok()) return meta.error();
  if (meta->erasure) return false;
  ObjectMeta m = std::move(*meta);
  const std::string staging = rel::Staging(hash::RandomHex(16));
  m.erasure = OneDriveErasure();
  std::string data_name;
  if (m.size == 0) {
    m.erasure->is_inline = true;  // as a PUT of an empty body stores it
  } else {
    data_name = std::string(loc->data_prefix) + hash::RandomHex(16);
    const std::string old_dir = Join(key_dir, m.data_dir);
    for (size_t i = 0; i < m.parts.size(); ++i) {
      auto st = FrameFile(d, codec, Join(old_dir, PartFileName(i + 1)), m.parts[i].size,
                          Join(Join(staging, "data"), PartFileName(i + 1)), /*sync=*/false);
      if (!st.ok()) {
        (void)d.RemoveAll(staging);
        return st.error();
      }
    }
  }
  m.data_dir = data_name.empty() ? std::string(loc->data_prefix) + hash::RandomHex(16) : data_name;
  RenameDataRequest req{
      staging, bucket, key_dir, std::string(loc->meta_name), data_name, SerializeObjectMeta(m),
      false,   false};
  auto r = d.RenameData(req);
  (void)d.RemoveAll(staging);  // the plain data, retired into it
  if (!r.ok()) return r.error();
  return true;
}

// The part files of one multipart upload in progress; returns how many were framed now.
Result<int> MigrateUpload(Drive& d, const erasure::Codec& codec, const std::string& upload_dir) {
  auto names = d.ListDir(upload_dir, /*dirs_only=*/false);
  if (!names.ok()) return names.error();
  int framed = 0;
  for (const auto& n : *names) {
    if (!n.starts_with("part.") || !n.ends_with(".json")) continue;
    const std::string rec_path = Join(upload_dir, n);
    auto raw = d.ReadFile(rec_path);
    if (!raw.ok()) return raw.error();
    if (!raw->has_value()) continue;
    auto rec = ParsePartRecord(**raw, rec_path);
    if (!rec.ok()) return rec.error();
    const uint64_t size = rec->info.size;
    if (size == 0) continue;  // framed or not, an empty part is an empty file
    const std::string data = Join(upload_dir, rec->data_file);
    // A framed file is longer than the part (a block hash per stripe); a plain one ends at `size`.
    auto f = d.OpenShard(data, 0);
    if (!f.ok()) return f.error();
    char byte;
    auto past = (*f)->ReadAt(size, &byte, 1);
    if (!past.ok()) return past.error();
    if (*past == 1) continue;  // already framed
    const std::string staging = rel::Staging(hash::RandomHex(16));
    const std::string staged = Join(staging, "part");
    auto st = FrameFile(d, codec, data, size, staged, /*sync=*/true);
    if (st.ok()) st = d.Rename(staged, data);
    if (st.ok()) st = d.FsyncDir(upload_dir);
    (void)d.RemoveAll(staging);
    if (!st.ok()) return st.error();
    ++framed;
  }
  return framed;
}

}  // namespace

Result<bool> HoldsSingleDriveLayout(Drive& drive) {
  auto format = drive.ReadFormat();
  if (format.ok()) return false;
  if (format.error().code != ErrorCode::kNoSuchKey) return format.error();
  auto empty = drive.IsEmpty();
  if (!empty.ok()) return empty.error();
  // The retired store made the bucket records' directory on its first start; a directory with
  // data but without it is another program's (LoadOrFormat refuses it).
  return !*empty && drive.IsDir(rel::BucketsMeta());
}

Status MigrateSingleDriveLayout(Drive& drive) {
  spdlog::warn(
      "drive {} holds the single-drive layout of an earlier version: converting it to a "
      "one-drive erasure set (once; every object's data is rewritten)",
      drive.name());
  RS_RETURN_IF_ERROR(drive.Prepare());  // settles commits a crash interrupted
  auto codec = erasure::Codec::Create(1, 0);
  if (!codec.ok()) return codec.error();
  auto vols = drive.ListVols();
  if (!vols.ok()) return vols.error();
  uint64_t objects = 0, uploads = 0;
  for (const auto& bucket : *vols) {
    if (!paths::ValidateBucketName(bucket).ok()) continue;
    ListOptions opts;
    opts.max_keys = 1000;
    for (;;) {
      auto page = drive.ListObjects(bucket, opts);
      if (!page.ok()) return page.error();
      for (const auto& o : page->objects) {
        auto done = MigrateObject(drive, **codec, bucket, o.key);
        if (!done.ok()) {
          return MakeError(done.error().code,
                           "converting " + bucket + "/" + o.key + ": " + done.error().message);
        }
        if (*done && ++objects % 1000 == 0) {
          spdlog::info("drive {}: {} object(s) converted", drive.name(), objects);
        }
      }
      if (!page->truncated || page->objects.empty()) break;
      opts.start_after = page->objects.back().key;
    }
    const std::string mp = rel::MultipartBucket(bucket);
    if (!drive.IsDir(mp)) continue;
    auto ids = drive.ListDir(mp, /*dirs_only=*/true);
    if (!ids.ok()) return ids.error();
    for (const auto& id : *ids) {
      if (!IsUploadId(id)) continue;
      auto n = MigrateUpload(drive, **codec, Join(mp, id));
      if (!n.ok()) {
        return MakeError(n.error().code,
                         "converting upload " + id + " of " + bucket + ": " + n.error().message);
      }
      uploads += *n > 0 ? 1 : 0;
    }
  }
  RS_RETURN_IF_ERROR(FormatSingleDrive(drive));
  spdlog::warn("drive {}: converted {} object(s) and {} multipart upload(s) in progress",
               drive.name(), objects, uploads);
  return {};
}

}  // namespace rdmastor::storage
