#include "cluster/peer_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "cluster/remote_drive.h"
#include "cluster/wire.h"
#include "common/uri.h"
#include "s3/xml.h"

namespace rdmastor::cluster {

namespace {

constexpr size_t kMaxRpcBody = 64 << 20;

void Send(s3::ResponseSink& sink, int status, std::string_view body,
          const s3::HeaderList& extra = {}) {
  s3::HttpResponseHead head;
  head.status = status;
  for (const auto& [k, v] : extra) head.Set(k, v);
  head.content_length = body.size();
  if (!sink.SendHead(head)) return;
  if (!body.empty()) sink.Write(body.data(), body.size());
}

void SendError(s3::ResponseSink& sink, const Error& e, std::string_view resource) {
  const auto& info = GetErrorInfo(e.code);
  const std::string msg = e.message.empty() ? std::string(info.message) : e.message;
  s3::HeaderList h{{kErrorHeader, std::string(info.code)}};
  if (e.code == ErrorCode::kAccessDenied || e.code == ErrorCode::kServiceUnavailable) {
    // Refusals are S3 error documents (what a stray client sees).
    h.emplace_back("Content-Type", "application/xml");
    Send(sink, info.http_status, s3::ErrorXml(info.code, msg, resource, ""), h);
    return;
  }
  Send(sink, info.http_status, msg, h);
}

void SendBool(s3::ResponseSink& sink, bool v) { Send(sink, 200, v ? "1" : "0"); }

Result<std::string> ReadBody(const s3::HttpRequest& req, s3::BodySource& body) {
  std::string out;
  const uint64_t len = req.content_length.value_or(0);
  if (len > kMaxRpcBody) return MakeError(ErrorCode::kEntityTooLarge, "peer RPC body too large");
  out.resize(len);
  auto got = body.ReadFull(out.data(), out.size());
  if (!got.ok()) return got.error();
  if (*got != len) return MakeError(ErrorCode::kIncompleteBody);
  return out;
}

std::optional<uint64_t> ToU64(const std::string& s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Refusals come from whoever reaches the port, before any authentication: one line a second at
// most (saying how many were left out), the path cut to 128 bytes, the message to 256.
void LogRefusal(const s3::HttpRequest& req, const Error& e) {
  static std::mutex mu;
  static std::chrono::steady_clock::time_point next;
  static uint64_t left_out = 0;
  uint64_t skipped;
  {
    std::lock_guard lock(mu);
    const auto now = std::chrono::steady_clock::now();
    if (now < next) {
      ++left_out;
      return;
    }
    next = now + std::chrono::seconds(1);
    skipped = std::exchange(left_out, 0);
  }
  auto cut = [](std::string_view v, size_t n) {
    return v.size() <= n ? std::string(v) : std::string(v.substr(0, n)) + "...";
  };
  spdlog::warn("peer RPC {} {} from {} refused: {} ({} more refusal(s) not logged)",
               cut(req.method, 16), cut(req.raw_path, 128), req.remote_ip, cut(e.message, 256),
               skipped);
}

}  // namespace

bool IsPeerPath(std::string_view p) {
  return p.starts_with(kStoragePrefix) || p.starts_with(kLockPrefix) || p.starts_with(kPeerPrefix);
}

PeerServer::PeerServer(std::shared_ptr<const PeerAuth> auth, std::string self,
                       std::shared_ptr<storage::LocalHost> host, std::shared_ptr<LockServer> locks,
                       std::string config_json, std::shared_ptr<InternodeRdma> internode)
    : auth_(std::move(auth)),
      self_(std::move(self)),
      host_(std::move(host)),
      locks_(std::move(locks)),
      config_json_(std::move(config_json)),
      internode_(std::move(internode)) {}

bool PeerServer::SignedByPeer(const s3::HttpRequest& req) const {
  return IsPeerPath(req.raw_path) && auth_->Verify(req, self_, PeerAuthNowMs()).ok();
}

void PeerServer::Handle(const s3::HttpRequest& req, s3::BodySource& body, s3::ResponseSink& sink) {
  auto refuse = [&](const Error& e) {
    LogRefusal(req, e);
    SendError(sink, e, req.raw_path);
  };
  // Header and MAC first, then the nonce (a replay is refused before its body is even read), then
  // the body against its signed hash, before any handler sees it. Every body is read whole (all
  // are bounded by kMaxRpcBody; shard pieces are 1-4 MiB, and shardwrite buffered its piece
  // before writing it anyway), so no handler can act on bytes that are not the signed ones, and a
  // shard is never written from an unverified body. The cost is one SHA-256 pass over the body on
  // each side: OpenSSL 3.0 with SHA-NI does ~1,650 MiB/s on 1 MiB bodies on the development
  // machine (openssl speed), about 0.6 ms per 1 MiB piece.
  const int64_t now = PeerAuthNowMs();
  auto sig = auth_->Verify(req, self_, now);
  if (!sig.ok()) return refuse(sig.error());
  if (auto st = replay_.Admit(*sig, now); !st.ok()) return refuse(st.error());
  auto data = ReadBody(req, body);
  if (!data.ok()) return SendError(sink, data.error(), req.raw_path);
  if (auto st = CheckBody(*sig, *data); !st.ok()) return refuse(st.error());

  const std::string& path = req.raw_path;
  if (path.starts_with(kStoragePrefix)) {
    return HandleStorage(path.substr(std::string_view(kStoragePrefix).size()), req,
                         std::move(*data), sink);
  }
  if (path.starts_with(kLockPrefix)) {
    return HandleLock(path.substr(std::string_view(kLockPrefix).size()), *data, sink);
  }
  if (path == std::string(kPeerPrefix) + "config") {
    // A starting node names its lock owner and process: locks its previous process held here
    // are dropped now rather than after their TTL (dsync.h).
    // It also names where its inter-node RDMA target listens (MINIO_RDMA_INTERNODE_ADDRESS): its
    // tokens name that address while its RPCs come from its node address.
    std::string node, instance, rdma_address;
    if (auto query = uri::ParseQuery(req.raw_query))
      for (const auto& [k, v] : *query) {
        if (k == "node") node = v;
        if (k == "instance") instance = v;
        if (k == "rdma_address") rdma_address = v;
      }
    locks_->ObserveInstance(node, instance);
    if (internode_ && !node.empty() && !rdma_address.empty())
      internode_->SetPeerRdmaAddress(node, rdma_address);
    return Send(sink, 200, config_json_);
  }
  // The peers' health check (PeerClient): answered as soon as the signature is checked.
  if (path == kPeerPingTarget) return Send(sink, 200, "");
  SendError(sink, MakeError(ErrorCode::kInvalidRequest, "unknown peer RPC " + path), path);
}

void PeerServer::HandleLock(const std::string& op, const std::string& text,
                            s3::ResponseSink& sink) {
  auto args = DecodeLockArgs(text);
  if (!args.ok()) return SendError(sink, args.error(), op);
  Result<bool> r = MakeError(ErrorCode::kInvalidRequest, "unknown lock call " + op);
  if (op == "lock")
    r = locks_->Lock(*args);
  else if (op == "rlock")
    r = locks_->RLock(*args);
  else if (op == "unlock")
    r = locks_->Unlock(*args);
  else if (op == "runlock")
    r = locks_->RUnlock(*args);
  else if (op == "refresh")
    r = locks_->Refresh(*args);
  else if (op == "forceunlock")
    r = locks_->ForceUnlock(*args);
  if (!r.ok()) return SendError(sink, r.error(), op);
  SendBool(sink, *r);
}

namespace {

// What a call's response type sends: its head as the body, or (a type with a payload) the head in
// kReplyHeader and the payload as the body.
template <class Rsp>
void SendReply(s3::ResponseSink& sink, const Result<Rsp>& r, std::string_view call) {
  if (!r.ok()) return SendError(sink, r.error(), call);
  Frame f = Wire<Rsp>::Encode(*r);
  if constexpr (kHasPayload<Rsp>) {
    Send(sink, 200, f.payload, {{kReplyHeader, f.head}});
  } else {
    Send(sink, 200, f.head);
  }
}

// The table's expressions yield the response, a Result of it or a Status.
template <class Rsp, class T>
Result<Rsp> AsResult(T&& v) {
  using V = std::decay_t<T>;
  if constexpr (std::is_same_v<V, Status>) {
    if (!v.ok()) return v.error();
    return Rsp{};
  } else if constexpr (std::is_same_v<V, Result<Rsp>>) {
    return std::forward<T>(v);
  } else {
    return Rsp(std::forward<T>(v));
  }
}

// The query parameter `name` ("" when absent).
std::string QueryValue(const s3::HttpRequest& req, std::string_view name) {
  auto query = uri::ParseQuery(req.raw_query);
  if (!query) return {};
  for (const auto& [k, v] : *query)
    if (k == name) return v;
  return {};
}

// What the caller asked to move over RDMA: its token and the piece length.
struct RdmaPiece {
  std::string token;
  uint64_t length = 0;
};

// nullopt: a plain (TCP) request. An error: a token request that is malformed, or that this node
// cannot serve (no inter-node RDMA here).
Result<std::optional<RdmaPiece>> RdmaPieceOf(const s3::HttpRequest& req,
                                             const InternodeRdma* internode) {
  const std::string* token = req.FindHeader(kInternodeTokenHeader);
  if (token == nullptr) return std::optional<RdmaPiece>();
  if (internode == nullptr || !internode->available())
    return MakeError(ErrorCode::kRDMANotSupported, "inter-node RDMA is not available on this node");
  const std::string* len = req.FindHeader(kInternodeLengthHeader);
  auto n = len ? ToU64(*len) : std::nullopt;
  if (!n || *n == 0 || *n > kMaxRpcBody)
    return MakeError(
        ErrorCode::kInvalidRDMAToken,
        std::string("inter-node RDMA piece without a valid ") + kInternodeLengthHeader);
  return std::optional<RdmaPiece>(RdmaPiece{*token, *n});
}

// A failed pull/push is the caller's cue to resend over TCP: always answered as an RDMA error.
Error AsRdmaFailure(Error e) {
  if (e.code != ErrorCode::kSlowDown && !IsRdmaDecline(e.code) &&
      e.code != ErrorCode::kInvalidRDMAToken)
    e.code = ErrorCode::kRDMATransferFailed;
  return e;
}

std::string CallerOf(const s3::HttpRequest& req) {
  const std::string* node = req.FindHeader(kPeerNodeHeader);
  return node && !node->empty() ? *node : req.remote_ip;
}

// The calls that need more than the drive the request names (the table's `srv`): those that move
// shard bytes (the payload in the body (TCP) or moved with InternodeRdma when the request carries
// the caller's token), and the node's batches, whose entries name drives.
struct CallServer {
  const s3::HttpRequest& req;
  InternodeRdma* internode;
  const std::string& disk;

