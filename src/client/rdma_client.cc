#include "rdmastor/rdma_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <pugixml.hpp>
#include <thread>
#include <sstream>

#include "client/xml_body.h"
#include "common/uri.h"
#include "rdma/mapping.h"
#include "rdma/memory.h"
#include "rdma/rc.h"
#include "rdma/rc_sessions.h"
#include "rdma/settings.h"
#include "rdma/soft/soft_fabric.h"
#include "rdma/token.h"

namespace rdmastor::client {

namespace {

constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

using AddrInfo = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// The first IPv4 address of host:port for `socktype`; `who` names the caller in the error.
Result<AddrInfo> ResolveIpv4(const std::string& host, uint16_t port, int socktype,
                             std::string_view who) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = socktype;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string(who) + ": cannot resolve '" + host + "' to an IPv4 address");
  return AddrInfo(res, &freeaddrinfo);
}

// The local IPv4 address used to reach host:port (a connected UDP socket sends nothing).
Result<std::string> LocalAddressToward(const std::string& host, uint16_t port) {
  auto res = ResolveIpv4(host, port, SOCK_DGRAM, "soft fabric");
  if (!res.ok()) return res.error();
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  bool ok = fd >= 0 && connect(fd, (*res)->ai_addr, (*res)->ai_addrlen) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) close(fd);
  if (!ok)
    return MakeError(ErrorCode::kInternalError, "soft fabric: no local route to '" + host + "'");
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return std::string(text);
}

// The client's own address for its target: soft_bind_ip, else the one routed toward the server.
Result<std::string> SourceIp(const RdmaClientConfig& config) {
  if (!config.soft_bind_ip.empty()) return config.soft_bind_ip;
  return LocalAddressToward(config.s3.host, config.s3.port);
}

// The IPv4 address (host order) of `host`, for the RC connection to the server.
Result<uint32_t> ServerIpv4(const std::string& host, uint16_t port) {
  auto res = ResolveIpv4(host, port, SOCK_STREAM, "RC");
  if (!res.ok()) return res.error();
  return ntohl(reinterpret_cast<const sockaddr_in*>((*res)->ai_addr)->sin_addr.s_addr);
}

// A shared file mapping must not be pinned for remote write (rdma/mapping.h). Checked when memory
// is registered, not on every transfer: that costs a walk of the process's mappings.
Status CheckPinnable(const void* p, size_t len, unsigned access) {
  if (access & rdma::kRemoteWrite)
    if (auto why = rdma::RemoteWriteRefusal(p, len); !why.empty())
      return MakeError(ErrorCode::kInvalidArgument, why);
  return {};
}

}  // namespace

Result<VerbsClientSettings> VerbsClientSettingsFromEnv(
    const std::map<std::string, std::string>& env) {
  auto rs = rdma::ParseRdmaSettings(env);
  if (!rs.ok()) return rs.error();
  const rdma::VerbsSettings& v = rs->verbs;
  VerbsClientSettings out;
  out.device = v.device;
  out.port = v.port;
  out.gid_index = v.gid_index;
  out.dc_key = v.dc_key;
  out.traffic_class = v.traffic_class;
  out.service_level = v.service_level;
  out.pkey_index = v.pkey_index;
  return out;
}

std::string_view TransportName(Transport t) { return t == Transport::kRdma ? "rdma" : "http"; }

struct RdmaS3Client::Impl {
  RdmaClientConfig config;
  S3Client s3;
  std::unique_ptr<rdma::Target> target;
  std::unique_ptr<rdma::MrCache> mrs;
  // Registrations kept until Forget(), both directions: host memory of RegisterMemory, and device
  // (GPU) memory registered through dma-buf (by device address; never touched by the CPU).
  struct Kept {
    std::unique_ptr<rdma::MemoryRegion> mr;
    bool device;
  };
  mutable std::mutex kept_mu;  // Forget() may come from another thread
  std::vector<Kept> kept;
  // Device memory as RegisterDeviceMemory described it, until Forget(): a failed call drops the
  // registration (its rkey dies) but not this, so the range is still known to be device memory —
  // registered again from the dma-buf on its next call, never registered as host memory and
  // never given an HTTP fallback (either would touch a device pointer from the CPU).
  struct DeviceMemory {
    const char* ptr;
    size_t len;
    int dmabuf_fd;
    uint64_t dmabuf_offset;
  };
  std::vector<DeviceMemory> device_memory;

