#include "storage/drive_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <utility>

#include "common/hash.h"
#include "storage/fsutil.h"
#include "storage/listing.h"
#include "storage/local_drive.h"

namespace rdmastor::storage {

namespace {

using fsutil::UniqueFd;
using paths::Join;

constexpr size_t kIoBufferSize = 1 << 20;  // body reads and file writes go in 1 MiB steps
constexpr int kOpenAttempts = 3;  // lock-free OpenObject attempts before taking the key lock
constexpr std::string_view kUploadFile = "upload.json";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string PartFileName(size_t index) { return "part." + std::to_string(index); }
std::string PartRecordName(int number) { return "part." + std::to_string(number) + ".json"; }

bool IsUploadId(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string StripQuotes(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

Error NotWritable(const std::string& path, std::string_view what, int err) {
  std::string msg = "drive " + path + ": " + std::string(what) + ": " + std::strerror(err);
  spdlog::error("storage: {}", msg);
  return MakeError(ErrorCode::kDriveNotWritable, std::move(msg));
}

// ---- Reader ----------------------------------------------------------------------------------

class DriveObjectReader final : public ObjectReader {
 public:
  struct Part {
    std::string path;
    uint64_t offset = 0;  // of the part's first byte in the object
    uint64_t size = 0;
    UniqueFd fd;
  };

  DriveObjectReader(ObjectInfo info, std::vector<Part> parts)
      : info_(std::move(info)), parts_(std::move(parts)) {}

  const ObjectInfo& info() const override { return info_; }

  Result<size_t> ReadAt(uint64_t off, char* buf, size_t len) override {
    if (off >= info_.size || len == 0) return size_t{0};
    // First part whose range contains `off`.
    auto it = std::upper_bound(parts_.begin(), parts_.end(), off,
                               [](uint64_t o, const Part& p) { return o < p.offset; });
    size_t idx = static_cast<size_t>(it - parts_.begin()) - 1;
    size_t done = 0;
    while (done < len && idx < parts_.size()) {
      Part& p = parts_[idx];
      uint64_t in_part = off + done - p.offset;
      if (in_part >= p.size) {  // empty part
        ++idx;
        continue;
      }
      size_t want = static_cast<size_t>(std::min<uint64_t>(len - done, p.size - in_part));
      auto fd = Fd(p);
      if (!fd.ok()) return fd.error();
      auto n = fsutil::PreadFull(*fd, buf + done, want, in_part, p.path);
      if (!n.ok()) return n.error();
      if (*n != want) {
        spdlog::error("storage: {} is shorter than its metadata says", p.path);
        return MakeError(ErrorCode::kInternalError, "object data truncated: " + p.path);
      }
      done += want;
      ++idx;
    }
    return done;
  }

 private:
  Result<int> Fd(Part& p) {
    std::lock_guard lock(mu_);
    if (!p.fd.valid()) {
      int err = 0;
      auto fd = fsutil::Open(p.path, O_RDONLY, 0, &err);
      if (!fd.ok()) {
        if (err == ENOENT) {
          return MakeError(ErrorCode::kInternalError,
                           "object was replaced while being read: " + info_.key);
        }
        return fd.error();
      }
      p.fd = std::move(*fd);
    }
    return p.fd.get();
  }

  ObjectInfo info_;
  std::vector<Part> parts_;
  std::mutex mu_;  // guards lazy opening of part descriptors
};

}  // namespace

// ---- Setup -----------------------------------------------------------------------------------

DriveStore::DriveStore(std::string root) : root_(std::move(root)), tmp_(paths::TmpDir(root_)) {}

Result<std::unique_ptr<DriveStore>> DriveStore::Open(const std::string& dir) {
  if (dir.empty()) return MakeError(ErrorCode::kDriveNotWritable, "empty drive path");
  std::string root;
  try {
    root = std::filesystem::absolute(dir).lexically_normal().string();
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kDriveNotWritable, "drive " + dir + ": " + e.what());
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") return MakeError(ErrorCode::kDriveNotWritable, "refusing to use / as a drive");

  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec) return NotWritable(root, "cannot create", ec.value());
    if (::stat(root.c_str(), &st) != 0) return NotWritable(root, "cannot create", errno);
  }
  if (!S_ISDIR(st.st_mode)) return NotWritable(root, "not a directory", ENOTDIR);
  if (::access(root.c_str(), W_OK | X_OK) != 0) return NotWritable(root, "no write access", errno);

