// RDMA build only: the device, port and GID details `rdmastor rdma check` judges.
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <net/if.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "rdma/check.h"
#include "rdma/verbs_plan.h"

namespace rdmastor::rdma {

namespace {

int MtuBytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

std::string GidText(const ibv_gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, buf, sizeof(buf));
  return buf;
}

std::string GidType(uint32_t t) {
  switch (t) {
    case IBV_GID_TYPE_IB:
      return "IB";
    case IBV_GID_TYPE_ROCE_V1:
      return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
  }
  return "unknown";
}

}  // namespace

Result<std::vector<DeviceInfo>> QueryDevices() {
  int count = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, decltype(&ibv_free_device_list)> list(ibv_get_device_list(&count),
                                                                     &ibv_free_device_list);
  if (!list) {
    return MakeError(ErrorCode::kRDMANotSupported,
                     std::string("ibv_get_device_list: ") + std::strerror(errno ? errno : ENODEV));
  }
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) {
    DeviceInfo dev;
    dev.name = ibv_get_device_name(list.get()[i]);
    dev.dc_capable = mlx5dv_is_supported(list.get()[i]);
    std::unique_ptr<ibv_context, decltype(&ibv_close_device)> ctx(ibv_open_device(list.get()[i]),
                                                                  &ibv_close_device);
    ibv_device_attr attr{};
    if (!ctx || ibv_query_device(ctx.get(), &attr) != 0) {
      out.push_back(std::move(dev));  // listed but unusable: no ports shown
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
      PortInfo port;
      port.port = p;
      port.state = PortStateFromVerbs(pa.state);
      port.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
      port.active_mtu = MtuBytes(pa.active_mtu);
      port.max_mtu = MtuBytes(pa.max_mtu);
      for (ssize_t g = 0; g < n; ++g) {
        const auto& e = gids[static_cast<size_t>(g)];
        if (e.port_num != static_cast<uint32_t>(p)) continue;
        char ifname[IF_NAMESIZE] = {};
        GidInfo gi{static_cast<int>(e.gid_index), GidText(e.gid), GidType(e.gid_type),
                   e.ndev_ifindex && if_indextoname(e.ndev_ifindex, ifname) ? ifname : ""};
        port.gids.push_back(std::move(gi));
      }
      dev.ports.push_back(std::move(port));
    }
    out.push_back(std::move(dev));
  }
  return out;
}

}  // namespace rdmastor::rdma