  uint32_t rc_server_ip = 0;  // kRc: the server's IPv4 (host order)

  // Verbs RC: the target is dropped, with every registration made on it, when its device goes
  // away (rdma link delete, a driver unbind: the kernel finishes removing it only once they are
  // freed), and started again on a later call once the device is back. A watcher notices an
  // idle client's loss; a call in progress holds call_mu, and the watcher leaves it to the call.
  bool rc_verbs = false;
  rdma::RcSettings rc_settings;
  std::mutex call_mu;  // one call at a time against target and mrs (the watcher takes it too)
  std::string target_error;  // why there is no target now
  std::chrono::steady_clock::time_point next_open{};
  std::mutex watch_mu;
  std::condition_variable watch_cv;
  bool stopping = false;
  std::thread watcher;

  explicit Impl(RdmaClientConfig c) : config(std::move(c)), s3(config.s3) {}
  ~Impl() {
    {
      std::lock_guard lock(watch_mu);
      stopping = true;
    }
    watch_cv.notify_all();
    if (watcher.joinable()) watcher.join();
    mrs.reset();  // deregister before the target goes away
    kept.clear();
  }

  void NewMrCache() {
    mrs = std::make_unique<rdma::MrCache>(
        [this](void* p, size_t len, unsigned access) -> Result<std::unique_ptr<rdma::MemoryRegion>> {
          RS_RETURN_IF_ERROR(CheckPinnable(p, len, access));
          auto mr = target->RegisterMemory(p, len, access);
          if (!mr.ok() && rc_verbs) return rdma::ClientTransportError("register memory", mr.error());
          return mr;
        },
        config.mr_cache_entries);
  }

  // Frees the target and everything registered with it (call_mu held).
  void DropTarget(const std::string& why) {
    NewMrCache();
    {
      std::lock_guard lock(kept_mu);
      kept.clear();  // host memory is registered again on use, device memory from its dma-buf
    }
    target.reset();
    target_error = why;
    next_open = {};
  }

  // The target a call uses (call_mu held): dropped when its device went away, started again
  // (at most once a second) while there is none.
  Status EnsureTarget() {
    if (!rc_verbs) return {};
    if (target)
      if (auto why = target->Lost(); !why.empty()) DropTarget(why);
    if (target) return {};
    auto now = std::chrono::steady_clock::now();
    if (now >= next_open) {
      next_open = now + std::chrono::seconds(1);
      rdma::RcSettings rs = rc_settings;
      rs.require_source_device = true;  // the device of this client's address, not another one
      auto t = rdma::StartVerbsRcClient(rs);
      if (t.ok()) {
        target = std::move(t).value();
        target_error.clear();
        return {};
      }
      target_error = t.error().message;
    }
    return rdma::ClientTransportError(
        "open device", MakeError(ErrorCode::kRDMANotSupported,
                                 "verbs RC client: no RDMA device to use: " + target_error +
                                     " (tried again at most once a second)"));
  }