  auto store = std::unique_ptr<DriveStore>(new DriveStore(root));
  for (const std::string& d : {paths::SysDir(root), store->tmp_, paths::MultipartRoot(root),
                               paths::BucketsMetaDir(root)}) {
    if (fsutil::Mkdir(d, 0755) != 0 && errno != EEXIST) return NotWritable(d, "mkdir", errno);
    if (!fsutil::IsDir(d)) return NotWritable(d, "not a directory", ENOTDIR);
  }
  // access() passes on some read-only setups (root, network file systems): really write.
  const std::string probe = Join(store->tmp_, ".probe-" + hash::RandomHex(8));
  {
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return NotWritable(root, "cannot create a file", errno);
    UniqueFd guard(fd);
    if (::write(fd, "ok", 2) != 2 || ::fsync(fd) != 0) {
      int err = errno;
      fsutil::Unlink(probe);
      return NotWritable(root, "cannot write a file", err);
    }
  }
  fsutil::Unlink(probe);

  // Crash recovery: settle interrupted commits, then wipe the staging area.
  auto entries = fsutil::ListDir(store->tmp_, /*dirs_only=*/false);
  if (!entries.ok()) return entries.error();
  for (const auto& e : *entries) {
    const std::string staging = Join(store->tmp_, e);
    if (fsutil::IsDir(staging)) {
      auto st2 = fsutil::RecoverStaging(root, staging, DataDirOfMetaFile);
      if (!st2.ok()) spdlog::error("storage: recovery of {}: {}", staging, st2.error().message);
    }
    if (auto rm = fsutil::RemoveAll(staging); !rm.ok()) return rm.error();
  }
  // Bucket records whose bucket directory is gone (crash inside DeleteBucket).
  auto records = fsutil::ListDir(paths::BucketsMetaDir(root), /*dirs_only=*/false);
  if (!records.ok()) return records.error();
  for (const auto& r : *records) {
    if (!r.ends_with(".json")) continue;
    std::string bucket = r.substr(0, r.size() - 5);
    if (!fsutil::IsDir(paths::BucketDir(root, bucket))) {
      fsutil::Unlink(Join(paths::BucketsMetaDir(root), r));
    }
  }
  return store;
}

// ---- Helpers ---------------------------------------------------------------------------------

std::mutex& DriveStore::KeyLock(const std::string& bucket, const std::string& key) {
  size_t h = std::hash<std::string>{}(bucket + '\0' + key);
  return key_locks_[h % key_locks_.size()];
}

std::mutex& DriveStore::UploadLock(const std::string& upload_id) {
  return upload_locks_[std::hash<std::string>{}(upload_id) % upload_locks_.size()];
}

std::shared_mutex& DriveStore::BucketLock(const std::string& bucket) {
  return bucket_locks_[std::hash<std::string>{}(bucket) % bucket_locks_.size()];
}

Result<std::string> DriveStore::NewStaging() {
  std::string dir = Join(tmp_, hash::RandomHex(16));
  if (fsutil::Mkdir(dir, 0700) != 0) return fsutil::ErrnoError("mkdir", dir, errno);
  return dir;
}

void DriveStore::DropStaging(const std::string& staging) {
  if (auto st = fsutil::RemoveAll(staging); !st.ok()) {
    spdlog::warn("storage: leaving {} for the next start: {}", staging, st.error().message);
  }
}

namespace {
// Removes a staging directory when the operation leaves scope, whatever the outcome.
class StagingGuard {
 public:
  explicit StagingGuard(std::function<void()> drop) : drop_(std::move(drop)) {}
  ~StagingGuard() { drop_(); }
  StagingGuard(const StagingGuard&) = delete;
  StagingGuard& operator=(const StagingGuard&) = delete;

