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

 private:
  RailsFabric& fabric_;
  size_t rail_;
  std::unique_ptr<Endpoint> ep_;
};

// Several devices (MINIO_RDMA_DEVICE lists them, or every usable one): each request goes out of
// the rail SelectRail picks for its token and the interface its HTTP request arrived on.
// Memory is registered on every rail.
class RailsFabric final : public Fabric {
 public:
  RailsFabric(std::vector<std::unique_ptr<Fabric>> fabrics, std::vector<Rail> rails)
      : fabrics_(std::move(fabrics)), rails_(std::move(rails)) {}
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
    size_t i = SelectRail(rails_, remote.has_gid, remote.gid, origin.local_ip);
    if (auto why = fabrics_[i]->Unavailable(); !why.empty())
      return MakeError(ErrorCode::kRDMANotSupported, rails_[i].device + ": " + why);
    auto ep = fabrics_[i]->Connect(remote, origin);
    if (!ep.ok() || i == 0) return ep;  // rail 0's lkeys are the regions' own
    return std::unique_ptr<Endpoint>(new RailEndpoint(*this, i, std::move(ep).value()));
  }

  // Unavailable only when every rail is: a request whose rail is down gets 501 from Connect.
  std::string Unavailable() const override {
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

}  // namespace rdmastor::rdma