  // A batch entry's drive: the index of one of this node's, or the error that refuses the whole
  // call. `seen` (optional): the drives named so far, each at most once.
  static Result<size_t> OwnDrive(const storage::LocalHost& h, const std::string& disk,
                                 std::vector<bool>* seen = nullptr) {
    auto i = h.Find(disk);
    if (!i)
      return MakeError(ErrorCode::kInvalidArgument,
                       "drive '" + disk + "' is not a drive of this node");
    if (seen) {
      if ((*seen)[*i])
        return MakeError(ErrorCode::kInvalidArgument, "drive '" + disk + "' named twice");
      (*seen)[*i] = true;
    }
    return *i;
  }

  // Each path is checked by the drive's ReadFile (CheckRelPath), as readfile's.
  Result<peer::ReadFileResults> ReadFiles(storage::LocalHost& h, const peer::ReadFileBatch& in) {
    std::vector<storage::FileRead> reads;
    reads.reserve(in.entries.size());
    for (const auto& e : in.entries) {
      auto i = OwnDrive(h, e.disk);
      if (!i.ok()) return i.error();
      reads.push_back({*i, e.path});
    }
    return peer::ReadFileResults{h.ReadFiles(reads)};
  }

  // Every entry is checked, as renamedata checks its request, before any runs: a batch with one
  // entry that is not for a drive of this node, names a drive twice or names a path outside the
  // layout is refused whole and changes nothing. Then the drives of each file system commit
  // together (LocalHost::RenameData: one pair of barriers per file system).
  Result<peer::RenameDataResults> RenameData(storage::LocalHost& h, peer::RenameDataBatch& in) {
    std::vector<bool> seen(h.size(), false);
    std::vector<storage::RenameDataEntry> entries;
    entries.reserve(in.entries.size());
    for (auto& e : in.entries) {
      auto i = OwnDrive(h, e.disk, &seen);
      if (!i.ok()) return i.error();
      RS_RETURN_IF_ERROR(storage::CheckRenameDataRequest(e.req));
      entries.push_back({*i, std::move(e.req)});
    }
    return peer::RenameDataResults{h.RenameData(std::move(entries))};
  }