  void Watch() {
    std::unique_lock lock(watch_mu);
    while (!watch_cv.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping; })) {
      lock.unlock();
      {
        std::unique_lock call(call_mu, std::try_to_lock);
        if (call.owns_lock() && target)
          if (auto why = target->Lost(); !why.empty()) DropTarget(why);
      }
      lock.lock();
    }
  }

  // The kept registration covering [p, p+len): its rkey and whether it is device memory.
  std::optional<std::pair<uint32_t, bool>> KeptRegion(const void* p, size_t len) const {
    std::lock_guard lock(kept_mu);
    for (const auto& k : kept)
      if (k.mr->Contains(p, std::max<size_t>(len, 1))) return std::pair{k.mr->rkey(), k.device};
    return std::nullopt;
  }

  // The device memory [p, p+len) overlaps: nullopt for host memory; a range that overlaps device
  // memory without lying inside one registration of it is an error.
  Result<std::optional<DeviceMemory>> DeviceMemoryOf(const void* p, size_t len) const {
    const char* lo = static_cast<const char*>(p);
    const char* hi = lo + std::max<size_t>(len, 1);
    std::lock_guard lock(kept_mu);
    for (const auto& d : device_memory) {
      if (!(d.ptr < hi && lo < d.ptr + d.len)) continue;
      if (d.ptr <= lo && hi <= d.ptr + d.len) return std::optional<DeviceMemory>(d);
      return MakeError(ErrorCode::kInvalidArgument,
                       "the buffer overlaps device memory registered with RegisterDeviceMemory but "
                       "does not lie inside it");
    }
    return std::optional<DeviceMemory>();
  }

  // A 501 is retried over HTTP only for host memory the caller allowed it for.
  Status FallbackAllowed(const void* p, size_t len, const std::string& what) const {
    auto device = DeviceMemoryOf(p, len);
    if (device.ok() && !*device) return {};
    return MakeError(ErrorCode::kRDMANotSupported,
                     what +
                         ": the server cannot serve this over RDMA, and device memory cannot "
                         "take an HTTP fallback");
  }

  Result<rdma::RdmaToken> Token(const void* p, size_t len, bool remote_write) {
    uint32_t rkey = 0;
    if (auto region = KeptRegion(p, len)) {
      rkey = region->first;
    } else if (auto device = DeviceMemoryOf(p, len); !device.ok() || *device) {
      if (!device.ok()) return device.error();
      // Device memory whose registration a failed call dropped: registered again from its
      // dma-buf (which the caller keeps open until Forget), as a host buffer would be.
      auto mr = KeepDeviceRegistration(**device);
      if (!mr.ok()) return mr.error();
      rkey = *mr;
    } else {
      // A zero-length buffer still needs a registration the server can name.
      auto mr = mrs->Get(const_cast<void*>(p), std::max<size_t>(len, 1),
                         remote_write ? rdma::kRemoteWrite : rdma::kRemoteRead);
      if (!mr.ok()) return mr.error();
      rkey = (*mr)->rkey();
    }
    if (len > UINT32_MAX)
      return MakeError(ErrorCode::kInvalidArgument,
                       "one token describes less than 4 GiB: use ranges or parts");
    return target->address().TokenFor(reinterpret_cast<uint64_t>(p), static_cast<uint32_t>(len),
                                      rkey);
  }

  // Registers device memory through its dma-buf and keeps the registration; its rkey.
  Result<uint32_t> KeepDeviceRegistration(const DeviceMemory& d) {
    auto mr = target->RegisterDmabuf(d.dmabuf_fd, d.dmabuf_offset, d.len,
                                     reinterpret_cast<uint64_t>(d.ptr),
                                     rdma::kRemoteWrite | rdma::kRemoteRead);
    if (!mr.ok()) return mr.error();
    const uint32_t rkey = (*mr)->rkey();
    std::lock_guard lock(kept_mu);
    kept.push_back({std::move(mr).value(), /*device=*/true});
    return rkey;
  }

  // Drops every registration overlapping [p, p+len), cached and kept (host and device): after
  // it no rkey the library handed out for that memory is valid. `forget_device`: the caller is
  // done with the memory (Forget), so device memory there is no longer known either.
  void Release(const void* p, size_t len, bool forget_device = false) {
    mrs->Invalidate(const_cast<void*>(p), std::max<size_t>(len, 1));
    const char* lo = static_cast<const char*>(p);
    const char* hi = lo + std::max<size_t>(len, 1);
    std::lock_guard lock(kept_mu);
    std::erase_if(kept, [&](const Kept& k) {
      return k.mr->addr() < hi && lo < k.mr->addr() + k.mr->length();
    });
    if (forget_device)
      std::erase_if(device_memory,
                    [&](const DeviceMemory& d) { return d.ptr < hi && lo < d.ptr + d.len; });
  }

  // A call that did not end in success (an error reply, a 501 even when retried over HTTP, a
  // timeout, a reply the library does not trust) may leave the server holding the token: after
  // an HTTP timeout its transfer can still be running. Deregistering the buffer first kills the
  // rkey, so a late RDMA WRITE/READ fails on the NIC instead of touching memory the caller has
  // been told is free again.
  template <class T>
  Result<T> ReleaseUnlessOk(Result<T> r, const void* p, size_t len) {
    if (!r.ok()) Release(p, len);
    return r;
  }

  // Sends a payload-less signed request carrying the token; returns the raw response. On RC the
  // request names the client's connection; when the server says that connection is no longer
  // open (closed idle, or the server restarted), it is opened again and the request sent once
  // more.
  Result<HttpResponse> Send(S3Request req, rdma::RdmaToken token) {
    req.headers.emplace_back("x-amz-rdma-agent", "cuobj");
    if (config.transport != RdmaTransport::kRc) {
      req.headers.emplace_back("x-amz-rdma-token", rdma::FormatToken(token));
      return s3.Execute(req, ResponseTarget::String());
    }
    for (int attempt = 0;; ++attempt) {
      auto conn = target->RcConnection(rc_server_ip, config.rc_port, /*fresh=*/attempt > 0);
      if (!conn.ok()) return conn.error();
      // The token describes the buffer as reached through this connection (its QP and GID).
      token.lid = conn->self.lid;
      token.qpn = conn->self.qpn;
      token.has_gid = conn->self.has_gid;
      token.gid = conn->self.gid;
      S3Request named = req;
      named.headers.emplace_back("x-amz-rdma-token", rdma::FormatToken(token));
      named.headers.emplace_back(std::string(rdma::kRdmaConnectionHeader),
                                 rdma::FormatRcConnectionId(conn->id));
      auto resp = s3.Execute(named, ResponseTarget::String());
      if (attempt > 0 || !resp.ok() || resp->status != 501 ||
          resp->body.find("connect again") == std::string::npos)
        return resp;
    }
  }

  static uint64_t BytesTransferred(const HttpResponse& r) {
    const auto* v = r.FindHeader("x-amz-rdma-bytes-transferred");
    return v ? std::strtoull(v->c_str(), nullptr, 10) : 0;
  }

  Result<TransferResult> PutLike(S3Request req, const char* data, size_t len,
                                 const std::string& what) {
    auto token = Token(data, len, /*remote_write=*/false);
    if (!token.ok()) return token.error();
    req.payload_sha256 = std::string(kUnsignedPayload);
    S3Request http_req = req;  // for a fallback
    auto resp = Send(req, *token);
    if (!resp.ok()) return resp.error();
    if (resp->status == 501 && config.allow_http_fallback) {
      Status fallback = FallbackAllowed(data, len, what);
      Release(data, len);
      RS_RETURN_IF_ERROR(fallback);
      http_req.body = std::string_view(data, len);
      auto again = s3.Execute(http_req, ResponseTarget::String());
      if (!again.ok()) return again.error();
      if (!again->success()) return S3ErrorFromResponse(*again, what);
      TransferResult out{Transport::kHttp, again->status, len, {}, {}, again->headers};
      if (const auto* e = again->FindHeader("etag")) out.etag = *e;
      return out;
    }
    if (!resp->success()) return S3ErrorFromResponse(*resp, what);
    TransferResult out{Transport::kRdma, resp->status, len, {}, {}, resp->headers};
    if (const auto* e = resp->FindHeader("etag")) out.etag = *e;
    // AIStor answers a plain 200 + ETag; ours also says how many bytes it read.
    if (resp->FindHeader("x-amz-rdma-bytes-transferred") && BytesTransferred(*resp) != len)
      return MakeError(ErrorCode::kInternalError, what + ": server read " +
                                                      std::to_string(BytesTransferred(*resp)) +
                                                      " of " + std::to_string(len) + " bytes");
    return out;
  }
};

