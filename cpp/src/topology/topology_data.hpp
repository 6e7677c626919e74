// Internal to the topology units (topology.cpp, custom.cpp, cluster.cpp):
// the stored data of custom and cluster topologies, and the argument checks
// and message helpers they share. Grid families store nothing but their
// sizes (their links and routes are arithmetic), so only the stored kinds
// need these structures.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "wafercoll/topology/topology.hpp"

namespace wafercoll {

namespace topology_detail {

// Hop distances of custom topologies are uint16 (a routing table per
// destination endpoint, nodes x endpoints entries): this value marks
// "unreachable".
inline constexpr std::uint16_t kUnreached = std::numeric_limits<std::uint16_t>::max();
static_assert(Topology::kMaxCustomNodes < kUnreached,
              "hop distances of custom topologies must fit in uint16 below kUnreached");
// Next-hop entries are a link's position among its node's out-links (at most
// kMaxCustomNodes - 1 of them, no duplicate pairs); this value marks "none".
inline constexpr std::uint16_t kNoHop = std::numeric_limits<std::uint16_t>::max();
static_assert(Topology::kMaxCustomNodes < kNoHop,
              "out-link positions of custom topologies must fit in uint16 below kNoHop");

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

inline void check_size(const char* fn, const char* arg, NodeId value) {
  if (value < 1) {
    throw std::invalid_argument(cat(fn, ": ", arg, " must be >= 1, got ", value));
  }
}

// `where` prefixes the parameter name, e.g. "links[3]." for per-link values.
inline void check_bandwidth(const char* fn, const std::string& where, BytesPerSecond bw) {
  if (!(bw > 0.0) || !std::isfinite(bw)) {
    throw std::invalid_argument(cat(fn, ": ", where,
                                    "bandwidth_Bps must be > 0 and finite, got ", bw));
  }
}

inline void check_latency(const char* fn, const std::string& where, Seconds lat) {
  if (!(lat >= 0.0) || !std::isfinite(lat)) {
    throw std::invalid_argument(cat(fn, ": ", where,
                                    "latency_s must be >= 0 and finite, got ", lat));
  }
}

inline std::int64_t pair_key(NodeId u, NodeId v) {
  return (static_cast<std::int64_t>(u) << 32) | static_cast<std::uint32_t>(v);
}

}  // namespace topology_detail

// Everything a custom topology stores. Adjacency is CSR with each node's links
// in increasing id order, which is what makes "lowest link id" tie-breaking a
// simple first-match scan.
struct Topology::CustomData {
  std::vector<Link> links;
  std::vector<LinkId> out_offsets, out_links;  // by src
  std::vector<LinkId> in_offsets, in_links;    // by dst
  // Sorted (src, dst) keys: made with the links of a custom topology (they
  // find duplicates), on first use (pairs()) for a cluster, whose links are
  // distinct by construction and rarely looked up by their ends (16 bytes
  // per link: 67 MB on a cluster of 2^20 processes).
  std::vector<std::pair<std::int64_t, LinkId>> by_pair;
  std::once_flag pairs_once;
  // `count` links, link i being link_of(i) (a cluster computes its links).
  template <typename LinkOf>
  const std::vector<std::pair<std::int64_t, LinkId>>& pairs(LinkId count, LinkOf link_of) {
    std::call_once(pairs_once, [&] {
      if (!by_pair.empty() || count == 0) return;
      by_pair.reserve(static_cast<std::size_t>(count));
      for (LinkId i = 0; i < count; ++i) {
        const Link l = link_of(i);
        by_pair.emplace_back(topology_detail::pair_key(l.src, l.dst), i);
      }
      std::sort(by_pair.begin(), by_pair.end());
    });
    return by_pair;
  }

  // star(): routes are computed, no table is built.
  bool star = false;

  // The next-hop table (see topology.hpp): column d at next_hop[d * N], each
  // entry a position in the node's out-link list or kNoHop. Allocated without
  // initialising (pages are committed as columns are written); a column is
  // written once under the lock and then published by its ready flag
  // (release/acquire), so reads take no lock. Empty above the size limit.
  std::unique_ptr<std::uint16_t[]> next_hop;
  std::unique_ptr<std::atomic<std::uint8_t>[]> next_hop_ready;

  // The per-destination search's distances (the fallback without a table),
  // one vector per destination endpoint. The outer vector is sized once; an
  // inner table is written once under the lock and never modified
  // afterwards, so a reference to it stays valid without the lock.
  std::mutex mutex;
  std::vector<std::vector<std::uint16_t>> dist_to;

