// Sample versions for the version record's tests (tests/storage/version_record_test.cc and the
// peer codec's in tests/cluster/version_record_wire_test.cc).
#pragma once

#include "storage/object_meta.h"

namespace rdmastor::storage::testing {

// A version with every field of the record set (each to a value that is not its default), and a
// delete marker (the one field a data version cannot set).
inline ObjectMeta FullVersion() {
  ObjectMeta m;
  m.size = 7;
  m.etag = "0123456789abcdef0123456789abcdef-2";
  m.mtime_ns = 1700000000123456789;
  m.content_type = "text/x-full";
  m.user_metadata = {{"x-amz-meta-a", "b"}, {"x-amz-meta-latin1", "caf\xe9"}};
  m.checksums = {{"crc32c", "AAAAAA==-2"}};
  m.storage_class = "REDUCED_REDUNDANCY";
  m.multipart = true;
  m.parts = {PartMeta{1, 3, "aa", {{"crc32c", "AQIDBA=="}}}, PartMeta{2, 4, "bb", {}}};
  m.data_dir = ".rdmastor.data.0123456789abcdef";
  ErasureMeta e;
  e.data = 2;
  e.parity = 1;
  e.stripe_size = 1048576;
  e.index = 1;
  e.distribution = {2, 1, 3};
  e.bitrot = "xxh3-64";
  e.is_inline = true;
  e.SetInline("shard-bytes");
  m.erasure = e;
  m.tags = "k=v&k2=v%202";
  m.acl = "public-read";
  m.version_id = "5e1d6b8a-0c2f-4c1e-9d3a-7b6f0e2a1c44";
  m.internal = {{"x-test", "sealed"}};
  m.lock_mode = "COMPLIANCE";
  m.lock_until_ms = 1893456000000;  // 2030-01-01
  m.legal_hold = "ON";
  m.owner = "alice";
  return m;
}

// FullVersion without the fields the record gained after format 3's release (Object Lock, the owner): all
// kNonDefault, so a version that does not set them is written as that release wrote it.
inline ObjectMeta Format3Version() {
  ObjectMeta m = FullVersion();
  m.lock_mode.clear();
  m.lock_until_ms = 0;
  m.legal_hold.clear();
  m.owner.clear();
  return m;
}

inline ObjectMeta DeleteMarker() {
  ObjectMeta m;
  m.etag = "";
  m.mtime_ns = 1700000000000000001;
  m.version_id = "9a1d6b8a-0c2f-4c1e-9d3a-7b6f0e2a1c44";
  m.delete_marker = true;
  return m;
}

}  // namespace rdmastor::storage::testing
