#include "cluster/topology.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "client/http_client.h"

namespace rdmastor::cluster {

namespace {

Error Bad(const std::string& what) { return MakeError(ErrorCode::kInvalidArgument, what); }

// Addresses `host` stands for: itself when it is an IP literal, else what the resolver says.
std::vector<std::string> Resolve(const std::string& host) {
  std::vector<std::string> out{host};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, buf, sizeof(buf));
    } else if (a->ai_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, buf,
                  sizeof(buf));
    } else {
      continue;
    }
    out.emplace_back(buf);
  }
  ::freeaddrinfo(res);
  return out;
}

}  // namespace

std::string NodeAddress(std::string_view host, uint16_t port) {
  if (host.find(':') != std::string_view::npos)
    return "[" + std::string(host) + "]:" + std::to_string(port);
  return std::string(host) + ":" + std::to_string(port);
}

std::string Node::address() const { return NodeAddress(host, port); }

bool IsDistributed(const std::vector<std::string>& drives) {
  return std::any_of(drives.begin(), drives.end(),
                     [](const std::string& d) { return d.find("://") != std::string::npos; });
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf,
                  sizeof(buf));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf,
                  sizeof(buf));
    } else {
      continue;
    }
    out.emplace_back(buf);
  }
  ::freeifaddrs(ifs);
  return out;
}

Result<Topology> BuildTopology(const std::vector<std::string>& drives,
                               const std::string& listen_host, uint16_t listen_port,
                               const std::vector<std::string>& local_addresses) {
  if (drives.empty()) return Bad("no drives given");
  Topology t;
  std::map<std::string, int> node_index;
  std::vector<std::vector<Endpoint>> by_node;
  std::set<std::pair<int, std::string>> seen;
  for (const auto& d : drives) {
    if (d.find("://") == std::string::npos) {
      return Bad("drive '" + d +
                 "' is a plain path but other drives are URLs: in distributed mode every drive "
                 "is http://HOST:PORT/PATH");
    }
    auto url = client::ParseHttpUrl(d);
    if (!url.ok()) return Bad("drive '" + d + "': " + url.error().message);
    if (url->path.empty() || url->path == "/") {
      return Bad("drive '" + d + "' names no directory (http://HOST:PORT/PATH)");
    }
    // One scheme for the deployment: every node serves either HTTP or HTTPS on its port, and
    // a peer must speak what the node serves.
    if (by_node.empty()) {  // the first drive sets the scheme
      t.tls = url->tls;
    } else if (url->tls != t.tls) {
      return Bad("drive '" + d + "' is " + (url->tls ? "https" : "http") +
                 " but earlier drives are " + (t.tls ? "https" : "http") +
                 ": every endpoint must use the same scheme (https:// when the nodes have TLS "
                 "certificates)");
    }
    Endpoint e;
    e.url = d;
    e.host = url->host;
    e.tls = url->tls;
    e.port = url->has_port ? url->port : 9000;
    e.path = std::filesystem::path(url->path).lexically_normal().string();
    while (e.path.size() > 1 && e.path.back() == '/') e.path.pop_back();
    Node probe{e.host, e.port, {}, false};
    const std::string addr = probe.address();
    auto [it, fresh] = node_index.emplace(addr, static_cast<int>(t.nodes.size()));
    if (fresh) {
      t.nodes.push_back(probe);
      by_node.emplace_back();
    }
    e.node = it->second;
    if (!seen.insert({e.node, e.path}).second) {
      return Bad("drive '" + d + "' is given more than once");
    }
    by_node[static_cast<size_t>(e.node)].push_back(std::move(e));
  }
  const size_t per_node = by_node[0].size();
  for (size_t n = 0; n < by_node.size(); ++n) {
    if (by_node[n].size() != per_node) {
      return Bad("every node needs the same number of drives: " + t.nodes[0].address() + " has " +
                 std::to_string(per_node) + ", " + t.nodes[n].address() + " has " +
                 std::to_string(by_node[n].size()));
    }
  }
  for (size_t i = 0; i < per_node; ++i) {
    for (size_t n = 0; n < by_node.size(); ++n) {
      t.nodes[n].drives.push_back(static_cast<int>(t.endpoints.size()));
      t.endpoints.push_back(by_node[n][i]);
    }
  }
  // Which node is this process?
  std::set<std::string> mine(local_addresses.begin(), local_addresses.end());
  mine.insert("localhost");
  if (!listen_host.empty()) mine.insert(listen_host);
  std::vector<int> matches;
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const Node& node = t.nodes[n];
    if (node.port != listen_port) continue;
    bool local = false;
    for (const auto& a : Resolve(node.host)) local = local || mine.count(a) > 0;
    // Listening on one address only: the node must be that address (another process on this
    // host may serve the same port on another address).
    if (local && !listen_host.empty() && listen_host != "0.0.0.0" && listen_host != "::") {
      const auto addrs = Resolve(node.host);
      local = std::find(addrs.begin(), addrs.end(), listen_host) != addrs.end();
    }
    if (local) matches.push_back(static_cast<int>(n));
  }
  const std::string me =
      (listen_host.empty() ? std::string("*") : listen_host) + ":" + std::to_string(listen_port);
  if (matches.empty()) {
    std::string nodes;
    for (const auto& n : t.nodes) nodes += (nodes.empty() ? "" : ", ") + n.address();
    return Bad("this server (--address " + me + ") is none of the nodes in the drive list (" +
               nodes + "): start it with the --address of its node");
  }
  if (matches.size() > 1) {
    return Bad("this server (--address " + me + ") matches several nodes (" +
               t.nodes[static_cast<size_t>(matches[0])].address() + ", " +
               t.nodes[static_cast<size_t>(matches[1])].address() +
               "): give --address HOST:PORT with the host of its node");
  }
  t.self = matches[0];
  t.nodes[static_cast<size_t>(t.self)].local = true;
  return t;
}

std::string LocalIpOf(const std::string& host, const std::vector<std::string>& local_addresses) {
  std::string v6;
  for (const auto& a : Resolve(host)) {
    if (std::find(local_addresses.begin(), local_addresses.end(), a) == local_addresses.end())
      continue;
    if (a.find(':') == std::string::npos) return a;
    if (v6.empty()) v6 = a;
  }
  return v6;
}

}  // namespace rdmastor::cluster