RdmaS3Client::RdmaS3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RdmaS3Client::~RdmaS3Client() = default;  // Impl deregisters before the target goes

Result<std::unique_ptr<RdmaS3Client>> RdmaS3Client::Create(RdmaClientConfig config) {
  auto impl = std::make_unique<Impl>(std::move(config));
  if (impl->config.fabric == ClientFabric::kVerbs) {
    rdma::VerbsSettings vs;
    vs.device = impl->config.verbs.device;
    vs.port = impl->config.verbs.port;
    vs.gid_index = impl->config.verbs.gid_index;
    vs.dc_key = impl->config.verbs.dc_key;
    vs.traffic_class = impl->config.verbs.traffic_class;
    vs.service_level = impl->config.verbs.service_level;
    vs.pkey_index = impl->config.verbs.pkey_index;
    // DC where the device has it (a ConnectX client keeps DC unless asked for RC); RC where it
    // has none (Broadcom, Intel, AMD, Soft-RoCE) or when asked.
    Result<std::unique_ptr<rdma::Target>> target =
        MakeError(ErrorCode::kRDMANotSupported, "RC asked for");
    if (impl->config.transport == RdmaTransport::kDefault) target = rdma::StartVerbsDcTarget(vs);
    if (!target.ok()) {
      rdma::RcSettings rs;
      rs.device = vs.device;
      rs.port = vs.port;
      rs.tos = vs.traffic_class ? vs.traffic_class : -1;
      auto source = SourceIp(impl->config);
      if (!source.ok()) return source.error();
      rs.source_ip = std::move(*source);
      auto rc = rdma::StartVerbsRcClient(rs);
      impl->rc_verbs = true;
      impl->rc_settings = rs;
      if (!rc.ok() && !impl->config.lazy_rc_device)
        return rdma::ClientTransportError(
            "open device", impl->config.transport == RdmaTransport::kRc
                               ? rc.error()
                               : MakeError(rc.error().code, "no DC (" + target.error().message +
                                                                ") and no RC: " +
                                                                rc.error().message));
      impl->config.transport = RdmaTransport::kRc;
      if (rc.ok())
        target = std::move(rc);
      else
        impl->target_error = rc.error().message;  // started on a later call (EnsureTarget)
    }
    if (target.ok()) impl->target = std::move(target).value();
  } else {
    rdma::soft::SoftTargetOptions to;
    auto source = SourceIp(impl->config);
    if (!source.ok()) return source.error();
    to.bind_ip = std::move(*source);
    auto target = rdma::soft::SoftTarget::Start(to);
    if (!target.ok()) return target.error();
    impl->target = std::move(target).value();
  }
  if (impl->config.transport == RdmaTransport::kRc) {
    auto ip = ServerIpv4(impl->config.s3.host, impl->config.s3.port);
    if (!ip.ok()) return ip.error();
    impl->rc_server_ip = *ip;
  }
  impl->NewMrCache();
  if (impl->rc_verbs) impl->watcher = std::thread([p = impl.get()] { p->Watch(); });
  return std::unique_ptr<RdmaS3Client>(new RdmaS3Client(std::move(impl)));
}

