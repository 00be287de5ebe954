// The serving side of peer RPC, on the S3 port:
//   POST /minio/storage/v1/<call>?disk=PATH       a drive call of the table (wire.h) on drive PATH
//   POST /minio/storage/v1/<call>                 a node call of the table (a batch) on LocalHost
//   POST /minio/lock/v1/{lock,rlock,unlock,runlock,refresh,forceunlock}   this node's LockServer
//   GET  /minio/peer/v1/config                     this node's configuration digest (start-up)
// Every request must carry a valid peer signature (PeerAuth) made for this node, with a nonce not
// seen before (PeerReplayCache) and over the body as received; anything else is answered 403 with
// an S3 error document and nothing is done. NodeHandler puts it in front of the S3 API, which it
// serves only once the object layer is ready (503 before).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "cluster/dsync.h"
#include "cluster/internode_rdma.h"
#include "cluster/peer_client.h"
#include "s3/http_server.h"
#include "storage/local_host.h"

namespace rdmastor::cluster {

inline constexpr const char* kLockPrefix = "/minio/lock/v1/";
inline constexpr const char* kPeerPrefix = "/minio/peer/v1/";

// True for the paths PeerServer serves.
bool IsPeerPath(std::string_view raw_path);

class PeerServer {
 public:
  // `self`: this node's address as its peers name it (Node::address(); requests signed for
  // another node are refused). `host`: this node's drives, by their path in the endpoints (the
  // only ones served).
  PeerServer(std::shared_ptr<const PeerAuth> auth, std::string self,
             std::shared_ptr<storage::LocalHost> host, std::shared_ptr<LockServer> locks,
             std::string config_json, std::shared_ptr<InternodeRdma> internode = nullptr);

  void Handle(const s3::HttpRequest& req, s3::BodySource& body, s3::ResponseSink& sink);
  // A peer path whose signature header verifies (MAC and time; Handle checks the nonce and body
  // too): the requests that may pass the per-client bound (HttpServerOptions::uncapped).
  bool SignedByPeer(const s3::HttpRequest& req) const;

 private:
  // `body`: the request body, read whole and checked against its signature.
  void HandleStorage(const std::string& call, const s3::HttpRequest& req, std::string body,
                     s3::ResponseSink& sink);
  void HandleLock(const std::string& op, const std::string& body, s3::ResponseSink& sink);

  std::shared_ptr<const PeerAuth> auth_;
  std::string self_;
  PeerReplayCache replay_;
  std::shared_ptr<storage::LocalHost> host_;
  std::shared_ptr<LockServer> locks_;
  std::string config_json_;
  std::shared_ptr<InternodeRdma> internode_;
};

// Routes peer RPC to a PeerServer and everything else to the S3 handler once it is set.
class NodeHandler final : public s3::RequestHandler {
 public:
  explicit NodeHandler(PeerServer* peer) : peer_(peer) {}
  void SetS3(s3::RequestHandler* s3) { s3_.store(s3); }
  void Handle(const s3::HttpRequest& req, s3::BodySource& body, s3::ResponseSink& sink) override;
  void RenderFrontEndError(ErrorCode code, s3::HttpResponseHead& head, std::string& body) override;
  bool SignedByPeer(const s3::HttpRequest& req) const { return peer_->SignedByPeer(req); }

 private:
  PeerServer* peer_;
  std::atomic<s3::RequestHandler*> s3_{nullptr};
};

}  // namespace rdmastor::cluster