 private:
  std::function<void()> drop_;
};
}  // namespace

Status DriveStore::CheckBucket(const std::string& bucket) {
  if (auto st = paths::ValidateBucketName(bucket); !st.ok()) {
    return MakeError(ErrorCode::kNoSuchBucket, st.error().message);
  }
  if (!fsutil::IsDir(paths::BucketDir(root_, bucket))) return MakeError(ErrorCode::kNoSuchBucket);
  return {};
}

std::string DriveStore::KeyDir(const std::string& bucket, const paths::KeyLocation& loc) const {
  return Join(paths::BucketDir(root_, bucket), loc.rel_dir);
}

Result<ObjectMeta> DriveStore::ReadMeta(const std::string& meta_path) {
  auto raw = fsutil::ReadFileIfExists(meta_path);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return MakeError(ErrorCode::kNoSuchKey);
  return ParseObjectMeta(**raw, meta_path);
}

Result<uint64_t> DriveStore::ReceiveBody(BodySource& body, std::optional<uint64_t> declared,
                                         uint64_t limit, const std::string& file,
                                         std::string* md5_out, bool sync) {
  if (declared && *declared > limit) {
    return MakeError(ErrorCode::kEntityTooLarge, "declared size " + std::to_string(*declared) +
                                                     " exceeds the limit of " +
                                                     std::to_string(limit) + " bytes");
  }
  auto fd = fsutil::Open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!fd.ok()) return fd.error();
  std::unique_ptr<hash::Hasher> md5;
  if (md5_out) md5 = hash::NewHasher(hash::Algo::kMD5);
  std::vector<char> buf(kIoBufferSize);
  uint64_t total = 0;
  for (;;) {
    auto n = body.ReadFull(buf.data(), buf.size());
    if (!n.ok()) return n.error();
    if (*n == 0) break;
    total += *n;
    if (declared && total > *declared) {
      return MakeError(ErrorCode::kInvalidRequest, "request body is longer than the declared " +
                                                       std::to_string(*declared) + " bytes");
    }
    if (total > limit) {
      return MakeError(ErrorCode::kEntityTooLarge,
                       "body exceeds the limit of " + std::to_string(limit) + " bytes");
    }
    if (md5) md5->Update(buf.data(), *n);
    RS_RETURN_IF_ERROR(fsutil::WriteAll(fd->get(), buf.data(), *n, file));
    if (*n < buf.size()) break;  // ReadFull comes back short only at the end of the body
  }
  if (declared && total < *declared) {
    return MakeError(ErrorCode::kIncompleteBody, "received " + std::to_string(total) + " of " +
                                                     std::to_string(*declared) + " bytes");
  }
  if (sync) RS_RETURN_IF_ERROR(fsutil::Fsync(fd->get(), file));
  if (md5_out) *md5_out = hash::HexEncode(md5->Final());
  return total;
}

Status DriveStore::PublishObject(const std::string& bucket, const std::string& key,
                                 const paths::KeyLocation& loc, const std::string& staging,
                                 ObjectMeta& meta, const WritePrecondition& precondition) {
  // Caller holds the bucket lock (shared) and has checked the bucket exists.
  meta.data_dir = std::string(loc.data_prefix) + hash::RandomHex(16);
  // Not synced here: the commit's first barrier makes it durable with the data.
  RS_RETURN_IF_ERROR(fsutil::WriteFile(Join(staging, "meta"), SerializeObjectMeta(meta)));
  std::lock_guard key_lock(KeyLock(bucket, key));
  const std::string key_dir = KeyDir(bucket, loc);
  if (precondition) {
    auto current = ReadMeta(Join(key_dir, loc.meta_name));
    if (!current.ok() && current.error().code != ErrorCode::kNoSuchKey) return current.error();
    std::optional<ObjectInfo> info;
    if (current.ok()) info = current->ToInfo(bucket, key);
    RS_RETURN_IF_ERROR(precondition(info ? &*info : nullptr));
  }
  auto old = DataDirOfMetaFile(Join(key_dir, loc.meta_name));
  if (!old.ok()) spdlog::warn("storage: overwriting unreadable metadata of {}/{}", bucket, key);
  fsutil::CommitPlan plan{
      root_,         paths::BucketDir(root_, bucket), staging, key_dir, std::string(loc.meta_name),
      meta.data_dir, old.ok() ? *old : std::string()};
  return fsutil::Commit(plan);
}

// ---- Buckets ---------------------------------------------------------------------------------

Status DriveStore::MakeBucket(const std::string& bucket) {
  RS_RETURN_IF_ERROR(paths::ValidateBucketName(bucket));
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  std::string record;
  try {
    record = nlohmann::json{{"version", 1}, {"name", bucket}, {"created_ns", NowNs()}}.dump();
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternalError, e.what());
  }
  const std::string staged = Join(*staging, "bucket.json");
  RS_RETURN_IF_ERROR(fsutil::WriteFileDurable(staged, record));

  std::unique_lock lock(BucketLock(bucket));
  const std::string dir = paths::BucketDir(root_, bucket);
  if (fsutil::Mkdir(dir, 0755) != 0) {
    if (errno == EEXIST) return MakeError(ErrorCode::kBucketAlreadyOwnedByYou);
    return fsutil::ErrnoError("mkdir", dir, errno);
  }
  const std::string meta = paths::BucketMetaFile(root_, bucket);
  if (fsutil::Rename(staged, meta) != 0) {
    spdlog::warn("storage: bucket {} has no creation record: {}", bucket, std::strerror(errno));
  }
  (void)fsutil::FsyncDir(paths::BucketsMetaDir(root_));
  return fsutil::FsyncDir(root_);
}

Result<BucketInfo> DriveStore::GetBucketInfo(const std::string& bucket) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  BucketInfo info;
  info.name = bucket;
  auto raw = fsutil::ReadFileIfExists(paths::BucketMetaFile(root_, bucket));
  if (raw.ok() && raw->has_value()) {
    try {
      auto j = nlohmann::json::parse(**raw);
      info.created_ns = j.at("created_ns").get<int64_t>();
      info.tags = j.value("tags", std::string());
    } catch (const std::exception& e) {
      spdlog::warn("storage: bad record for bucket {}: {}", bucket, e.what());
    }
  }
  if (info.created_ns == 0) {  // no record (crash inside MakeBucket): the directory's time
    struct stat st;
    if (::stat(paths::BucketDir(root_, bucket).c_str(), &st) == 0) {
      info.created_ns =
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    }
  }
  return info;
}