namespace {
Result<TransferResult> GetOnce(RdmaS3Client::Impl& impl, std::string_view bucket,
                               std::string_view key, char* dst, size_t capacity,
                               std::optional<ByteRange> range) {
  std::string what = "GET " + S3ObjectPath(bucket, key);
  auto token = impl.Token(dst, capacity, /*remote_write=*/true);
  if (!token.ok()) return token.error();
  S3Request req;
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  if (range) req.headers.emplace_back("range", range->HeaderValue());
  auto resp = impl.Send(req, *token);
  if (!resp.ok()) return resp.error();
  if (resp->status == 501 && impl.config.allow_http_fallback) {
    Status fallback = impl.FallbackAllowed(dst, capacity, what);
    impl.Release(dst, capacity);
    RS_RETURN_IF_ERROR(fallback);
    auto got = impl.s3.GetObjectInto(bucket, key, range, dst, capacity);
    if (!got.ok()) return got.error();
    return TransferResult{Transport::kHttp, got->status,      got->bytes,
                          got->etag,        got->object_size, got->headers};
  }
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  TransferResult out{
      Transport::kRdma, resp->status, RdmaS3Client::Impl::BytesTransferred(*resp), {}, {},
      resp->headers};
  if (const auto* e = resp->FindHeader("etag")) out.etag = *e;
  if (const auto* reply = resp->FindHeader("x-amz-rdma-reply");
      !reply || *reply != std::to_string(resp->status))
    return MakeError(ErrorCode::kInternalError,
                     what + ": the server did not confirm the RDMA transfer (x-amz-rdma-reply)");
  if (const auto* cr = resp->FindHeader("content-range")) {
    auto slash = cr->rfind('/');
    if (slash != std::string::npos)
      out.object_size = std::strtoull(cr->c_str() + slash + 1, nullptr, 10);
  } else {
    out.object_size = out.bytes;
  }
  return out;
}
}  // namespace

