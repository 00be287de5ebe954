// `rdmastor server` configuration from flags and MINIO_* environment, validated once at start.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_line.h"
#include "cluster/internode_rdma.h"
#include "cluster/peer_timings.h"
#include "common/result.h"
#include "crypto/kms.h"
#include "crypto/keys.h"
#include "erasure/layout.h"
#include "rdma/settings.h"

namespace rdmastor::cli {

using EnvMap = std::map<std::string, std::string>;

// A snapshot of the process environment.
EnvMap Environment();

struct ServerConfig {
  std::string host;  // "" = all interfaces
  uint16_t port = 9000;
  std::vector<std::string> drives;
  std::string root_user, root_password;
  bool default_credentials = false;
  std::string region = "us-east-1";
  bool region_configured = false;  // MINIO_REGION / MINIO_SITE_REGION set (LocationConstraint)
  std::vector<std::string> domains;
  std::optional<crypto::KeyRing> kms;     // MINIO_KMS_SECRET_KEY (+ previous keys): SSE-S3
  // SSE-KMS's key service: MINIO_KMS_SECRET_KEY's keys and RDMASTOR_KMS_KEY_DIR's, default
  // RDMASTOR_KMS_DEFAULT_KEY_ID; null when neither is configured (aws:kms answers 501).
  std::shared_ptr<const crypto::Kms> kms_service;
  bool kms_reseal = false;                 // RDMASTOR_KMS_RESEAL=on: re-seal under the current key
  bool direct_writes = true;               // MINIO_API_ODIRECT: shard writes with O_DIRECT
  bool sse_c_allow_http = false;           // RDMASTOR_SSE_C_ALLOW_HTTP=on: SSE-C without TLS
  bool prometheus_public = false;          // MINIO_PROMETHEUS_AUTH_TYPE=public (default jwt)
  std::string certs_dir;  // --certs-dir (default ~/.rdmastor/certs, else ~/.minio/certs)
  std::string tls_cert, tls_key;           // both set when certs_dir holds them: HTTPS only
  std::vector<std::string> rdma_settings;  // MINIO_RDMA_* names that were set
  rdma::RdmaSettings rdma;                 // S3 over RDMA: MINIO_RDMA_FABRIC, verbs knobs, ...
  std::vector<std::string> warnings;       // to log once at start
  // MINIO_STORAGE_CLASS_STANDARD / _RRS (2+ drives), MINIO_STORAGE_CLASS_INLINE_BLOCK
  erasure::StorageClassSettings storage_classes;
  uint64_t meta_cache_bytes = 64ull << 20;  // RDMASTOR_META_CACHE: the node's metadata file cache
  int drive_check_interval_ms = 10000;     // RDMASTOR_DRIVE_CHECK_INTERVAL (replaced drives)
  bool distributed = false;                // drives are URLs (cluster/topology.h)
  // MINIO_PEER_WAIT, RDMASTOR_PEER_PING_INTERVAL / _PING_TIMEOUT / _QUICK_TIMEOUT
  cluster::PeerTimings peer;
  int iam_refresh_ms = 5000;  // RDMASTOR_IAM_REFRESH: users/policies cached at most this long
  std::string account_id;     // RDMASTOR_ACCOUNT_ID (12 digits); "" = from the deployment id
  // Multipart uploads older than this are aborted (MINIO_API_STALE_UPLOADS_EXPIRY; 0 = never),
  // swept every MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL. MinIO's defaults.
  int64_t stale_uploads_expiry_ms = 24LL * 3600 * 1000;
  int64_t stale_uploads_cleanup_interval_ms = 6LL * 3600 * 1000;
  // The lifecycle scanner (s3/lifecycle_scanner.h): RDMASTOR_LIFECYCLE_INTERVAL (0 = off),
  // RDMASTOR_LIFECYCLE_DAY_SECONDS (a test and drill knob), RDMASTOR_LIFECYCLE_BATCH,
  // RDMASTOR_LIFECYCLE_PAUSE.
  int64_t lifecycle_interval_ms = 3600LL * 1000;
  int64_t lifecycle_day_seconds = 86400;
  int64_t lifecycle_batch = 1000;
  int64_t lifecycle_pause_ms = 100;
  // Inter-node shard transport (both builds; the standard one offers the soft fabric only):
  // MINIO_RDMA_INTERNODE, MINIO_RDMA_MIN_SIZE, MINIO_RDMA_INTERNODE_ADDRESS / _INFLIGHT / _RETRY,
  // and the fabric settings of `rdma`. bind_ip stays "" unless set: the node uses its own address.
  cluster::InternodeRdmaSettings internode;
  // S3 front end limits (docs/runbook.md, "Limits and abuse"); 0 = derived default.
  int requests_max = 64;         // MINIO_API_REQUESTS_MAX: request handler threads
  int requests_per_client = 0;   // RDMASTOR_API_REQUESTS_PER_CLIENT (0: half the above)
  uint64_t connections_max = 0;  // RDMASTOR_API_CONNECTIONS_MAX (0: from the fd limit)
  int body_timeout_ms = 30000;   // RDMASTOR_API_BODY_TIMEOUT
  int send_timeout_ms = 30000;   // RDMASTOR_API_SEND_TIMEOUT
  int header_timeout_ms = 90000;      // RDMASTOR_API_HEADER_TIMEOUT (keep-alive wait + header)
  int handshake_timeout_ms = 120000;  // RDMASTOR_API_TLS_HANDSHAKE_TIMEOUT
  uint64_t min_rate = 64 << 10;  // RDMASTOR_API_MIN_RATE, bytes/s (0: timeouts only)
  // S3 over RDMA against trickling or greedy clients (rdma::ServiceOptions).
  int rdma_progress_timeout_ms = 10000;  // RDMASTOR_RDMA_PROGRESS_TIMEOUT
  uint64_t rdma_min_rate = 1 << 20;      // RDMASTOR_RDMA_MIN_RATE, bytes/s (0: any byte)
  // The concurrency ceilings (rdma/ceilings.h); 0 = sized at start by SizeRdmaCeilings.
  int rdma_transfers_max = 0;            // RDMASTOR_RDMA_TRANSFERS_MAX: staging buffers
  int rdma_transfers_per_client = 0;     // RDMASTOR_RDMA_TRANSFERS_PER_CLIENT
  int rdma_transfers_wait_ms = 30000;    // RDMASTOR_RDMA_TRANSFERS_WAIT: for a staging buffer
  // S3 over RDMA on RC: connections clients open (rdma::RcLimits).
  int rdma_rc_per_source = 64;          // RDMASTOR_RDMA_RC_PER_SOURCE
  int rdma_rc_max = 1024;               // RDMASTOR_RDMA_RC_MAX
  int rdma_rc_idle_timeout_ms = 60000;  // RDMASTOR_RDMA_RC_IDLE_TIMEOUT
};

struct TlsFiles {
  std::string dir, cert, key;  // cert/key empty: plain HTTP
};

// --certs-dir (or ~/.rdmastor/certs, else ~/.minio/certs when only that exists): HTTPS when
// public.crt and private.key are both there; an error when only one is, or when an explicitly named
// directory does not exist.
Result<TlsFiles> ResolveCertsDir(const std::optional<std::string>& flag, const EnvMap& env);

struct RootCredentials {
  std::string user, password;
  bool defaults = false;              // no credential variable set: minioadmin/minioadmin
  std::vector<std::string> warnings;  // deprecated variables used
};

// Every variable ParseRootCredentials reads; when any is set the defaults are never used.
inline constexpr const char* kCredentialVariables[] = {
    "MINIO_ROOT_USER",     "MINIO_ROOT_USER_FILE",     "MINIO_ACCESS_KEY", "MINIO_ACCESS_KEY_FILE",
    "MINIO_ROOT_PASSWORD", "MINIO_ROOT_PASSWORD_FILE", "MINIO_SECRET_KEY", "MINIO_SECRET_KEY_FILE"};

// The root credentials as MinIO takes them: MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, else their
// _FILE forms (Docker/systemd secrets), else the deprecated MINIO_ACCESS_KEY / MINIO_SECRET_KEY
// (and _FILE), with a warning; validated (set together, minimum lengths).
Result<RootCredentials> ParseRootCredentials(const EnvMap& env);

// Parses a duration: "120s", "2m", "1h", "500ms", or plain seconds. nullopt when malformed or over
// max_ms.
std::optional<int64_t> ParseDurationMs(std::string_view text, int64_t max_ms = 24LL * 3600 * 1000);

// Whether some part of the server reads this MINIO_* variable (others get a start-up warning).
bool IsKnownMinioVariable(std::string_view name);

// The server's flags (ParseCommandLine) plus the environment, validated. Errors carry a message
// naming the flag or variable and what it accepts.
Result<ServerConfig> ServerConfigFromFlags(const ServerFlags& flags, const EnvMap& env);
// The same from the words after `rdmastor server` (ParseServerFlags).
Result<ServerConfig> ParseServerConfig(const std::vector<std::string>& args, const EnvMap& env);

// Parses ":9000", "127.0.0.1:9000", "[::1]:9000", "host:9000".
Result<std::pair<std::string, uint16_t>> ParseAddress(const std::string& address);

// Parses a byte size: plain bytes ("1048576") or a number with a binary or decimal unit
// ("512KiB", "1MiB", "4GiB", "1MB", "64k"). nullopt when malformed or overflowing.
std::optional<uint64_t> ParseByteSize(std::string_view text);

// Logs the endpoint, credentials notice, and one line per RDMA path stating the active transport.
void LogStartup(const ServerConfig& cfg, uint16_t bound_port);

// Sizes the RDMA concurrency ceilings the settings left open from this host's memory, locked
// memory limit and RDMA devices (rdma::SizeCeilings), writes them into `cfg` (the S3 transfer
// caps and the inter-node staging buffers and channels) and logs them once. An explicit value
// the host cannot hold is an error naming it.
Status SizeRdmaCeilings(ServerConfig& cfg);

}  // namespace rdmastor::cli