Status DriveStore::SetBucketTags(const std::string& bucket, const std::string& tags) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  // Exclusive: a concurrent SetBucketTags or DeleteBucket must not interleave with the rewrite.
  std::unique_lock lock(BucketLock(bucket));
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  const std::string meta = paths::BucketMetaFile(root_, bucket);
  nlohmann::json j;
  auto raw = fsutil::ReadFileIfExists(meta);
  if (!raw.ok()) return raw.error();
  try {
    if (raw->has_value()) j = nlohmann::json::parse(**raw);
  } catch (const std::exception& e) {
    spdlog::warn("storage: bad record for bucket {}: {}", bucket, e.what());
  }
  if (!j.is_object()) j = nlohmann::json{{"version", 1}, {"name", bucket}};
  if (!j.contains("created_ns")) {
    struct stat st;
    int64_t ns = NowNs();
    if (::stat(paths::BucketDir(root_, bucket).c_str(), &st) == 0)
      ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    j["created_ns"] = ns;
  }
  if (tags.empty()) {
    j.erase("tags");
  } else {
    j["tags"] = tags;
  }
  const std::string staged = Join(*staging, "bucket.json");
  RS_RETURN_IF_ERROR(fsutil::WriteFileDurable(staged, j.dump()));
  (void)fsutil::MkdirAll(root_, paths::BucketsMetaDir(root_));
  if (fsutil::Rename(staged, meta) != 0) return fsutil::ErrnoError("rename", staged, errno);
  return fsutil::FsyncDir(paths::BucketsMetaDir(root_));
}

Result<std::vector<BucketInfo>> DriveStore::ListBuckets() {
  auto names = fsutil::ListDir(root_, /*dirs_only=*/true);
  if (!names.ok()) return names.error();
  std::sort(names->begin(), names->end());
  std::vector<BucketInfo> out;
  for (const auto& n : *names) {
    // Skips .rdmastor.sys, lost+found and anything else that is not a bucket name.
    if (!paths::ValidateBucketName(n).ok()) continue;
    auto info = GetBucketInfo(n);
    if (info.ok()) out.push_back(std::move(*info));
  }
  return out;
}

Status DriveStore::DeleteBucket(const std::string& bucket) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });

  std::unique_lock lock(BucketLock(bucket));
  const std::string dir = paths::BucketDir(root_, bucket);
  if (!fsutil::IsDir(dir)) return MakeError(ErrorCode::kNoSuchBucket);
  auto has = SubtreeHasObject(dir);
  if (!has.ok()) return has.error();
  if (*has) return MakeError(ErrorCode::kBucketNotEmpty);
  // Pending multipart uploads do not keep a bucket alive (as in MinIO): they go with it.
  if (fsutil::Rename(dir, Join(*staging, "bucket")) != 0) {
    return fsutil::ErrnoError("rename", dir, errno);
  }
  const std::string mp = paths::MultipartBucketDir(root_, bucket);
  if (fsutil::Rename(mp, Join(*staging, "multipart")) != 0 && errno != ENOENT) {
    spdlog::warn("storage: cannot remove uploads of deleted bucket {}: {}", bucket,
                 std::strerror(errno));
  }
  fsutil::Unlink(paths::BucketMetaFile(root_, bucket));
  return fsutil::FsyncDir(root_);
}

// ---- Objects ---------------------------------------------------------------------------------

Result<ObjectInfo> DriveStore::PutObject(const std::string& bucket, const std::string& key,
                                         BodySource& body, const PutOptions& opts,
                                         const CommitCheck& check) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });

  const std::string data = Join(*staging, "data");
  if (fsutil::Mkdir(data, 0755) != 0) return fsutil::ErrnoError("mkdir", data, errno);
  std::string md5;
  // The commit's first barrier makes the file and its directory durable (group commit).
  auto size = ReceiveBody(body, opts.size, kMaxPutSize, Join(data, PartFileName(1)),
                          check ? nullptr : &md5, /*sync=*/false);
  if (!size.ok()) return size.error();

  CommitInfo ci;
  if (check) {
    auto r = check(*size);
    if (!r.ok()) return r.error();  // vetoed: nothing becomes visible
    ci = std::move(*r);
  } else {
    ci.etag = md5;
  }

  ObjectMeta meta;
  meta.size = *size;
  meta.etag = StripQuotes(ci.etag);
  meta.mtime_ns = NowNs();
  meta.content_type = opts.content_type;
  meta.user_metadata = opts.user_metadata;
  meta.tags = opts.tags;
  meta.storage_class = opts.storage_class;
  meta.checksums = ci.checksums;
  meta.parts.push_back(PartMeta{1, *size, meta.etag});

  std::shared_lock bucket_lock(BucketLock(bucket));
  RS_RETURN_IF_ERROR(CheckBucket(bucket));  // deleted while the body streamed?
  RS_RETURN_IF_ERROR(PublishObject(bucket, key, *loc, *staging, meta, opts.precondition));
  return meta.ToInfo(bucket, key);
}