Result<TransferResult> RdmaS3Client::Get(std::string_view bucket, std::string_view key, char* dst,
                                         size_t capacity, std::optional<ByteRange> range) {
  std::lock_guard call(impl_->call_mu);
  RS_RETURN_IF_ERROR(impl_->EnsureTarget());
  return impl_->ReleaseUnlessOk(GetOnce(*impl_, bucket, key, dst, capacity, range), dst, capacity);
}

Result<TransferResult> RdmaS3Client::Put(std::string_view bucket, std::string_view key,
                                         const char* data, size_t len,
                                         const HeaderList& extra_headers) {
  S3Request req;
  req.method = "PUT";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.headers = extra_headers;
  std::lock_guard call(impl_->call_mu);
  RS_RETURN_IF_ERROR(impl_->EnsureTarget());
  return impl_->ReleaseUnlessOk(
      impl_->PutLike(std::move(req), data, len, "PUT " + S3ObjectPath(bucket, key)), data, len);
}

Result<TransferResult> RdmaS3Client::UploadPart(std::string_view bucket, std::string_view key,
                                                std::string_view upload_id, int part_number,
                                                const char* data, size_t len) {
  S3Request req;
  req.method = "PUT";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.raw_query =
      "partNumber=" + std::to_string(part_number) + "&uploadId=" + uri::Encode(upload_id);
  std::lock_guard call(impl_->call_mu);
  RS_RETURN_IF_ERROR(impl_->EnsureTarget());
  return impl_->ReleaseUnlessOk(impl_->PutLike(std::move(req), data, len,
                                               "UploadPart " + S3ObjectPath(bucket, key) + " #" +
                                                   std::to_string(part_number)),
                                data, len);
}

Result<std::string> RdmaS3Client::CreateMultipartUpload(std::string_view bucket,
                                                        std::string_view key) {
  S3Request req;
  req.method = "POST";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.raw_query = "uploads=";
  auto resp = impl_->s3.Execute(req, ResponseTarget::String());
  if (!resp.ok()) return resp.error();
  const std::string what = "CreateMultipartUpload " + S3ObjectPath(bucket, key);
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  pugi::xml_document doc;
  auto root = ParseXmlBody(doc, *resp, "InitiateMultipartUploadResult", what);
  if (!root.ok()) return root.error();
  std::string id = root->child_value("UploadId");
  if (id.empty())
    return MakeError(ErrorCode::kInternalError, what + ": no UploadId in the response");
  return id;
}

