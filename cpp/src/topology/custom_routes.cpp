// Routes of custom topologies and stars (see topology.hpp for the rules).
//
// A star's routes are arithmetic. Every other custom topology without an
// explicit route table routes along shortest paths, lowest link id first at
// each node. That rule is destination-based: the link a node takes towards
// endpoint d depends on the node and d only, never on where the message came
// from. So one column per destination, built once by a reverse BFS from d and
// one pass over the nodes, answers every route to d in O(hops): this is the
// next-hop table. Above its size limit the per-destination search (cached
// distances to d and, at every hop, a scan of the node's out-links for the
// first that gets one hop closer) gives the same routes more slowly; it is
// also what the tests hold the table to.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "topology_data.hpp"
#include "wafercoll/topology/topology.hpp"

namespace wafercoll {

using namespace topology_detail;

namespace {

// Hop distances from every node to dst along the links: a BFS over in-links
// from dst. Distances are unique, so the visiting order does not matter.
// (A template only because CustomData is private to Topology.)
template <typename Data>
std::vector<std::uint16_t> reverse_bfs(const Data& d, NodeId n, NodeId dst) {
  std::vector<std::uint16_t> dist(static_cast<std::size_t>(n), kUnreached);
  std::vector<NodeId> queue;
  queue.reserve(static_cast<std::size_t>(n));
  queue.push_back(dst);
  dist[dst] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const NodeId v = queue[head];
    for (LinkId k = d.in_offsets[v]; k < d.in_offsets[v + 1]; ++k) {
      const NodeId u = d.links[d.in_links[k]].src;
      if (dist[u] == kUnreached) {
        dist[u] = static_cast<std::uint16_t>(dist[v] + 1);
        queue.push_back(u);
      }
    }
  }
  return dist;
}

[[noreturn]] void no_route(NodeId src, NodeId dst) {
  throw std::invalid_argument(cat("no route from ", src, " to ", dst));
}

}  // namespace

// The family LogGP assumes: every rank's sends leave on its uplink and its
// receives arrive on its downlink. Built like a custom topology (its links
// are stored, so link queries work as for any other) but marked as a star:
// routes and hop counts are computed, and no table is kept, which is what
// lets it hold far more endpoints than kMaxCustomNodes.
Topology Topology::star(NodeId n, BytesPerSecond bandwidth_Bps, Seconds latency_s) {
  const char* fn = "star";
  check_size(fn, "n", n);
  if (n > kMaxStarEndpoints) {
    throw std::invalid_argument(
        cat(fn, ": n = ", n, " exceeds the limit of ", kMaxStarEndpoints, " endpoints"));
  }
  check_bandwidth(fn, "", bandwidth_Bps);
  check_latency(fn, "", latency_s);
  std::vector<Link> links;
  links.reserve(2 * static_cast<std::size_t>(n));
  for (NodeId i = 0; i < n; ++i) {
    links.push_back({i, n, bandwidth_Bps, latency_s});
    links.push_back({n, i, bandwidth_Bps, latency_s});
  }
  auto data = std::make_shared<CustomData>();
  index_links(fn, n + 1, links, *data);
  data->star = true;
  // search_route() stays available where the search's distances fit.
  if (std::int64_t{n} + 1 <= kMaxCustomNodes) {
    data->dist_to.resize(static_cast<std::size_t>(n));
  }
  Topology t;
  t.kind_ = TopologyKind::custom;
  t.num_endpoints_ = n;
  t.num_nodes_ = n + 1;
  t.num_links_ = static_cast<LinkId>(links.size());
  data->links = std::move(links);
  t.custom_ = std::move(data);
  t.family_ = "star";
  t.display_ = cat("star(", n, ")");
  return t;
}

bool Topology::is_star() const { return custom_ && custom_->star; }

// Computed on first use per destination and kept: the fallback's tables.
// The lock makes concurrent simulations (GIL released) safe.
const std::vector<std::uint16_t>& Topology::dist_to(NodeId dst) const {
  CustomData& d = *custom_;
  std::lock_guard<std::mutex> lock(d.mutex);
  auto& dist = d.dist_to[dst];
  if (dist.empty()) dist = reverse_bfs(d, num_nodes_, dst);
  return dist;
}

// Greedy walk: the first (lowest-id) link that gets one hop closer. It
// always exists because dist was computed over the same links.
void Topology::search_append(NodeId src, NodeId dst, std::vector<LinkId>& out) const {
  const auto& dist = dist_to(dst);
  if (dist[src] == kUnreached) no_route(src, dst);
  const CustomData& d = *custom_;
  for (NodeId u = src; u != dst;) {
    for (LinkId k = d.out_offsets[u]; k < d.out_offsets[u + 1]; ++k) {
      const Link& l = d.links[d.out_links[k]];
      if (dist[l.dst] != kUnreached && dist[l.dst] + 1 == dist[u]) {
        out.push_back(d.out_links[k]);
        u = l.dst;
        break;
      }
    }
  }
}