Result<std::unique_ptr<ObjectReader>> DriveStore::OpenObject(const std::string& bucket,
                                                             const std::string& key) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  const std::string key_dir = KeyDir(bucket, *loc);
  const std::string meta_path = Join(key_dir, loc->meta_name);

  // An overwrite may retire the data between reading the metadata and opening the parts: then
  // read the new metadata. The last attempt holds the key lock, so it cannot be overtaken.
  for (int attempt = 0; attempt <= kOpenAttempts; ++attempt) {
    std::unique_lock<std::mutex> lock;
    if (attempt == kOpenAttempts) lock = std::unique_lock(KeyLock(bucket, key));
    auto meta = ReadMeta(meta_path);
    if (!meta.ok()) return meta.error();
    std::vector<DriveObjectReader::Part> parts;
    parts.reserve(meta->parts.size());
    bool replaced = false;
    uint64_t offset = 0;
    for (size_t i = 0; i < meta->parts.size(); ++i) {
      DriveObjectReader::Part p;
      p.path = Join(Join(key_dir, meta->data_dir), PartFileName(i + 1));
      p.offset = offset;
      p.size = meta->parts[i].size;
      offset += p.size;
      if (i < eager_open_parts_) {
        int err = 0;
        auto fd = fsutil::Open(p.path, O_RDONLY, 0, &err);
        if (!fd.ok()) {
          if (err != ENOENT) return fd.error();
          replaced = true;
          break;
        }
        p.fd = std::move(*fd);
      }
      parts.push_back(std::move(p));
    }
    if (replaced) continue;
    return std::unique_ptr<ObjectReader>(
        new DriveObjectReader(meta->ToInfo(bucket, key), std::move(parts)));
  }
  spdlog::error("storage: data of {}/{} is missing", bucket, key);
  return MakeError(ErrorCode::kInternalError, "object data missing: " + bucket + "/" + key);
}

Result<ObjectInfo> DriveStore::StatObject(const std::string& bucket, const std::string& key) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  auto meta = ReadMeta(Join(KeyDir(bucket, *loc), loc->meta_name));
  if (!meta.ok()) return meta.error();
  return meta->ToInfo(bucket, key);
}

Status DriveStore::DeleteObject(const std::string& bucket, const std::string& key) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  const std::string bucket_dir = paths::BucketDir(root_, bucket);
  const std::string key_dir = KeyDir(bucket, *loc);
  const std::string meta_path = Join(key_dir, loc->meta_name);
  if (!fsutil::Exists(meta_path)) return {};  // S3: deleting a missing key succeeds
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  {
    std::shared_lock bucket_lock(BucketLock(bucket));
    std::lock_guard key_lock(KeyLock(bucket, key));
    if (!fsutil::Exists(meta_path)) return {};
    auto old = DataDirOfMetaFile(meta_path);
    fsutil::CommitPlan plan{root_,
                            bucket_dir,
                            *staging,
                            key_dir,
                            std::string(loc->meta_name),
                            /*new*/ "",
                            old.ok() ? *old : std::string()};
    RS_RETURN_IF_ERROR(fsutil::Commit(plan));
    if (!old.ok()) {  // unreadable metadata: remove whatever data dirs belong to this key
      auto names = fsutil::ListDir(key_dir, /*dirs_only=*/true);
      if (names.ok()) {
        for (const auto& n : *names) {
          if (n.starts_with(loc->data_prefix)) (void)fsutil::RemoveAll(Join(key_dir, n));
        }
      }
    }
  }
  fsutil::PruneEmptyDirs(key_dir, bucket_dir);
  return {};
}

Result<ObjectInfo> DriveStore::UpdateMetadata(const std::string& bucket, const std::string& key,
                                              const PutOptions& opts) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });

  std::shared_lock bucket_lock(BucketLock(bucket));
  std::lock_guard key_lock(KeyLock(bucket, key));
  const std::string key_dir = KeyDir(bucket, *loc);
  auto meta = ReadMeta(Join(key_dir, loc->meta_name));
  if (!meta.ok()) return meta.error();
  meta->tags = opts.tags;
  if (!opts.tags_only) {
    meta->content_type = opts.content_type;
    meta->user_metadata = opts.user_metadata;
    meta->storage_class = opts.storage_class;
    meta->mtime_ns = NowNs();
  }
  RS_RETURN_IF_ERROR(fsutil::WriteFileDurable(Join(*staging, "meta"), SerializeObjectMeta(*meta)));
  fsutil::CommitPlan plan{root_,   paths::BucketDir(root_, bucket), *staging,
                          key_dir, std::string(loc->meta_name),     "",
                          ""};
  RS_RETURN_IF_ERROR(fsutil::Commit(plan));
  return meta->ToInfo(bucket, key);
}