Result<std::string> RdmaS3Client::CompleteMultipartUpload(
    std::string_view bucket, std::string_view key, std::string_view upload_id,
    const std::vector<std::pair<int, std::string>>& parts) {
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child("CompleteMultipartUpload");
  for (const auto& [n, etag] : parts) {
    pugi::xml_node part = root.append_child("Part");
    part.append_child("PartNumber").text().set(n);
    part.append_child("ETag").text().set(etag.c_str());
  }
  std::ostringstream os;
  doc.save(os, "", pugi::format_raw | pugi::format_no_declaration);
  const std::string xml = os.str();
  S3Request req;
  req.method = "POST";
  req.bucket = std::string(bucket);
  req.key = std::string(key);
  req.raw_query = "uploadId=" + uri::Encode(upload_id);
  req.body = xml;
  auto resp = impl_->s3.Execute(req, ResponseTarget::String());
  if (!resp.ok()) return resp.error();
  std::string what = "CompleteMultipartUpload " + S3ObjectPath(bucket, key);
  if (!resp->success()) return S3ErrorFromResponse(*resp, what);
  // S3 may answer 200 with an error document.
  pugi::xml_document reply;
  auto result = ParseXmlBody(reply, *resp, "CompleteMultipartUploadResult", what);
  if (!result.ok()) {
    resp->status = 500;
    return S3ErrorFromResponse(*resp, what);
  }
  return std::string(result->child_value("ETag"));
}

Status RdmaS3Client::RegisterMemory(void* p, size_t len) {
  if (p == nullptr || len == 0)
    return MakeError(ErrorCode::kInvalidArgument, "RegisterMemory needs an address and a length");
  const unsigned access = rdma::kRemoteWrite | rdma::kRemoteRead;
  RS_RETURN_IF_ERROR(CheckPinnable(p, len, access));
  std::lock_guard call(impl_->call_mu);
  RS_RETURN_IF_ERROR(impl_->EnsureTarget());
  auto mr = impl_->target->RegisterMemory(p, len, access);
  if (!mr.ok()) return mr.error();
  std::lock_guard lock(impl_->kept_mu);
  impl_->kept.push_back({std::move(mr).value(), /*device=*/false});
  return {};
}

void RdmaS3Client::Forget(const void* p, size_t len) {
  std::lock_guard call(impl_->call_mu);
  impl_->Release(p, len, /*forget_device=*/true);
}

size_t RdmaS3Client::registrations() const {
  std::lock_guard call(impl_->call_mu);
  std::lock_guard lock(impl_->kept_mu);
  return impl_->mrs->size() + impl_->kept.size();
}

Status RdmaS3Client::RegisterDeviceMemory(void* device_ptr, size_t len, int dmabuf_fd,
                                          uint64_t dmabuf_offset) {
  if (device_ptr == nullptr || len == 0 || dmabuf_fd < 0)
    return MakeError(ErrorCode::kInvalidArgument,
                     "RegisterDeviceMemory needs a device pointer, a length and a dma-buf fd");
  const Impl::DeviceMemory d{static_cast<const char*>(device_ptr), len, dmabuf_fd, dmabuf_offset};
  std::lock_guard call(impl_->call_mu);
  RS_RETURN_IF_ERROR(impl_->EnsureTarget());
  auto rkey = impl_->KeepDeviceRegistration(d);
  if (!rkey.ok()) return rkey.error();
  std::lock_guard lock(impl_->kept_mu);
  impl_->device_memory.push_back(d);
  return {};
}

S3Client& RdmaS3Client::http() { return impl_->s3; }

Result<std::string> RdmaS3Client::TokenFor(const void* p, size_t len, bool remote_write) {
  std::lock_guard call(impl_->call_mu);
  RS_RETURN_IF_ERROR(impl_->EnsureTarget());
  auto t = impl_->Token(p, len, remote_write);
  if (!t.ok()) return t.error();
  return rdma::FormatToken(*t);
}

}  // namespace rdmastor::client
