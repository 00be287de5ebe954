// MinIO's x-minio-force-delete (the MinIO SDKs' removeObject(forceDelete) and `mc rb --force`):
// on DeleteBucket, the bucket goes with everything in it; on DeleteObject, the key and every
// object under key/ go, all their versions, for good. Both are operations of their own in the
// table (s3/operations.h: ForceDeleteBucket, DeletePrefix), served here.
#include <string>

#include "s3/handlers.h"

namespace rdmastor::s3 {

namespace {

// The header as MinIO reads it (Go's strconv.ParseBool); anything else is 400 InvalidRequest.
Result<bool> ForceDeleteRequested(const HttpRequest& req) {
  const std::string* v = req.FindHeader("x-minio-force-delete");
  if (!v || v->empty()) return false;  // as absent, as MinIO reads it
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"})
    if (*v == yes) return true;
  for (const char* no : {"0", "f", "F", "FALSE", "false", "False"})
    if (*v == no) return false;
  return MakeError(ErrorCode::kInvalidRequest,
                   "x-minio-force-delete must be true or false, not '" + *v + "'.");
}

// Does `key` lie under the force-deleted `prefix` (the key itself, or under prefix/)?
bool Under(std::string_view key, std::string_view prefix) {
  if (prefix.empty() || key == prefix) return true;
  if (prefix.ends_with('/')) return key.starts_with(prefix);
  return key.size() > prefix.size() && key.starts_with(prefix) && key[prefix.size()] == '/';
}

// Every version of every key under `prefix` (Under), one listing page at a time; `each` returns
// false to stop. A page holds up to 1000 keys, all their versions.
template <typename Each>
Status ForEachVersion(storage::ObjectLayer& store, const std::string& bucket,
                      const std::string& prefix, Each&& each) {
  storage::ListOptions o;
  o.prefix = prefix;
  o.versions = true;
  for (;;) {
    auto page = store.ListObjectVersions(bucket, o);
    if (!page.ok()) return page.error();
    for (const auto& v : page->objects) {
      // Keys beyond prefix/ (prefix "a": "ab" sorts after "a/..."): the rest is not ours.
      if (!Under(v.key, prefix) && v.key > prefix + "/") return {};
      if (Under(v.key, prefix) && !each(v)) return {};
    }
    if (!page->truncated || page->objects.empty()) return {};
    // start_after is inclusive for versions: the last key is listed again, whole.
    if (page->objects.back().key == o.start_after) return {};  // no progress (a lone huge key)
    o.start_after = page->objects.back().key;
  }
}

// Removes every version of every key under `prefix` for good. Lists again from the start after
// each page: what a page listed is gone by the next listing, so each round makes progress.
Status RemoveAllUnder(storage::ObjectLayer& store, const std::string& bucket,
                      const std::string& prefix) {
  for (;;) {
    size_t removed = 0, seen = 0;
    Status failed;
    auto st = ForEachVersion(store, bucket, prefix, [&](const storage::ObjectInfo& v) {
      ++seen;
      auto r = store.DeleteObjectVersion(bucket, v.key, storage::VersionSel(v.version_id));
      // Gone already (a concurrent delete) counts as removed.
      if (r.ok() || r.error().code == ErrorCode::kNoSuchVersion ||
          r.error().code == ErrorCode::kNoSuchKey) {
        ++removed;
        return seen < 1000;  // a page at a time, then list again
      }
      failed = r.error();
      return false;
    });
    if (!st.ok()) return st;
    if (!failed.ok()) return failed;
    if (seen == 0) return {};
    if (removed == 0) return MakeError(ErrorCode::kInternalError, "force delete made no progress");
  }
}

}  // namespace

Reply HandleForceDeleteBucket(const Env& env, S3Request& r) {
  auto force = ForceDeleteRequested(r.req);
  if (!force.ok()) return ErrorReply(force.error());
  if (!*force) return HandleDeleteBucket(env, r);
  auto info = env.store.GetBucketInfo(r.bucket);
  if (!info.ok()) return ErrorReply(info.error());
  // As MinIO: a lock-enabled bucket is never force-deleted (its locked versions must survive).
  if (auto lock = BucketLockOf(env.store, r.bucket); !lock.ok() || lock->enabled)
    return ErrorReply(lock.ok() ? MakeError(ErrorCode::kMethodNotAllowed) : lock.error());
  if (auto st = RemoveAllUnder(env.store, r.bucket, ""); !st.ok()) return ErrorReply(st.error());
  auto uploads = env.store.ListMultipartUploads(r.bucket, "");
  if (!uploads.ok()) return ErrorReply(uploads.error());
  for (const auto& u : *uploads) {
    auto st = env.store.AbortMultipartUpload(r.bucket, u.key, u.upload_id);
    if (!st.ok() && st.error().code != ErrorCode::kNoSuchUpload) return ErrorReply(st.error());
  }
  // An object written meanwhile keeps the bucket: BucketNotEmpty, as a plain delete answers.
  return HandleDeleteBucket(env, r);
}

Reply HandleDeletePrefix(const Env& env, S3Request& r) {
  auto force = ForceDeleteRequested(r.req);
  if (!force.ok()) return ErrorReply(force.error());
  if (!*force) return HandleDeleteObject(env, r);
  auto versioning = env.store.BucketVersioning(r.bucket);
  if (!versioning.ok()) return ErrorReply(versioning.error());
  // As MinIO: no force delete in a lock-enabled bucket (400 InvalidArgument).
  if (auto lock = BucketLockOf(env.store, r.bucket); !lock.ok() || lock->enabled)
    return ErrorReply(lock.ok() ? MakeError(ErrorCode::kInvalidArgument,
                                            "force-delete is forbidden on Object Locking enabled "
                                            "buckets")
                                : lock.error());
  // The request's s3:DeleteObject on the prefix is checked (Authorized); each key is checked
  // too, before anything is removed, so that a policy denying part of the prefix keeps it whole.
  // Versions go for good: in a versioned bucket that is s3:DeleteObjectVersion.
  if (!r.caller.root()) {
    const char* action = *versioning == storage::Versioning::kUnversioned
                             ? "s3:DeleteObject"
                             : "s3:DeleteObjectVersion";
    Status denied;
    std::string last;
    auto st = ForEachVersion(env.store, r.bucket, r.key, [&](const storage::ObjectInfo& v) {
      if (v.key == last) return true;
      last = v.key;
      denied = r.allowed(action, v.key);
      return denied.ok();
    });
    if (!st.ok()) return ErrorReply(st.error());
    if (!denied.ok()) return ErrorReply(denied.error());
  }
  if (auto st = RemoveAllUnder(env.store, r.bucket, r.key); !st.ok()) return ErrorReply(st.error());
  return EmptyReply(204);
}

}  // namespace rdmastor::s3
