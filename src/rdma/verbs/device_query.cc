// RDMA build only: the device, port and GID details `rdmastor rdma check` judges, as
// libibverbs returns them (check.cc turns them into DeviceInfo).
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <net/if.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "rdma/check.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

// check.cc turns these numbers into words without the verbs headers (both builds).
static_assert(IBV_LINK_LAYER_UNSPECIFIED == 0 && IBV_LINK_LAYER_INFINIBAND == 1 &&
              IBV_LINK_LAYER_ETHERNET == 2);
static_assert(IBV_MTU_256 == 1 && IBV_MTU_4096 == 5);
static_assert(IBV_GID_TYPE_IB == 0 && IBV_GID_TYPE_ROCE_V1 == 1 && IBV_GID_TYPE_ROCE_V2 == 2);
static_assert(IBV_PORT_ACTIVE == static_cast<int>(PortState::kActive));

namespace {

std::string GidText(const ibv_gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, buf, sizeof(buf));
  return buf;
}

}  // namespace

Result<std::string> QueryVerbsJson() {
  int count = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, decltype(&ibv_free_device_list)> list(ibv_get_device_list(&count),
                                                                     &ibv_free_device_list);
  if (!list) {
    return MakeError(ErrorCode::kRDMANotSupported,
                     std::string("ibv_get_device_list: ") + std::strerror(errno ? errno : ENODEV));
  }
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    nlohmann::json dev{{"name", ibv_get_device_name(list.get()[i])},
                       {"dc_capable", static_cast<bool>(mlx5dv_is_supported(list.get()[i]))},
                       {"ports", nlohmann::json::array()}};
    std::unique_ptr<ibv_context, decltype(&ibv_close_device)> ctx(ibv_open_device(list.get()[i]),
                                                                  &ibv_close_device);
    ibv_device_attr attr{};
    if (!ctx || ibv_query_device(ctx.get(), &attr) != 0) {
      devices.push_back(std::move(dev));  // listed but unusable: no ports shown
      continue;
    }
    // ibv_query_gid_table fills entries of every port: it needs room for the whole device's
    // table (the sum of the ports' gid_tbl_len), or it fails with EINVAL.
    std::vector<ibv_port_attr> pattrs(attr.phys_port_cnt + 1u);
    std::vector<int> queried(attr.phys_port_cnt + 1u, 0), table_lens;
    for (int p = 1; p <= attr.phys_port_cnt; ++p) {
      queried[p] = ibv_query_port(ctx.get(), static_cast<uint8_t>(p), &pattrs[p]) == 0;
      table_lens.push_back(queried[p] ? pattrs[p].gid_tbl_len : 0);
    }
    std::vector<ibv_gid_entry> gids(GidTableEntries(table_lens));
    ssize_t n = ibv_query_gid_table(ctx.get(), gids.data(), gids.size(), 0);
    for (int p = 1; p <= attr.phys_port_cnt; ++p) {
      if (!queried[p]) continue;
      const ibv_port_attr& pa = pattrs[p];
      nlohmann::json port{{"port", p},
                          {"state", static_cast<int>(pa.state)},
                          {"link_layer", static_cast<int>(pa.link_layer)},
                          {"active_mtu", static_cast<int>(pa.active_mtu)},
                          {"max_mtu", static_cast<int>(pa.max_mtu)},
                          {"active_speed", static_cast<int>(pa.active_speed)},
                          {"active_width", static_cast<int>(pa.active_width)},
                          {"gids", nlohmann::json::array()}};
      for (ssize_t g = 0; g < n; ++g) {
        const auto& e = gids[static_cast<size_t>(g)];
        if (e.port_num != static_cast<uint32_t>(p)) continue;
        char ifname[IF_NAMESIZE] = {};
        port["gids"].push_back(
            {{"index", e.gid_index},
             {"gid", GidText(e.gid)},
             {"type", e.gid_type},
             {"netdev", e.ndev_ifindex && if_indextoname(e.ndev_ifindex, ifname) ? ifname : ""}});
      }
      dev["ports"].push_back(std::move(port));
    }
    dev["max_mr"] = attr.max_mr;
    dev["max_qp"] = attr.max_qp;
    devices.push_back(std::move(dev));
  }
  return nlohmann::json{{"devices", std::move(devices)}}.dump(1) + "\n";
}

}  // namespace rdmastor::rdma
