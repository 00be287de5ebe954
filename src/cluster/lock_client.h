// LockerClient for a peer's LockServer over peer RPC (POST /minio/lock/v1/<call>, LockArgs as
// JSON, answer "1" granted / "0" refused).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cluster/dsync.h"
#include "cluster/peer_client.h"

namespace rdmastor::cluster {

// How long one lock RPC may take before it fails (and the peer counts as down for a moment, so
// the next calls fail at once). A lock attempt waits at most DsyncOptions::call_timeout (1 s) for
// the answers anyway; this bounds how long the call's thread and connection linger on a peer that
// hangs (the peer RPC default is 30 s, meant for shard transfers), with room for a busy peer.
inline constexpr std::chrono::milliseconds kLockCallTimeout{2000};

class HttpLockerClient final : public LockerClient {
 public:
  explicit HttpLockerClient(std::shared_ptr<PeerClient> peer,
                            std::chrono::milliseconds timeout = kLockCallTimeout)
      : peer_(std::move(peer)), timeout_(timeout) {}
  Result<bool> Lock(const LockArgs& args) override { return Call("lock", args); }
  Result<bool> RLock(const LockArgs& args) override { return Call("rlock", args); }
  Result<bool> Unlock(const LockArgs& args) override { return Call("unlock", args); }
  Result<bool> RUnlock(const LockArgs& args) override { return Call("runlock", args); }
  Result<bool> Refresh(const LockArgs& args) override { return Call("refresh", args); }
  Result<bool> ForceUnlock(const LockArgs& args) override { return Call("forceunlock", args); }
  std::string endpoint() const override { return peer_->address(); }

 private:
  Result<bool> Call(std::string_view op, const LockArgs& args);
  std::shared_ptr<PeerClient> peer_;
  std::chrono::milliseconds timeout_;
};

}  // namespace rdmastor::cluster
