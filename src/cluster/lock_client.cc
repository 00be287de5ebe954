#include "cluster/lock_client.h"

#include "cluster/peer_server.h"
#include "cluster/wire.h"

namespace rdmastor::cluster {

Result<bool> HttpLockerClient::Call(std::string_view op, const LockArgs& args) {
  auto r = peer_->Call("POST", std::string(kLockPrefix) + std::string(op), EncodeLockArgs(args),
                       client::ResponseTarget::String(), {}, timeout_);
  if (!r.ok()) return r.error();
  return r->body == "1";
}

}  // namespace rdmastor::cluster
