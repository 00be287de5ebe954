// Helpers shared by the storage tests: a scratch directory, an in-memory request body, commit
// checks and readers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/hash.h"
#include "common/result.h"
#include "s3/http_types.h"
#include "storage/object_layer.h"

namespace rdmastor::storage::testing {

#define RS_ASSERT_OK(expr)                                                                   \
  do {                                                                                       \
    const auto& rs_r_ = (expr);                                                              \
    ASSERT_TRUE(rs_r_.ok()) << #expr << ": " << GetErrorInfo(rs_r_.error().code).code << " " \
                            << rs_r_.error().message;                                        \
  } while (0)

#define RS_EXPECT_CODE(expr, want_code)                                            \
  do {                                                                             \
    const auto& rs_r_ = (expr);                                                    \
    ASSERT_FALSE(rs_r_.ok()) << #expr << " succeeded";                             \
    EXPECT_EQ(GetErrorInfo(rs_r_.error().code).code, GetErrorInfo(want_code).code) \
        << #expr << ": " << rs_r_.error().message;                                 \
    EXPECT_EQ(rs_r_.error().code, want_code) << #expr;                             \
  } while (0)

// A directory under /tmp, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rdmastor-storage-test-XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    if (p) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A request body served from memory in small pieces (like a socket would), optionally failing.
class MemBody : public s3::BodySource {
 public:
  explicit MemBody(std::string data, size_t piece = 4093) : data_(std::move(data)), piece_(piece) {}
  void FailAfter(size_t bytes) { fail_after_ = bytes; }

  Result<size_t> Read(char* buf, size_t len) override {
    if (fail_after_ && pos_ >= *fail_after_) {
      return MakeError(ErrorCode::kRequestTimeout, "client went away");
    }
    size_t n = std::min({len, piece_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string data_;
  size_t piece_;
  size_t pos_ = 0;
  std::optional<size_t> fail_after_;
};

// Deterministic pseudo-random bytes.
inline std::string Pattern(size_t n, uint32_t seed) {
  std::string out(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    out[i] = static_cast<char>(x);
  }
  return out;
}

// What the S3 layer's check would record for `data`.
inline CommitCheck Md5Check(const std::string& data,
                            std::map<std::string, std::string> checksums = {}) {
  return [etag = hash::Md5Hex(data), checksums](uint64_t) -> Result<CommitInfo> {
    return CommitInfo{etag, checksums};
  };
}

inline Result<ObjectInfo> Put(ObjectLayer& store, const std::string& bucket, const std::string& key,
                              const std::string& data, PutOptions opts = {}) {
  MemBody body(data);
  if (!opts.size) opts.size = data.size();
  return store.PutObject(bucket, key, body, opts, Md5Check(data));
}

inline std::string ReadAll(ObjectReader& r, size_t chunk = 65536) {
  std::string out;
  std::vector<char> buf(chunk);
  for (;;) {
    auto n = r.ReadAt(out.size(), buf.data(), buf.size());
    if (!n.ok()) {
      ADD_FAILURE() << "ReadAt: " << n.error().message;
      return out;
    }
    if (*n == 0) return out;
    out.append(buf.data(), *n);
  }
}

inline std::string Get(ObjectLayer& store, const std::string& bucket, const std::string& key) {
  auto r = store.OpenObject(bucket, key);
  if (!r.ok()) {
    ADD_FAILURE() << "OpenObject " << key << ": " << r.error().message;
    return {};
  }
  return ReadAll(**r);
}

// Every regular file and directory below `dir`, relative, sorted.
inline std::vector<std::string> Tree(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    out.push_back(std::filesystem::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What a staging area (.rdmastor.sys/tmp) holds besides the clean staging directories that
// writes keep for reuse (RenameDataRequest::keep_staging: a directory holding only its last
// commit's intent.json): staged or retired data, metadata, anything else.
inline std::vector<std::string> StagingLeftovers(const std::string& tmp_dir) {
  std::vector<std::string> out;
  for (const auto& e : Tree(tmp_dir)) {
    const auto slash = e.find('/');
    const bool pooled_dir =
        slash == std::string::npos && std::filesystem::is_directory(tmp_dir + "/" + e);
    if (!pooled_dir && e.substr(slash == std::string::npos ? 0 : slash) != "/intent.json")
      out.push_back(e);
  }
  return out;
}

}  // namespace rdmastor::storage::testing
