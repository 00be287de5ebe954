#include "rdma/rails.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace rdmastor::rdma {
namespace {

class RailsFabric;

// A registration on every rail; addressed (lkey/rkey) as rail 0's. Other rails' endpoints
// translate the lkey (RailsFabric::Translate).
class RailsMr final : public MemoryRegion {
 public:
  RailsMr(RailsFabric& f, std::vector<std::unique_ptr<MemoryRegion>> regs)
      : MemoryRegion(regs[0]->addr(), regs[0]->length(), regs[0]->lkey(), regs[0]->rkey()),
        fabric_(f),
        regs_(std::move(regs)) {}
  ~RailsMr() override;

 private:
  RailsFabric& fabric_;
  std::vector<std::unique_ptr<MemoryRegion>> regs_;
};

class RailEndpoint final : public Endpoint {
 public:
  RailEndpoint(RailsFabric& f, size_t rail, std::unique_ptr<Endpoint> ep)
      : fabric_(f), rail_(rail), ep_(std::move(ep)) {}
  Status PostSend(const WorkRequest& wr) override;
  Result<int> PollCompletions(Completion* out, int max, std::chrono::milliseconds wait) override {
    return ep_->PollCompletions(out, max, wait);
  }
  bool Alive() override { return ep_->Alive(); }
  std::string error_detail() const override { return ep_->error_detail(); }

 private:
  RailsFabric& fabric_;
  size_t rail_;
  std::unique_ptr<Endpoint> ep_;
};

// Several devices (MINIO_RDMA_DEVICE lists them, or every usable one): each request goes out of
// the rail SelectRail picks for its token and the interface its HTTP request arrived on.
// Memory is registered on every rail.
//
// DC and RC on one NIC (MakeDcRcFabric) is the same shape with two rails of different kinds:
// rail 0 the DC fabric (every Connect), rail 1 the RC fabric (the RC listener and the
// connections clients open): the staging buffers are registered in both protection domains and
// an RC connection translates the lkey.
class RailsFabric final : public Fabric {
 public:
  RailsFabric(std::vector<std::unique_ptr<Fabric>> fabrics, std::vector<Rail> rails,
              bool dc_rc = false)
      : fabrics_(std::move(fabrics)), rails_(std::move(rails)), dc_rc_(dc_rc) {}
  std::string_view name() const override { return fabrics_[0]->name(); }

  Result<std::unique_ptr<MemoryRegion>> RegisterMemory(void* addr, size_t length,
                                                       unsigned access) override {
    std::vector<std::unique_ptr<MemoryRegion>> regs;
    std::vector<uint32_t> lkeys;
    for (auto& f : fabrics_) {
      auto mr = f->RegisterMemory(addr, length, access);
      if (!mr.ok()) return mr.error();
      lkeys.push_back((*mr)->lkey());
      regs.push_back(std::move(mr).value());
    }
    std::lock_guard lock(mu_);
    lkeys_[lkeys[0]] = std::move(lkeys);
    return std::unique_ptr<MemoryRegion>(new RailsMr(*this, std::move(regs)));
  }

  Result<std::unique_ptr<Endpoint>> Connect(const RemoteAddress& remote,
                                            const RequestOrigin& origin) override {
    size_t i = dc_rc_ ? 0 : SelectRail(rails_, remote.has_gid, remote.gid, origin.local_ip);
    if (auto why = fabrics_[i]->Unavailable(); !why.empty())
      return MakeError(ErrorCode::kRDMANotSupported, rails_[i].device + ": " + why);
    auto ep = fabrics_[i]->Connect(remote, origin);
    if (!ep.ok() || i == 0) return ep;  // rail 0's lkeys are the regions' own
    return std::unique_ptr<Endpoint>(new RailEndpoint(*this, i, std::move(ep).value()));
  }

  // RC connections on the RC rail, their endpoints translating lkeys (DC and RC); multi-rail
  // listens on none (kRDMANotSupported).
  Result<std::unique_ptr<RcListener>> ListenRc(const std::string& bind_ip, uint16_t port,
                                               RcAdmission admission) override {
    if (!dc_rc_) return Fabric::ListenRc(bind_ip, port, std::move(admission));
    auto admit = std::move(admission.admit);
    admission.admit = [this, admit = std::move(admit)](const RcPeer& peer,
                                                        std::unique_ptr<Endpoint> ep,
                                                        uint64_t proposed) {
      return admit(peer, std::unique_ptr<Endpoint>(new RailEndpoint(*this, 1, std::move(ep))),
                   proposed);
    };
    return fabrics_[1]->ListenRc(bind_ip, port, std::move(admission));
  }

  // Unavailable only when every rail is: a request whose rail is down gets 501 from Connect.
  // DC and RC share one device: unavailable when either says so.
  std::string Unavailable() const override {
    if (dc_rc_) {
      for (const auto& f : fabrics_)
        if (auto w = f->Unavailable(); !w.empty()) return w;
      return "";
    }
    std::string why;
    for (size_t i = 0; i < fabrics_.size(); ++i) {
      auto w = fabrics_[i]->Unavailable();
      if (w.empty()) return "";
      why += (why.empty() ? "" : "; ") + rails_[i].device + ": " + w;
    }
    return why;
  }
  bool NeedsReopen() const override {
    return std::any_of(fabrics_.begin(), fabrics_.end(),
                       [](const auto& f) { return f->NeedsReopen(); });
  }

  uint32_t Translate(uint32_t lkey0, size_t rail) {
    std::lock_guard lock(mu_);
    auto it = lkeys_.find(lkey0);
    return it == lkeys_.end() || rail >= it->second.size() ? lkey0 : it->second[rail];
  }
  void Forget(uint32_t lkey0) {
    std::lock_guard lock(mu_);
    lkeys_.erase(lkey0);
  }

 private:
  std::vector<std::unique_ptr<Fabric>> fabrics_;
  std::vector<Rail> rails_;
  const bool dc_rc_;
  std::mutex mu_;
  std::map<uint32_t, std::vector<uint32_t>> lkeys_;  // rail 0's lkey -> every rail's
};

RailsMr::~RailsMr() { fabric_.Forget(lkey()); }

Status RailEndpoint::PostSend(const WorkRequest& wr) {
  WorkRequest w = wr;
  w.lkey = fabric_.Translate(wr.lkey, rail_);
  return ep_->PostSend(w);
}

}  // namespace

std::unique_ptr<Fabric> MakeRailsFabric(std::vector<std::unique_ptr<Fabric>> fabrics,
                                        std::vector<Rail> rails) {
  return std::unique_ptr<Fabric>(new RailsFabric(std::move(fabrics), std::move(rails)));
}

std::unique_ptr<Fabric> MakeDcRcFabric(std::unique_ptr<Fabric> dc, std::unique_ptr<Fabric> rc) {
  std::vector<std::unique_ptr<Fabric>> fabrics;
  fabrics.push_back(std::move(dc));
  fabrics.push_back(std::move(rc));
  return std::unique_ptr<Fabric>(
      new RailsFabric(std::move(fabrics), std::vector<Rail>(2), /*dc_rc=*/true));
}

}  // namespace rdmastor::rdma