Result<ListResult> DriveStore::ListObjects(const std::string& bucket, const ListOptions& opts) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  try {
    return ListDrive(bucket, paths::BucketDir(root_, bucket), opts);
  } catch (const std::exception& e) {  // allocation failures and the like
    return MakeError(ErrorCode::kInternalError, std::string("listing failed: ") + e.what());
  }
}

// ---- Multipart -------------------------------------------------------------------------------

Result<UploadRecord> DriveStore::LoadUpload(const std::string& bucket, const std::string& key,
                                            const std::string& upload_id, std::string* upload_dir) {
  if (!IsUploadId(upload_id)) return MakeError(ErrorCode::kNoSuchUpload);
  *upload_dir = Join(paths::MultipartBucketDir(root_, bucket), upload_id);
  const std::string file = Join(*upload_dir, kUploadFile);
  auto raw = fsutil::ReadFileIfExists(file);
  if (!raw.ok()) return raw.error();
  if (!raw->has_value()) return MakeError(ErrorCode::kNoSuchUpload);
  auto rec = ParseUploadRecord(**raw, file);
  if (!rec.ok()) return rec.error();
  if (rec->key != key) return MakeError(ErrorCode::kNoSuchUpload, "upload belongs to another key");
  return rec;
}

Result<std::string> DriveStore::NewMultipartUpload(const std::string& bucket,
                                                   const std::string& key, const PutOptions& opts) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  auto made = NewUploadRecord(key, opts);
  if (!made.ok()) return made.error();
  UploadRecord rec = std::move(*made);

  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  const std::string staged = Join(*staging, "upload");
  if (fsutil::Mkdir(staged, 0755) != 0) return fsutil::ErrnoError("mkdir", staged, errno);
  RS_RETURN_IF_ERROR(
      fsutil::WriteFileDurable(Join(staged, kUploadFile), SerializeUploadRecord(rec)));
  RS_RETURN_IF_ERROR(fsutil::FsyncDir(staged));

  std::string id = hash::RandomHex(16);
  std::shared_lock bucket_lock(BucketLock(bucket));
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  const std::string mp_dir = paths::MultipartBucketDir(root_, bucket);
  RS_RETURN_IF_ERROR(fsutil::MkdirAll(paths::MultipartRoot(root_), mp_dir));
  const std::string dest = Join(mp_dir, id);
  if (fsutil::Rename(staged, dest) != 0) {
    return fsutil::ErrnoError("rename", dest, errno);
  }
  RS_RETURN_IF_ERROR(fsutil::FsyncDir(mp_dir));
  return id;
}

Result<PartInfo> DriveStore::PutObjectPart(const std::string& bucket, const std::string& key,
                                           const std::string& upload_id, int part_number,
                                           BodySource& body, std::optional<uint64_t> size,
                                           const CommitCheck& check) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "Part number must be an integer between 1 and 10000, inclusive");
  }
  std::string upload_dir;
  auto rec = LoadUpload(bucket, key, upload_id, &upload_dir);
  if (!rec.ok()) return rec.error();

  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  const std::string staged_data = Join(*staging, "part");
  std::string md5;
  auto got = ReceiveBody(body, size, kMaxPutSize, staged_data, check ? nullptr : &md5);
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
  // A unique data name per attempt: the record rename below swaps parts atomically.
  part.data_file = PartFileName(static_cast<size_t>(part_number)) + "." + hash::RandomHex(8);
  const std::string staged_rec = Join(*staging, "part.json");
  RS_RETURN_IF_ERROR(fsutil::WriteFileDurable(staged_rec, SerializePartRecord(part)));

  std::shared_lock bucket_lock(BucketLock(bucket));
  std::lock_guard upload_lock(UploadLock(upload_id));
  rec = LoadUpload(bucket, key, upload_id, &upload_dir);  // aborted or completed meanwhile?
  if (!rec.ok()) return rec.error();
  const std::string rec_path = Join(upload_dir, PartRecordName(part_number));
  std::string old_data;
  if (auto raw = fsutil::ReadFileIfExists(rec_path); raw.ok() && raw->has_value()) {
    if (auto old = ParsePartRecord(**raw, rec_path); old.ok()) old_data = old->data_file;
  }
  const std::string dest = Join(upload_dir, part.data_file);
  if (fsutil::Rename(staged_data, dest) != 0) {
    return fsutil::ErrnoError("rename", dest, errno);
  }
  if (fsutil::Rename(staged_rec, rec_path) != 0) {
    int err = errno;
    fsutil::Unlink(dest);
    return fsutil::ErrnoError("rename", rec_path, err);
  }
  RS_RETURN_IF_ERROR(fsutil::FsyncDir(upload_dir));
  if (!old_data.empty() && old_data != part.data_file) {
    fsutil::Unlink(Join(upload_dir, old_data));
  }
  return part.info;
}