  // Explicit route table (custom_routed): empty when routes are shortest paths.
  std::vector<std::int64_t> route_offsets;
  std::vector<LinkId> route_links;
};

// A cluster's processes, sockets and nodes. Its links and its routes follow
// from the ranks' placement and the link classes (cluster_link,
// cluster_route), so it stores neither links nor routing tables; it keeps an
// empty CustomData for the (src, dst) index that link_id makes on first use.
struct Topology::ClusterData {
  NodeId nodes = 0, ppn = 0, sockets = 0;
  bool lanes = false;                          // per-process links to the NIC
  std::vector<NodeId> rank_node, rank_socket;  // socket: global index
  // ppn when rank r runs on node r / ppn (the default layout), else 0: the
  // simulator asks for a route link per packet and stage, and on a large
  // cluster reading rank_node twice each time missed the cache (recursive
  // doubling on cluster(262144, 1): a quarter of the route's time).
  NodeId block_ppn = 0;
  NodeId node_of(NodeId r) const {
    if (block_ppn == 1) return r;
    return block_ppn > 1 ? r / block_ppn : rank_node[static_cast<std::size_t>(r)];
  }
  // Per link class (ClusterLinkClass): the links are computed from these
  // and the placement (Topology::cluster_link), not stored.
  std::array<BytesPerSecond, 4> bandwidth_Bps{};
  std::array<Seconds, 4> latency_s{};
};

namespace topology_detail {

// Checks links and indexes them: by (src, dst) pair and CSR adjacency, each
// node's lists in increasing id order.
template <typename Data>
inline void index_links(const char* fn, NodeId n, std::vector<Link>& links, Data& data) {
  if (links.size() > static_cast<std::size_t>(std::numeric_limits<LinkId>::max())) {
    throw std::invalid_argument(cat(fn, ": too many links (", links.size(), ")"));
  }
  const auto num_links = static_cast<LinkId>(links.size());
  data.by_pair.reserve(links.size());
  for (LinkId i = 0; i < num_links; ++i) {
    const Link& l = links[i];
    const bool ok = l.src >= 0 && l.src < n && l.dst >= 0 && l.dst < n &&
                    l.src != l.dst && l.bandwidth_Bps > 0.0 &&
                    std::isfinite(l.bandwidth_Bps) && l.latency_s >= 0.0 &&
                    std::isfinite(l.latency_s);
    if (ok) {  // the message below is only assembled for a bad link
      data.by_pair.emplace_back(pair_key(l.src, l.dst), i);
      continue;
    }
    const std::string where = cat("links[", i, "].");
    if (l.src < 0 || l.src >= n) {
      throw std::invalid_argument(
          cat(fn, ": ", where, "src = ", l.src, " is out of range [0, ", n, ")"));
    }
    if (l.dst < 0 || l.dst >= n) {
      throw std::invalid_argument(
          cat(fn, ": ", where, "dst = ", l.dst, " is out of range [0, ", n, ")"));
    }
    if (l.src == l.dst) {
      throw std::invalid_argument(
          cat(fn, ": links[", i, "] is a self-loop on node ", l.src));
    }
    check_bandwidth(fn, where, l.bandwidth_Bps);
    check_latency(fn, where, l.latency_s);
    data.by_pair.emplace_back(pair_key(l.src, l.dst), i);  // not reached
  }
  std::sort(data.by_pair.begin(), data.by_pair.end());
  for (std::size_t k = 1; k < data.by_pair.size(); ++k) {
    if (data.by_pair[k].first == data.by_pair[k - 1].first) {
      const LinkId dup = data.by_pair[k].second, first = data.by_pair[k - 1].second;
      const Link& l = links[dup];
      throw std::invalid_argument(cat(fn, ": links[", dup, "] duplicates links[", first,
                                      "] (", l.src, " -> ", l.dst, ")"));
    }
  }
  // CSR by counting sort; filling in id order keeps each node's list sorted.
  auto build_csr = [&](bool by_src, std::vector<LinkId>& off,
                       std::vector<LinkId>& ids) {
    off.assign(static_cast<std::size_t>(n) + 1, 0);
    for (const Link& l : links) ++off[(by_src ? l.src : l.dst) + 1];
    for (NodeId v = 0; v < n; ++v) off[v + 1] += off[v];
    ids.resize(links.size());
    std::vector<LinkId> next(off.begin(), off.end() - 1);
    for (LinkId i = 0; i < num_links; ++i) {
      ids[next[by_src ? links[i].src : links[i].dst]++] = i;
    }
  };
  build_csr(true, data.out_offsets, data.out_links);
  build_csr(false, data.in_offsets, data.in_links);
}

}  // namespace topology_detail

}  // namespace wafercoll
