// LockerClient for a peer's LockServer over peer RPC (POST /minio/lock/v1/<call>, LockArgs as
// JSON, answer "1" granted / "0" refused).
#pragma once

#include <memory>
#include <string>

#include "cluster/dsync.h"
#include "cluster/peer_client.h"

namespace rdmastor::cluster {

class HttpLockerClient final : public LockerClient {
 public:
  explicit HttpLockerClient(std::shared_ptr<PeerClient> peer) : peer_(std::move(peer)) {}
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
};

}  // namespace rdmastor::cluster