  // The pieces' bytes: the body's payload, or (the request carries a token) pulled over RDMA in
  // one transfer. Checked whole (drives, lengths) before any piece is written.
  Result<peer::DoneResults> ShardWriteGroup(storage::LocalHost& h, peer::ShardWriteBatch& in) {
    std::vector<bool> seen(h.size(), false);
    std::vector<storage::ShardPiece> pieces;
    pieces.reserve(in.entries.size());
    uint64_t total = 0;
    for (const auto& e : in.entries) {
      auto i = OwnDrive(h, e.disk, &seen);
      if (!i.ok()) return i.error();
      if (e.len > kMaxRpcBody) return MakeError(ErrorCode::kInvalidArgument, "bad len");
      total += e.len;
      pieces.push_back({*i, e.path, e.offset, {}, e.create, e.sync, 0});
    }
    RS_RETURN_IF_ERROR(ReceivePayload(in.payload, total, "shardwritegroup"));
    if (in.payload.size() != total)
      return MakeError(ErrorCode::kInvalidRequest,
                       "shardwritegroup pieces of " + std::to_string(total) +
                           " bytes, payload of " + std::to_string(in.payload.size()));
    size_t at = 0;
    for (size_t j = 0; j < pieces.size(); ++j) {
      const auto len = static_cast<size_t>(in.entries[j].len);
      pieces[j].data = std::string_view(in.payload).substr(at, len);
      at += len;
    }
    peer::DoneResults out;
    for (auto& st : h.WriteShardPieces(pieces)) {
      out.results.push_back(st.ok() ? Result<peer::Done>(peer::Done{})
                                    : Result<peer::Done>(st.error()));
    }
    return out;
  }