// Column dst of the next-hop table, built on first use: entry u is the
// position, among u's out-links (in increasing id order), of the first one
// whose head is one hop closer to dst; exactly the link the greedy walk
// takes at u. Readers that see the ready flag see the whole column.
const std::uint16_t* Topology::next_hop_column(NodeId dst) const {
  CustomData& d = *custom_;
  if (!d.next_hop) return nullptr;
  std::uint16_t* col = d.next_hop.get() + std::int64_t{dst} * num_nodes_;
  if (d.next_hop_ready[dst].load(std::memory_order_acquire) != 0) return col;
  std::lock_guard<std::mutex> lock(d.mutex);
  if (d.next_hop_ready[dst].load(std::memory_order_relaxed) != 0) return col;
  const std::vector<std::uint16_t> dist = reverse_bfs(d, num_nodes_, dst);
  for (NodeId u = 0; u < num_nodes_; ++u) {
    col[u] = kNoHop;
    if (u == dst || dist[u] == kUnreached) continue;
    const LinkId first = d.out_offsets[u];
    for (LinkId k = first; k < d.out_offsets[u + 1]; ++k) {
      const NodeId v = d.links[d.out_links[k]].dst;
      if (dist[v] != kUnreached && dist[v] + 1 == dist[u]) {
        col[u] = static_cast<std::uint16_t>(k - first);
        break;
      }
    }
  }
  d.next_hop_ready[dst].store(1, std::memory_order_release);
  return col;
}

// Custom topologies without a route table; src != dst, both endpoints.
void Topology::custom_append(NodeId src, NodeId dst, std::vector<LinkId>& out) const {
  const CustomData& d = *custom_;
  if (d.star) {
    out.push_back(2 * src);      // uplink of src
    out.push_back(2 * dst + 1);  // downlink of dst
    return;
  }
  const std::uint16_t* col = next_hop_column(dst);
  if (col == nullptr) {
    search_append(src, dst, out);
    return;
  }
  if (col[src] == kNoHop) no_route(src, dst);
  for (NodeId u = src; u != dst;) {
    const LinkId id = d.out_links[d.out_offsets[u] + col[u]];
    out.push_back(id);
    u = d.links[id].dst;
  }
}

std::int32_t Topology::custom_hops(NodeId src, NodeId dst) const {
  const CustomData& d = *custom_;
  if (d.star) return 2;
  const std::uint16_t* col = next_hop_column(dst);
  if (col == nullptr) {
    const std::uint16_t h = dist_to(dst)[src];
    if (h == kUnreached) no_route(src, dst);
    return h;
  }
  if (col[src] == kNoHop) no_route(src, dst);
  std::int32_t hops = 0;
  for (NodeId u = src; u != dst; ++hops) {
    u = d.links[d.out_links[d.out_offsets[u] + col[u]]].dst;
  }
  return hops;
}

std::vector<LinkId> Topology::search_route(NodeId src, NodeId dst) const {
  check_endpoint(src, "search_route", "src");
  check_endpoint(dst, "search_route", "dst");
  if (kind_ != TopologyKind::custom || !custom_->route_offsets.empty() ||
      custom_->dist_to.empty()) {
    throw std::invalid_argument(cat(
        "search_route: ", name(), " is not a shortest-path custom topology of at most ",
        kMaxCustomNodes, " nodes"));
  }
  std::vector<LinkId> out;
  if (src != dst) search_append(src, dst, out);
  return out;
}

std::vector<LinkId> Topology::next_hops() const {
  if (kind_ != TopologyKind::custom || !custom_->route_offsets.empty()) {
    throw std::invalid_argument(cat(
        "next_hops: only stars and custom topologies routed by shortest paths have a "
        "next-hop table; the routes of ", name(), " are not destination-based"));
  }
  const std::int64_t n = num_nodes_, e = num_endpoints_, entries = n * e;
  if (entries > kMaxNextHopEntries) {
    throw std::invalid_argument(cat(
        "next_hops: ", n, " nodes x ", e, " endpoints = ", entries,
        " entries exceed the limit of ", kMaxNextHopEntries,
        " (2 bytes each in the table); use route() per pair"));
  }
  std::vector<LinkId> out(static_cast<std::size_t>(entries), -1);
  const CustomData& d = *custom_;
  for (NodeId dst = 0; dst < num_endpoints_; ++dst) {
    if (d.star) {
      for (NodeId u = 0; u < num_endpoints_; ++u) {
        if (u != dst) out[u * e + dst] = 2 * u;
      }
      out[(n - 1) * e + dst] = 2 * dst + 1;  // the switch, node n - 1
      continue;
    }
    const std::uint16_t* col = next_hop_column(dst);
    if (col == nullptr) throw std::logic_error("next_hops: the table was not allocated");
    for (NodeId u = 0; u < num_nodes_; ++u) {
      if (col[u] != kNoHop) out[u * e + dst] = d.out_links[d.out_offsets[u] + col[u]];
    }
  }
  return out;
}

}  // namespace wafercoll
