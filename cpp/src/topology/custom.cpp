// Custom topologies: any directed graph of endpoints and hidden routers,
// routed along shortest paths (lowest link id first) or by an explicit
// route table. See topology.hpp for the rules.
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

// The node limit keeps hop distances and out-link positions in uint16 and
// the lazy routing tables (one column per destination, nodes entries each)
// within memory.
Topology Topology::custom(NodeId num_endpoints, NodeId num_hidden_routers,
                          std::vector<Link> links) {
  const char* fn = "custom";
  check_size(fn, "num_endpoints", num_endpoints);
  if (num_hidden_routers < 0) {
    throw std::invalid_argument(
        cat(fn, ": num_hidden_routers must be >= 0, got ", num_hidden_routers));
  }
  const std::int64_t nodes = std::int64_t{num_endpoints} + num_hidden_routers;
  if (nodes > kMaxCustomNodes) {
    throw std::invalid_argument(cat(
        fn, ": num_endpoints + num_hidden_routers = ", nodes, " exceeds the limit of ",
        kMaxCustomNodes, " nodes for custom topologies (their shortest-path routing "
        "tables grow with nodes x endpoints; use a grid family for larger machines)"));
  }
  const auto n = static_cast<NodeId>(nodes);
  auto data = std::make_shared<CustomData>();
  index_links(fn, n, links, *data);
  data->dist_to.resize(static_cast<std::size_t>(num_endpoints));
  // The next-hop table, when it fits: reserved, not written (its columns
  // are filled on first use, so untouched pages cost no memory).
  const std::int64_t entries = nodes * num_endpoints;
  if (entries <= kMaxNextHopEntries) {
    data->next_hop.reset(new std::uint16_t[static_cast<std::size_t>(entries)]);
    data->next_hop_ready.reset(new std::atomic<std::uint8_t>[num_endpoints]);
    for (NodeId e = 0; e < num_endpoints; ++e) data->next_hop_ready[e].store(0);
  }
  Topology t;
  t.kind_ = TopologyKind::custom;
  t.num_endpoints_ = num_endpoints;
  t.num_nodes_ = n;
  t.num_links_ = static_cast<LinkId>(links.size());
  data->links = std::move(links);
  t.custom_ = std::move(data);
  return t;
}

// An explicit route table (say, from a vendor's routing or a measured
// machine): checked once here, link by link, so that routing later is a
// table lookup that cannot fail except for a pair that has no route.
Topology Topology::custom_routed(NodeId num_endpoints, NodeId num_hidden_routers,
                                 std::vector<Link> links,
                                 std::vector<std::int64_t> route_offsets,
                                 std::vector<LinkId> route_links) {
  const char* fn = "custom";
  if (num_endpoints > kMaxRoutedEndpoints) {
    throw std::invalid_argument(cat(fn, ": an explicit route table holds at most ",
                                    kMaxRoutedEndpoints, " endpoints, got ",
                                    num_endpoints));
  }
  Topology t = custom(num_endpoints, num_hidden_routers, std::move(links));
  const std::int64_t e = num_endpoints;
  if (static_cast<std::int64_t>(route_offsets.size()) != e * e + 1) {
    throw std::invalid_argument(cat(fn, ": routes need ", e * e + 1,
                                    " offsets (endpoints^2 + 1), got ",
                                    route_offsets.size()));
  }
  if (static_cast<std::int64_t>(route_links.size()) > kMaxRouteTableLinks) {
    throw std::invalid_argument(cat(fn, ": the route table holds ", route_links.size(),
                                    " links, more than the limit of ",
                                    kMaxRouteTableLinks));
  }
  if (route_offsets.front() != 0 ||
      route_offsets.back() != static_cast<std::int64_t>(route_links.size())) {
    throw std::invalid_argument(
        cat(fn, ": route offsets must start at 0 and end at the number of route links"));
  }
  // Every route must be a chain of links from a to b.
  const CustomData& d = *t.custom_;
  for (NodeId a = 0; a < num_endpoints; ++a) {
    for (NodeId b = 0; b < num_endpoints; ++b) {
      const std::int64_t k = std::int64_t{a} * e + b;
      const std::int64_t lo = route_offsets[k], hi = route_offsets[k + 1];
      if (hi < lo) {
        throw std::invalid_argument(cat(fn, ": route offsets decrease at pair (", a,
                                        ", ", b, ")"));
      }
      if (a == b && hi > lo) {
        throw std::invalid_argument(
            cat(fn, ": the route from ", a, " to itself must be empty"));
      }
      NodeId at = a;
      for (std::int64_t j = lo; j < hi; ++j) {
        const LinkId id = route_links[j];
        if (id < 0 || id >= t.num_links_) {
          throw std::invalid_argument(cat(fn, ": route ", a, " -> ", b,
                                          " names link ", id, ", outside [0, ",
                                          t.num_links_, ")"));
        }
        if (d.links[id].src != at) {
          throw std::invalid_argument(
              cat(fn, ": route ", a, " -> ", b, " is not a chain: link ", id, " (",
                  d.links[id].src, " -> ", d.links[id].dst, ") does not leave node ",
                  at));
        }
        at = d.links[id].dst;
      }
      if (hi > lo && at != b) {
        throw std::invalid_argument(
            cat(fn, ": route ", a, " -> ", b, " ends at node ", at, ", not ", b));
      }
    }
  }
  t.custom_->route_offsets = std::move(route_offsets);
  t.custom_->route_links = std::move(route_links);
  t.custom_->dist_to.clear();  // neither is used with an explicit table
  t.custom_->next_hop.reset();
  t.custom_->next_hop_ready.reset();
  return t;
}

// Names for imported machines (family and display name); only custom
// topologies take them, since the families name themselves.
Topology Topology::with_labels(std::string family, std::string display) const {
  if (kind_ != TopologyKind::custom) {
    throw std::invalid_argument("with_labels: only custom topologies take labels");
  }
  Topology t = *this;
  t.family_ = std::move(family);
  t.display_ = std::move(display);
  return t;
}

}  // namespace wafercoll