Result<std::vector<PartInfo>> DriveStore::ListParts(const std::string& bucket,
                                                    const std::string& key,
                                                    const std::string& upload_id) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  std::string upload_dir;
  auto rec = LoadUpload(bucket, key, upload_id, &upload_dir);
  if (!rec.ok()) return rec.error();
  auto names = fsutil::ListDir(upload_dir, /*dirs_only=*/false);
  if (!names.ok()) return names.error();
  std::vector<PartInfo> out;
  for (const auto& n : *names) {
    if (!n.starts_with("part.") || !n.ends_with(".json")) continue;
    const std::string path = Join(upload_dir, n);
    auto raw = fsutil::ReadFileIfExists(path);
    if (!raw.ok()) return raw.error();
    if (!raw->has_value()) continue;  // replaced or aborted meanwhile
    auto part = ParsePartRecord(**raw, path);
    if (!part.ok()) return part.error();
    out.push_back(std::move(part->info));
  }
  std::sort(out.begin(), out.end(),
            [](const PartInfo& a, const PartInfo& b) { return a.number < b.number; });
  return out;
}

Result<std::vector<UploadInfo>> DriveStore::ListMultipartUploads(const std::string& bucket,
                                                                 const std::string& prefix) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  const std::string mp_dir = paths::MultipartBucketDir(root_, bucket);
  auto ids = fsutil::ListDir(mp_dir, /*dirs_only=*/true);
  if (!ids.ok()) return ids.error();
  std::vector<UploadInfo> out;
  for (const auto& id : *ids) {
    if (!IsUploadId(id)) continue;
    const std::string file = Join(Join(mp_dir, id), kUploadFile);
    auto raw = fsutil::ReadFileIfExists(file);
    if (!raw.ok() || !raw->has_value()) continue;  // completed or aborted meanwhile
    auto rec = ParseUploadRecord(**raw, file);
    if (!rec.ok()) {
      spdlog::error("storage: {}", rec.error().message);
      continue;
    }
    if (!rec->key.starts_with(prefix)) continue;
    out.push_back(UploadInfo{rec->key, id, rec->initiated_ns});
  }
  std::sort(out.begin(), out.end(), [](const UploadInfo& a, const UploadInfo& b) {
    return std::tie(a.key, a.initiated_ns, a.upload_id) <
           std::tie(b.key, b.initiated_ns, b.upload_id);
  });
  return out;
}

Status DriveStore::AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                        const std::string& upload_id) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  std::shared_lock bucket_lock(BucketLock(bucket));
  std::lock_guard upload_lock(UploadLock(upload_id));
  std::string upload_dir;
  auto rec = LoadUpload(bucket, key, upload_id, &upload_dir);
  if (!rec.ok()) return rec.error();
  // One rename makes the upload disappear; the files are deleted with the staging dir.
  if (fsutil::Rename(upload_dir, Join(*staging, "upload")) != 0) {
    return fsutil::ErrnoError("rename", upload_dir, errno);
  }
  return {};
}

