// The peer codec of ObjectInfo (a listing's objects, cluster/wire.cc) carries every field of the
// version record but the layout's (storage/version_record.h), plus the listing's own.
#include <gtest/gtest.h>

#include "../storage/version_record_samples.h"
#include "cluster/wire.h"

namespace rdmastor::cluster {
namespace {

using storage::FieldScope;

TEST(VersionRecordWireTest, ThePeerCodecCarriesEveryFieldButTheLayout) {
  storage::ListResult sent;
  for (const auto& m : {storage::testing::FullVersion(), storage::testing::DeleteMarker()})
    sent.objects.push_back(m.ToInfo("bkt", "key/" + m.version_id));
  sent.objects[0].is_latest = false;
  sent.objects[0].part_checksums = {{{"crc32c", "AQIDBA=="}}, {}};
  auto got = DecodeListResult(EncodeListResult(sent));
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->objects.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& a = got->objects[i];
    const auto& b = sent.objects[i];
    EXPECT_EQ(a.bucket, b.bucket);
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.part_count, b.part_count);
    EXPECT_EQ(a.part_sizes, b.part_sizes);
    EXPECT_EQ(a.part_checksums, b.part_checksums);
    EXPECT_EQ(a.is_latest, b.is_latest);
    [&](const auto& x, const auto& y) {
#define X(member, name, T, codec, presence, scope)        \
  if constexpr (FieldScope::scope != FieldScope::kLayout) \
    EXPECT_TRUE(x.member == y.member) << #member << " lost by the peer codec (object " << i << ")";
      RDMASTOR_VERSION_RECORD(X)
#undef X
    }(a, b);
  }
}

}  // namespace
}  // namespace rdmastor::cluster
