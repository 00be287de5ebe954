#include "iam/actions.h"

#include <utility>

#include "s3/operations.h"

namespace rdmastor::iam {

namespace {

constexpr std::pair<std::string_view, std::string_view> kVersionActions[] = {
    {"s3:GetObject", "s3:GetObjectVersion"},
    {"s3:DeleteObject", "s3:DeleteObjectVersion"},
    {"s3:GetObjectTagging", "s3:GetObjectVersionTagging"},
    {"s3:PutObjectTagging", "s3:PutObjectVersionTagging"},
    {"s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"},
    {"s3:GetObjectAcl", "s3:GetObjectVersionAcl"},
    {"s3:PutObjectAcl", "s3:PutObjectVersionAcl"},
    {"s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"},
};

}  // namespace

std::string_view VersionAction(std::string_view action) {
  for (const auto& [plain, versioned] : kVersionActions)
    if (plain == action) return versioned;
  return action;
}

// Both from the S3 operation table (s3/operations.h): its action and what the action is on.
std::string_view ActionFor(std::string_view api) {
  for (const auto& op : s3::kOperations)
    if (op.name == api) return op.action;
  return {};
}

bool IsBucketAction(std::string_view action) {
  for (const auto& op : s3::kOperations)
    if (op.action == action) return op.on == s3::On::kBucket;
  return false;
}

}  // namespace rdmastor::iam
