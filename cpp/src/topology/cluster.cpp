// Cluster topologies: processes on sockets on nodes, joined by a fabric
// (see topology.hpp for the link classes and their numbering). Routes are
// not searched: every pair's route follows from the two ranks' node and
// socket, in at most six links, so the family scales to many processes
// without routing tables.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "topology_data.hpp"
#include "wafercoll/topology/topology.hpp"

namespace wafercoll {

using namespace topology_detail;

Topology Topology::cluster(NodeId nodes, NodeId ppn, NodeId sockets,
                           std::vector<NodeId> rank_node,
                           const std::array<BytesPerSecond, 4>& bandwidth_Bps,
                           const std::array<Seconds, 4>& latency_s) {
  const char* fn = "cluster";
  check_size(fn, "nodes", nodes);
  check_size(fn, "ppn", ppn);
  check_size(fn, "sockets", sockets);
  const std::int64_t p = std::int64_t{nodes} * ppn;
  if (p > kMaxClusterRanks) {
    throw std::invalid_argument(cat(fn, ": nodes * ppn = ", p, " exceeds the limit of ",
                                    kMaxClusterRanks, " processes"));
  }
  if (ppn % sockets != 0) {
    throw std::invalid_argument(cat(fn, ": sockets = ", sockets,
                                    " must divide ppn = ", ppn));
  }
  // Four link classes (process, socket, NIC, lane); lanes, a per-process
  // link to the NIC, exist only when given a bandwidth.
  static const char* kClass[4] = {"process_", "socket_", "nic_", "lane_"};
  const bool lanes = bandwidth_Bps[3] != 0.0;
  for (int c = 0; c < (lanes ? 4 : 3); ++c) {
    check_bandwidth(fn, kClass[c], bandwidth_Bps[c]);
    check_latency(fn, kClass[c], latency_s[c]);
  }
  auto data = std::make_shared<ClusterData>();
  data->nodes = nodes;
  data->ppn = ppn;
  data->sockets = sockets;
  data->lanes = lanes;
  if (rank_node.empty()) {
    rank_node.resize(static_cast<std::size_t>(p));
    for (std::int64_t r = 0; r < p; ++r) rank_node[r] = static_cast<NodeId>(r / ppn);
  } else if (static_cast<std::int64_t>(rank_node.size()) != p) {
    throw std::invalid_argument(cat(fn, ": rank_to_node must have nodes * ppn = ", p,
                                    " entries, got ", rank_node.size()));
  }
  // Socket of each rank: the ranks of a node fill its sockets in rank
  // order, ppn / sockets each, whatever the rank-to-node map.
  std::vector<NodeId> fill(static_cast<std::size_t>(nodes), 0);
  data->rank_socket.resize(static_cast<std::size_t>(p));
  const NodeId per_socket = ppn / sockets;
  for (std::int64_t r = 0; r < p; ++r) {
    const NodeId n = rank_node[r];
    if (n < 0 || n >= nodes) {
      throw std::invalid_argument(cat(fn, ": rank_to_node[", r, "] = ", n,
                                      " is out of range [0, ", nodes, ")"));
    }
    if (fill[n] == ppn) {
      throw std::invalid_argument(cat(fn, ": rank_to_node puts more than ppn = ", ppn,
                                      " ranks on node ", n));
    }
    data->rank_socket[r] = n * sockets + fill[n]++ / per_socket;
  }
  data->block_ppn = ppn;
  for (std::int64_t r = 0; r < p && data->block_ppn != 0; ++r)
    if (rank_node[r] != r / ppn) data->block_ppn = 0;
  data->rank_node = std::move(rank_node);

  // Node ids: processes [0, P), socket switches [P, P+S) (only with more
  // than one socket), node routers [P+S, P+S+N), the fabric, then the NIC
  // switches when there are lanes. Links are numbered by class
  // (cluster_link), so that cluster_route can compute their ids; none is
  // stored (24 bytes per link: 25 MB on 2^18 processes), and no index is
  // made here (CustomData::pairs()).
  const std::int64_t S = sockets > 1 ? std::int64_t{nodes} * sockets : 0;
  const std::int64_t links = 2 * (p + S + nodes) + (lanes ? 2 * p : 0);
  const std::int64_t num_nodes = p + S + nodes + 1 + (lanes ? nodes : 0);
  // (S and N are at most p, and p at most kMaxClusterRanks = 2^21: both fit.)
  data->bandwidth_Bps = bandwidth_Bps;
  data->latency_s = latency_s;
  Topology t;
  t.kind_ = TopologyKind::cluster;
  t.num_endpoints_ = static_cast<NodeId>(p);
  t.num_nodes_ = static_cast<NodeId>(num_nodes);
  t.num_links_ = static_cast<LinkId>(links);
  t.custom_ = std::make_shared<CustomData>();
  t.cluster_ = std::move(data);
  return t;
}

// Link `id` of a cluster, by class in the order cluster_route numbers them:
// process links up [0, P) and down [P, 2P); socket links up and down (S
// each, with more than one socket); NIC links up and down (N each, from the
// node router, or from the node's NIC switch with lanes); lanes up and down
// (P each). Ids are checked by link().
Link Topology::cluster_link(LinkId id) const {
  const ClusterData& c = *cluster_;
  const std::int64_t P = num_endpoints_;
  const std::int64_t S = c.sockets > 1 ? std::int64_t{c.nodes} * c.sockets : 0;
  const std::int64_t N = c.nodes;
  const std::int64_t router0 = P + S, fabric = P + S + N;
  const std::int64_t nic0 = c.lanes ? fabric + 1 : router0;
  auto make = [&c](std::int64_t a, std::int64_t b, ClusterLinkClass k, bool down) {
    const auto i = static_cast<int>(k);
    if (down) std::swap(a, b);
    return Link{static_cast<NodeId>(a), static_cast<NodeId>(b), c.bandwidth_Bps[i],
                c.latency_s[i]};
  };
  std::int64_t k = id;
  if (k < 2 * P) {  // a process and its socket switch (or node router)
    const std::int64_t r = k % P;
    const std::int64_t sw = S > 0 ? P + c.rank_socket[r] : router0 + c.rank_node[r];
    return make(r, sw, ClusterLinkClass::process, k >= P);
  }
  k -= 2 * P;
  if (k < 2 * S) {  // a socket switch and its node router
    const std::int64_t s = k % S;
    return make(P + s, router0 + s / c.sockets, ClusterLinkClass::socket, k >= S);
  }
  k -= 2 * S;
  if (k < 2 * N) {  // a node's NIC and the fabric
    return make(nic0 + k % N, fabric, ClusterLinkClass::nic, k >= N);
  }
  k -= 2 * N;  // lanes: a process and its node's NIC switch
  const std::int64_t r = k % P;
  return make(r, nic0 + c.rank_node[r], ClusterLinkClass::lane, k >= P);
}

NodeId Topology::cluster_nodes() const { return cluster_ ? cluster_->nodes : 0; }
NodeId Topology::ppn() const { return cluster_ ? cluster_->ppn : 0; }
NodeId Topology::sockets() const { return cluster_ ? cluster_->sockets : 0; }

const std::vector<NodeId>& Topology::rank_node() const {
  static const std::vector<NodeId> none;
  return cluster_ ? cluster_->rank_node : none;
}

const std::vector<NodeId>& Topology::rank_socket() const {
  static const std::vector<NodeId> none;
  return cluster_ ? cluster_->rank_socket : none;
}

// 0: same socket, 1: same node, 2: different nodes (what hierarchical
// algorithms and the cost model's classes key on).
int Topology::locality(NodeId a, NodeId b) const {
  if (!cluster_) throw std::invalid_argument("locality: not a cluster topology");
  check_endpoint(a, "locality", "a");
  check_endpoint(b, "locality", "b");
  if (cluster_->node_of(a) != cluster_->node_of(b)) return 2;
  return cluster_->rank_socket[a] == cluster_->rank_socket[b] ? 0 : 1;
}

// The link ids of the header comment, from each rank's node and socket.
void Topology::cluster_route(NodeId a, NodeId b, std::vector<LinkId>& out) const {
  LinkId buf[6];
  const std::int32_t n = cluster_route(a, b, buf);
  out.insert(out.end(), buf, buf + n);
}

// Link by link (route_steps.cpp: cluster_route_link, the one statement of
// the rule).
std::int32_t Topology::cluster_route(NodeId a, NodeId b, LinkId* buf) const {
  std::int32_t n = 0;
  buf[0] = cluster_route_link(a, b, 0, &n);
  for (std::int32_t i = 1; i < n; ++i) buf[i] = cluster_route_link(a, b, i, nullptr);
  return n;
}

}  // namespace wafercoll