  // A shard write's payload: as it came in the body, or pulled over RDMA (`want` bytes) when the
  // request carries a token (then the body carries none).
  Status ReceivePayload(std::string& payload, uint64_t want, std::string_view call) {
    auto piece = RdmaPieceOf(req, internode);
    if (!piece.ok()) return piece.error();
    const std::string caller = CallerOf(req);
    if (piece->has_value()) {
      if (!payload.empty())
        return MakeError(ErrorCode::kInvalidRequest, "an RDMA piece request carries no payload");
      if ((*piece)->length != want)
        return MakeError(ErrorCode::kInvalidRDMAToken,
                         "RDMA piece length differs from the pieces'");
      // The signature covers the token, the length and the calling node (so the pull goes to the
      // signer's buffer), but not the bytes pulled: RDMA payloads are as trustworthy as the
      // fabric (docs/architecture.md).
      payload.resize((*piece)->length);
      auto st =
          internode->Pull(caller, (*piece)->token, req.remote_ip, payload.data(), payload.size());
      if (!st.ok()) {
        spdlog::debug("{} from {}: {}", call, caller, st.error().message);
        return AsRdmaFailure(st.error());
      }
    } else if (internode && !payload.empty()) {
      internode->RecordShard(caller, admin::Transport::kTcp, 0, payload.size());
    }
    return {};
  }

  Status ShardWrite(storage::LocalDrive& d, peer::ShardWriteArgs& in) {
    auto piece = RdmaPieceOf(req, internode);
    if (!piece.ok()) return piece.error();
    const uint64_t want = piece->has_value() ? (*piece)->length : in.payload.size();
    RS_RETURN_IF_ERROR(ReceivePayload(in.payload, want, "shardwrite"));
    return d.WriteShardAt(in.path, in.offset, in.payload, in.create, in.sync);
  }