Result<ObjectInfo> DriveStore::CompleteMultipartUpload(const std::string& bucket,
                                                       const std::string& key,
                                                       const std::string& upload_id,
                                                       const std::vector<CompletePart>& parts,
                                                       const WritePrecondition& precondition,
                                                       const CompleteChecksum& declared) {
  (void)declared;  // DriveStore is retired: checksums are checked on the erasure path
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  auto loc = paths::MapKey(key);
  if (!loc.ok()) return loc.error();
  if (parts.empty()) {
    return MakeError(ErrorCode::kMalformedXML, "You must specify at least one part");
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].number < 1 || parts[i].number > kMaxPartNumber) {
      return MakeError(ErrorCode::kInvalidPart,
                       "invalid part number " + std::to_string(parts[i].number));
    }
    if (i > 0 && parts[i].number <= parts[i - 1].number) {
      return MakeError(ErrorCode::kInvalidPartOrder);
    }
  }
  auto staging = NewStaging();
  if (!staging.ok()) return staging.error();
  StagingGuard guard([&] { DropStaging(*staging); });
  const std::string data = Join(*staging, "data");
  if (fsutil::Mkdir(data, 0755) != 0) return fsutil::ErrnoError("mkdir", data, errno);

  std::shared_lock bucket_lock(BucketLock(bucket));
  std::lock_guard upload_lock(UploadLock(upload_id));
  std::string upload_dir;
  auto rec = LoadUpload(bucket, key, upload_id, &upload_dir);
  if (!rec.ok()) return rec.error();

  std::vector<PartRecord> records;
  records.reserve(parts.size());
  for (const auto& p : parts) {
    const std::string path = Join(upload_dir, PartRecordName(p.number));
    auto raw = fsutil::ReadFileIfExists(path);
    if (!raw.ok()) return raw.error();
    if (!raw->has_value()) {
      return MakeError(ErrorCode::kInvalidPart,
                       "part " + std::to_string(p.number) + " was not uploaded");
    }
    auto r = ParsePartRecord(**raw, path);
    if (!r.ok()) return r.error();
    if (r->info.etag != StripQuotes(p.etag)) {
      return MakeError(ErrorCode::kInvalidPart,
                       "part " + std::to_string(p.number) + ": ETag does not match");
    }
    records.push_back(std::move(*r));
  }
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (i + 1 < records.size() && records[i].info.size < kMinPartSize) {
      return MakeError(ErrorCode::kEntityTooSmall,
                       "part " + std::to_string(records[i].info.number) +
                           " is smaller than 5 MiB and not the last part");
    }
    total += records[i].info.size;
  }
  if (total > kMaxObjectSize) return MakeError(ErrorCode::kEntityTooLarge);

  // ETag: MD5 over the concatenated binary part MD5s, "-N". Composite checksums likewise, for
  // every algorithm all parts carry.
  ObjectMeta meta;
  const std::string suffix = "-" + std::to_string(records.size());
  std::vector<std::string> etags;
  for (const auto& r : records) etags.push_back(r.info.etag);
  meta.etag = MultipartEtag(etags);
  for (const auto& [name, unused] : records.front().info.checksums) {
    auto algo = hash::ChecksumAlgoFromName(name);
    if (!algo) continue;
    std::string raw_sums;
    bool all = true;
    for (const auto& r : records) {
      auto it = r.info.checksums.find(name);
      std::optional<std::string> raw;
      if (it != r.info.checksums.end()) raw = hash::Base64Decode(it->second);
      if (!raw) {
        all = false;
        break;
      }
      raw_sums += *raw;
    }
    if (all) meta.checksums[name] = hash::Base64Encode(hash::Digest(*algo, raw_sums)) + suffix;
  }
  meta.size = total;
  meta.mtime_ns = NowNs();
  meta.content_type = rec->content_type;
  meta.user_metadata = rec->user_metadata;
  meta.tags = rec->tags;
  meta.storage_class = rec->storage_class;
  meta.multipart = true;

  // Hard links, not renames, so the upload stays intact until the object is published (a crash
  // or failure before that point leaves the upload completable). No data is copied either way.
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string src = Join(upload_dir, records[i].data_file);
    const std::string dst = Join(data, PartFileName(i + 1));
    if (fsutil::Link(src, dst) != 0) {
      if (errno == ENOENT) {
        return MakeError(ErrorCode::kInvalidPart,
                         "part " + std::to_string(records[i].info.number) + " data is missing");
      }
      if (fsutil::Rename(src, dst) != 0) {  // file system without hard links
        return fsutil::ErrnoError("rename", src, errno);
      }
    }
    meta.parts.push_back(
        PartMeta{static_cast<int>(i + 1), records[i].info.size, records[i].info.etag});
  }
  RS_RETURN_IF_ERROR(fsutil::FsyncDir(data));
  RS_RETURN_IF_ERROR(PublishObject(bucket, key, *loc, *staging, meta, precondition));
  if (fsutil::Rename(upload_dir, Join(*staging, "upload")) != 0) {
    spdlog::warn("storage: completed upload {} not removed: {}", upload_dir, std::strerror(errno));
  }
  return meta.ToInfo(bucket, key);
}

Result<PutOptions> DriveStore::GetUploadOptions(const std::string& bucket, const std::string& key,
                                                const std::string& upload_id) {
  RS_RETURN_IF_ERROR(CheckBucket(bucket));
  std::string upload_dir;
  auto rec = LoadUpload(bucket, key, upload_id, &upload_dir);
  if (!rec.ok()) return rec.error();
  PutOptions opts;
  opts.content_type = rec->content_type;
  opts.user_metadata = rec->user_metadata;
  opts.tags = rec->tags;
  opts.storage_class = rec->storage_class;
  if (!rec->checksum_algorithm.empty()) {
    opts.checksum_algorithm = rec->checksum_algorithm;
    opts.checksum_type = rec->checksum_type;
  }
  return opts;
}

}  // namespace rdmastor::storage
