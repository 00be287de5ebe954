// The per-drive format file of an erasure-coded deployment: `.rdmastor.sys/format.json` records
// the deployment id, the drive's own id, its position (set index, drive index) and the whole set
// layout (every drive id, per set). Written once on first start; checked on every start so a drive
// from another deployment, or a drive given at another position, is refused with a clear message.
// An empty directory where a formatted drive was (a replaced drive) is formatted into its slot.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "erasure/layout.h"

namespace rdmastor::storage {

class Drive;

inline constexpr int kFormatVersion = 1;

struct DriveFormat {
  std::string deployment_id;
  std::string drive_id;
  int set_index = 0;
  int drive_index = 0;
  std::vector<std::vector<std::string>> sets;  // drive ids by [set][drive]
};

enum class DriveState {
  kOk,         // formatted drive of this deployment at its position
  kFormatted,  // was empty (new deployment or a replaced drive): formatted now
  kOffline,    // unusable now (cannot be created, read or written); retried later
};

struct FormatResult {
  std::string deployment_id;
  std::vector<std::vector<std::string>> sets;  // drive ids
  std::vector<DriveState> states;              // per drive, in argument order
  bool fresh = false;                          // a new deployment was created
};

std::string FormatPath(const std::string& root);
// format.json's text (also what peers exchange for a remote drive) and its parser (checks the
// version; `what` names the source in errors).
std::string SerializeFormat(const DriveFormat& format);
Result<DriveFormat> ParseFormat(const std::string& text, const std::string& what);
Result<DriveFormat> ReadFormat(const std::string& root);  // kNoSuchKey when absent
// Writes the format file of the drive at `root` atomically (temp + fsync + rename).
Status WriteFormatFile(const std::string& root, const DriveFormat& format);

struct FormatOptions {
  // A new deployment may be created here (clusters: only the first node formats; the others
  // answer kServiceUnavailable until its format files appear).
  bool may_create = true;
  // A new deployment needs every drive online (clusters: a node that is down might hold a
  // format already).
  bool fresh_needs_all = false;
};

// Loads or creates the format of every drive (`drives` in argument order, cut into sets of
// layout.set_size). Refuses (kInvalidArgument) drives of another deployment, drives at the wrong
// position, a changed layout, and unformatted drives that hold data; refuses when a set has fewer
// than its data-shard count of usable drives.
Result<FormatResult> LoadOrFormat(const std::vector<Drive*>& drives,
                                  const erasure::SetLayout& layout,
                                  const FormatOptions& options = {});

// Formats the empty drive into slot (set, drive) of an existing deployment (replacement).
Status FormatInto(Drive& target, const std::string& deployment_id,
                  const std::vector<std::vector<std::string>>& sets, int set, int drive);

// Formats `drive`, which holds objects (a single-drive layout converted in place), as the only
// drive of a new one-drive deployment.
Status FormatSingleDrive(Drive& drive);

// True when the directory holds nothing but (optionally) an empty system area / lost+found.
bool IsEmptyDrive(const std::string& root);

}  // namespace rdmastor::storage