  // The entries' pieces (LocalHost::ReadShardPieces, the node's kept files), each in its slot of
  // the reply's payload, or pushed over RDMA in one transfer when the request carries a token.
  // Checked whole (drives, lengths) before any piece is read. A failed push is resent over TCP by
  // the caller with the same handles: the host settled them already (a kept file stays kept, a
  // released one is opened again by path).
  Result<peer::ShardReadResults> ShardReadGroup(storage::LocalHost& h,
                                                const peer::ShardReadBatch& in) {
    std::vector<bool> seen(h.size(), false);
    std::vector<storage::ShardPieceRead> reads;
    reads.reserve(in.entries.size());
    uint64_t total = 0;
    for (const auto& e : in.entries) {
      auto i = OwnDrive(h, e.disk, &seen);
      if (!i.ok()) return i.error();
      if (e.len > kMaxRpcBody) return MakeError(ErrorCode::kInvalidArgument, "bad len");
      total += e.len;
      reads.push_back({*i, e.path, e.offset, e.len, nullptr, 0, e.handle, e.keep});
    }
    if (total > kMaxRpcBody) return MakeError(ErrorCode::kInvalidArgument, "bad len");
    auto piece = RdmaPieceOf(req, internode);
    if (!piece.ok()) return piece.error();
    if (piece->has_value() && (*piece)->length != total)
      return MakeError(ErrorCode::kInvalidRDMAToken, "RDMA piece length differs from the pieces'");
    peer::ShardReadResults out;
    out.payload.resize(static_cast<size_t>(total));
    size_t at = 0;
    for (auto& r : reads) {
      r.buf = out.payload.data() + at;
      at += static_cast<size_t>(r.len);
    }
    out.results = h.ReadShardPieces(reads);
    for (size_t j = 0; j < reads.size(); ++j)  // a failed entry's slot as the caller sees it
      if (!out.results[j].ok()) std::memset(reads[j].buf, 0, static_cast<size_t>(reads[j].len));
    const std::string caller = CallerOf(req);
    if (piece->has_value()) {
      auto st = internode->Push(caller, (*piece)->token, req.remote_ip, out.payload.data(),
                                out.payload.size());
      if (!st.ok()) {
        spdlog::debug("shardreadgroup for {}: {}", caller, st.error().message);
        return AsRdmaFailure(st.error());
      }
      out.payload.clear();
      return out;
    }
    if (internode && total > 0) internode->RecordShard(caller, admin::Transport::kTcp, total, 0);
    return out;
  }

