// Routes a link at a time (topology.hpp: computed_routes, route_link,
// next_link): the simulator follows a single-destination message along its
// route without storing it, asking for the link of each stage as the
// message reaches it. Every function here applies the same rule as
// append_route, so following them link by link gives route() exactly
// (tests/cpp/test_route_steps.cpp checks this for every family).
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "topology_data.hpp"
#include "wafercoll/topology/topology.hpp"

namespace wafercoll {

using namespace topology_detail;

bool Topology::computed_routes() const {
  return !stores_links() || kind_ == TopologyKind::cluster || is_star();
}

LinkId Topology::route_link(NodeId src, NodeId dst, std::int32_t i, std::int32_t* hops) const {
  check_endpoint(src, "route_link", "src");
  check_endpoint(dst, "route_link", "dst");
  if (i < 0) throw std::invalid_argument(cat("route_link: i = ", i, " must be >= 0"));
  return route_link_unchecked(src, dst, i, hops);
}

LinkId Topology::stored_route_link(NodeId src, NodeId dst, std::int32_t i,
                                   std::int32_t* hops) const {
  std::int32_t n = 0;
  LinkId link = -1;
  if (src == dst) {
    n = 0;
  } else if (kind_ == TopologyKind::cluster) {
    return cluster_route_link(src, dst, i, hops);
  } else if (is_star()) {
    n = 2;
    link = i == 0 ? 2 * src : 2 * dst + 1;  // uplink of src, downlink of dst
  } else {
    std::vector<LinkId> route;
    append_route(src, dst, route);
    n = static_cast<std::int32_t>(route.size());
    if (i < n) link = route[i];
  }
  if (hops != nullptr) *hops = n;
  return i < n ? link : -1;
}

// Link i of a cluster's route from a to b, the link ids of topology.hpp's
// header comment from each rank's node and socket (cluster_route builds the
// whole route from it): the simulator asks for one link per stage, and on
// clusters of one socket per node the sockets are not read at all.
LinkId Topology::cluster_route_link(NodeId a, NodeId b, std::int32_t i,
                                    std::int32_t* hops) const {
  const ClusterData& c = *cluster_;
  const NodeId P = num_endpoints_;
  const NodeId N = c.nodes;
  const NodeId S = c.sockets > 1 ? N * c.sockets : 0;
  const LinkId nic = 2 * P + 2 * S;  // NIC up of node 0; NIC down follows
  const NodeId na = c.node_of(a), nb = c.node_of(b);
  std::int32_t n = 0;
  if (na != nb && c.lanes) {  // lane up, NIC up, NIC down, lane down
    n = 4;
    if (hops != nullptr) *hops = n;
    const LinkId lanes0 = nic + 2 * N;
    switch (i) {
      case 0: return lanes0 + a;
      case 1: return nic + na;
      case 2: return nic + N + nb;
      case 3: return lanes0 + P + b;
      default: return -1;
    }
  }
  // process up, [socket up], [NIC up, NIC down], [socket down], process down
  const bool sockets = S > 0 && (na != nb || c.rank_socket[a] != c.rank_socket[b]);
  const bool nics = na != nb;
  n = 2 + 2 * sockets + 2 * nics;
  if (hops != nullptr) *hops = n;
  if (i >= n) return -1;
  if (i == 0) return a;
  if (i == n - 1) return P + b;
  if (sockets) {
    if (i == 1) return 2 * P + c.rank_socket[a];
    if (i == n - 2) return 2 * P + S + c.rank_socket[b];
    --i;
  }
  return i == 1 ? nic + na : nic + N + nb;
}

// Clusters: a hidden router's next link towards process dst follows from
// where dst sits (topology.hpp, "Routes"); routers no route to dst passes
// (with lanes, those of other nodes' processes) have none.
LinkId Topology::cluster_next_link(NodeId node, NodeId dst) const {
  const ClusterData& c = *cluster_;
  const NodeId P = num_endpoints_;
  const NodeId S = c.sockets > 1 ? c.nodes * c.sockets : 0;
  const NodeId N = c.nodes;
  const NodeId router0 = P + S, fabric = P + S + N;
  const NodeId nb = c.rank_node[dst], sb = c.rank_socket[dst];
  auto not_on_route = [&]() -> LinkId {
    throw std::invalid_argument(cat("next_link: no route to endpoint ", dst, " of ", name(),
                                    " passes node ", node));
  };
  if (node < P) {
    LinkId buf[6];
    cluster_route(node, dst, buf);
    return buf[0];
  }
  if (node < router0) {  // socket switch s
    const NodeId s = node - P;
    if (s == sb) return P + dst;  // process down
    if (c.lanes && s / c.sockets != nb) return not_on_route();
    return 2 * P + s;  // socket up
  }
  if (node < fabric) {  // node router n
    const NodeId n = node - router0;
    if (n == nb) return S > 0 ? 2 * P + S + sb : P + dst;  // socket or process down
    if (c.lanes) return not_on_route();
    return 2 * P + 2 * S + n;  // NIC up
  }
  if (node == fabric) return 2 * P + 2 * S + N + nb;  // NIC down
  const NodeId n = node - (fabric + 1);             // NIC switch (lanes)
  if (n == nb) return 3 * P + 2 * S + 2 * N + dst;  // lane down
  return 2 * P + 2 * S + n;                         // NIC up
}

LinkId Topology::next_link(NodeId node, NodeId dst) const {
  check_node(node, "next_link", "node");
  check_endpoint(dst, "next_link", "dst");
  if (node == dst) return -1;
  if (!stores_links()) {
    const NodeId r = node / cols_, c = node - r * cols_;
    const NodeId rt = dst / cols_, ct = dst - rt * cols_;
    if (c != ct) return dim_steps(c, ct, cols_, wrap_x_).second > 0 ? east_id(r, c) : west_id(r, c);
    return dim_steps(r, rt, rows_, wrap_y_).second > 0 ? south_id(r, c) : north_id(r, c);
  }
  if (kind_ == TopologyKind::cluster) return cluster_next_link(node, dst);
  if (!custom_->route_offsets.empty()) {
    throw std::invalid_argument(cat("next_link: ", name(),
                                    " has an explicit route table; its routes are not "
                                    "destination-based (use route_link)"));
  }
  if (is_star()) return node < num_endpoints_ ? 2 * node : 2 * dst + 1;
  const std::uint16_t* col = next_hop_column(dst);
  if (col == nullptr) {
    throw std::invalid_argument(cat("next_link: ", name(), " is too large for a next-hop table (",
                                    num_nodes_, " nodes x ", num_endpoints_, " endpoints > ",
                                    kMaxNextHopEntries, "); use route_link"));
  }
  if (col[node] == kNoHop) {
    throw std::invalid_argument(
        cat("next_link: no route from node ", node, " to endpoint ", dst, " in ", name()));
  }
  return custom_->out_links[custom_->out_offsets[node] + col[node]];
}

}  // namespace wafercoll