  Result<peer::ShardBytes> ShardRead(storage::LocalDrive& d, storage::LocalHost& h,
                                     const peer::ShardReadArgs& in) {
    storage::OpenShards* open = &h.open_shards();
    if (in.len > kMaxRpcBody) return MakeError(ErrorCode::kInvalidArgument, "bad len");
    auto piece = RdmaPieceOf(req, internode);
    if (!piece.ok()) return piece.error();
    if (piece->has_value() && (*piece)->length != in.len)
      return MakeError(ErrorCode::kInvalidRDMAToken, "RDMA piece length differs from len");
    // The file an earlier piece of this read kept open (the same version, even if an overwrite
    // retired its data directory since), else the file at the path now.
    std::shared_ptr<storage::ShardFile> file;
    uint64_t handle = 0;
    if (in.handle != 0 && (file = open->Find(in.handle, disk, in.path))) handle = in.handle;
    if (!file) {
      auto f = d.OpenShard(in.path, 0);
      if (!f.ok()) return f.error();
      file = std::move(f).value();
    }
    peer::ShardBytes out;
    // Once the piece went out (a failed push is resent over TCP, which must find the handle).
    auto settle = [&] {
      if (in.keep && handle == 0) {
        handle = open->Keep(std::move(file), disk, in.path);
      } else if (!in.keep && handle != 0) {
        open->Release(handle, disk, in.path);  // the read's last piece
        handle = 0;
      }
      out.handle = handle;
    };
    const std::string caller = CallerOf(req);
    if (piece->has_value()) {
      // The file is read straight into the registered staging slots, slot by slot.
      std::optional<Error> read_error;
      auto pushed = internode->PushFrom(caller, (*piece)->token, req.remote_ip, in.len,
                                        [&](char* dst, size_t at, size_t n) -> Result<size_t> {
                                          auto got = file->ReadAt(in.offset + at, dst, n);
                                          if (!got.ok()) read_error = got.error();
                                          return got;
                                        });
      if (read_error) return *read_error;
      if (!pushed.ok()) {
        spdlog::debug("shardread for {}: {}", caller, pushed.error().message);
        return AsRdmaFailure(pushed.error());
      }
      out.rdma_bytes = *pushed;
      settle();
      return out;
    }
    out.payload.resize(in.len);
    auto n = file->ReadAt(in.offset, out.payload.data(), out.payload.size());
    if (!n.ok()) return n.error();
    out.payload.resize(*n);
    if (internode && !out.payload.empty())
      internode->RecordShard(caller, admin::Transport::kTcp, out.payload.size(), 0);
    settle();
    return out;
  }
};

// Stands for `d` in a node row's expression, which must not use it.
struct NoDrive {};

// One call of the table: decodes the request, runs the row's expression on the drive the request
// names (a drive row) or on the node's LocalHost (a node row), sends the response.
template <PeerCall C>
void Serve(storage::LocalHost& host, CallServer& srv, std::string body, s3::ResponseSink& sink) {
  using Call = CallOf<C>;
  using Rsp = typename Call::Rsp;
  auto decoded = DecodeRequest<typename Call::Req>(std::move(body));
  if (!decoded.ok()) return SendError(sink, decoded.error(), Call::name);
  if constexpr (Call::addr == PeerAddr::kDrive) {
    auto i = host.Find(srv.disk);
    if (!i)
      return SendError(sink,
                       MakeError(ErrorCode::kInvalidArgument,
                                 "drive '" + srv.disk + "' is not a drive of this node"),
                       Call::name);
    SendReply<Rsp>(sink, AsResult<Rsp>(Call::Serve(host.local(*i), host, srv, *decoded)),
                   Call::name);
  } else {
    NoDrive none;
    SendReply<Rsp>(sink, AsResult<Rsp>(Call::Serve(none, host, srv, *decoded)), Call::name);
  }
}

using CallHandler = void (*)(storage::LocalHost& host, CallServer& srv, std::string body,
                             s3::ResponseSink& sink);

const std::map<std::string_view, CallHandler>& Handlers() {
  static const std::map<std::string_view, CallHandler> kHandlers = {
#define RDMASTOR_PEER_CALL_HANDLER(id, wire, addr, wait, Req, Rsp, expr) \
  {wire, &Serve<PeerCall::k##id>},
      RDMASTOR_PEER_STORAGE_CALLS(RDMASTOR_PEER_CALL_HANDLER)
#undef RDMASTOR_PEER_CALL_HANDLER
  };
  return kHandlers;
}

}  // namespace

void PeerServer::HandleStorage(const std::string& call, const s3::HttpRequest& req,
                               std::string body, s3::ResponseSink& sink) {
  auto h = Handlers().find(call);
  if (h == Handlers().end())
    return SendError(sink, MakeError(ErrorCode::kInvalidRequest, "unknown storage call " + call),
                     call);
  const std::string disk = QueryValue(req, "disk");
  CallServer srv{req, internode_.get(), disk};
  h->second(*host_, srv, std::move(body), sink);
}

void NodeHandler::Handle(const s3::HttpRequest& req, s3::BodySource& body, s3::ResponseSink& sink) {
  if (IsPeerPath(req.raw_path)) return peer_->Handle(req, body, sink);
  s3::RequestHandler* s3 = s3_.load();
  if (!s3) {
    return SendError(sink,
                     MakeError(ErrorCode::kServiceUnavailable,
                               "the server is starting: waiting for the other nodes"),
                     req.raw_path);
  }
  s3->Handle(req, body, sink);
}

void NodeHandler::RenderFrontEndError(ErrorCode code, s3::HttpResponseHead& head,
                                      std::string& body) {
  if (s3::RequestHandler* s3 = s3_.load()) return s3->RenderFrontEndError(code, head, body);
  const auto& info = GetErrorInfo(code);
  head.status = info.http_status;
  head.Set("Content-Type", "application/xml");
  body = s3::ErrorXml(info.code, info.message, "", "");
  head.content_length = body.size();
}

}  // namespace rdmastor::cluster
