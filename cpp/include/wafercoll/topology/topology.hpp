// The machine a schedule runs on: nodes, directed links and a routing function.
//
// Nodes. Ids 0..E-1 are the endpoints (PEs, cores, chiplets, processes: they
// hold data and are the ranks of a schedule); ids E..N-1 are hidden routers
// that forward traffic but hold none. The grid families have no hidden
// routers (E == N); custom topologies may.
//
// Links are directed, each with its own bandwidth (bytes/s) and latency (s);
// a bidirectional wire is two links. A message from endpoint a to endpoint b
// follows route(a, b): the ordered list of link ids from a to b (empty when
// a == b). Routing is oblivious and deterministic: the same pair always takes
// the same path, whatever else is in flight.
//
// Grid families. Node id = r * cols + c (row-major), x = column, y = row:
//
//        x = col ->
//      +----+    +----+    +----+    +----+
//   y  |  0 |<-->|  1 |<-->|  2 |<-->|  3 |     mesh(3, 4)
//   =  +----+    +----+    +----+    +----+
//   r    ^^        ^^        ^^        ^^
//   o    vv        vv        vv        vv
//   w  +----+    +----+    +----+    +----+
//   |  |  4 |<-->|  5 |<-->|  6 |<-->|  7 |     torus(3, 4) adds the wrap
//   v  +----+    +----+    +----+    +----+     links 3<->0, 7<->4, 11<->8
//        ^^        ^^        ^^        ^^       (x) and 8<->0, 9<->1,
//        vv        vv        vv        vv       10<->2, 11<->3 (y)
//      +----+    +----+    +----+    +----+
//      |  8 |<-->|  9 |<-->| 10 |<-->| 11 |
//      +----+    +----+    +----+    +----+
//
// line(n) is the graph of mesh(1, n) and ring(n) that of torus(1, n); they
// keep their own kind() and name(). A dimension of size 1 has no links; in a
// ring/torus dimension of size 2 the "wrap" link would duplicate the
// neighbour link, so there is exactly one link each way between the two
// nodes (the dimension behaves like a line of 2).
//
// Routing on grids is dimension-ordered: first along the row (X) to the
// destination column, then along the column (Y) to the destination row. On a
// wrapped dimension of size n each step goes the shorter way round; when both
// ways are equally long (a distance of exactly n/2) it goes the positive way
// (+1: increasing column or row, wrapping from n-1 to 0). Hence
//   hops = |dc| + |dr|                               (line, mesh)
//   hops = min(|dc|, cols-|dc|) + min(|dr|, rows-|dr|)  (ring, torus)
// and route() costs O(hops): nothing is tabulated, so a torus of 1024 x 1024
// (and anything up to kMaxGridNodes nodes) is as cheap to hold as a 2 x 2.
//
// Link ids on grids. An "edge" joins (r, c) to its +1 neighbour: an X edge
// (r, c) -> (r, c+1 mod cols), a Y edge (r, c) -> (r+1 mod rows, c). With ex X
// edges per row (cols if wrapped, else cols-1) and ey Y edges per column (rows
// if wrapped, else rows-1), the ids form four blocks:
//   east  (+x), along X edge (r, c):    r*ex + c
//   west  (-x), against X edge (r, c):  rows*ex + r*ex + c
//   south (+y), along Y edge (r, c):    2*rows*ex + r*cols + c
//   north (-y), against Y edge (r, c):  2*rows*ex + ey*cols + r*cols + c
// so num_links = 2*(rows*ex + cols*ey): 2*rows*(cols-1) + 2*cols*(rows-1) for a
// mesh and 4*rows*cols for a torus whose sizes are both >= 3. In mesh(2, 3),
// for example, link 0 is 0->1, link 4 is 1->0, link 8 is 0->3 and 11 is 3->0.
//
// Custom topologies take arbitrary directed links (link id = position in the
// list). Any node, endpoint or router, forwards traffic. The route from a to
// b is a shortest path by hop count; among shortest paths it is the one whose
// sequence of link ids is lexicographically smallest (at each node, the
// lowest-id link that stays on a shortest path). Routes are therefore
// destination-based: the tail of a route is itself a route, and one next-hop
// table says them all: next[u][d] = the first link of u's route to endpoint
// d. The table has N x E entries of 2 bytes (the link's position among u's
// out-links), filled one destination column at a time, on first use, by a
// reverse BFS from d and one scan of the links; a route is then read in
// O(hops) without a lock. It is kept when N x E <= kMaxNextHopEntries (256
// MiB); larger custom topologies fall back to the per-destination search:
// cached hop distances to d (also 2 bytes per node and destination used) and,
// at every hop, a scan of the node's out-links. Both give the same routes.
// Custom topologies are limited to kMaxCustomNodes nodes (distances and
// out-link positions are uint16).
//
// Stars. star(n): n endpoints on one hidden switch, node n. Link 2i goes from
// endpoint i to the switch and link 2i + 1 back, so the route from a to b is
// [2a, 2b + 1] (the only path), computed, never searched: a star is a custom
// topology (kind "star") without tables, and holds up to kMaxStarEndpoints
// endpoints.
//
// A custom topology may instead carry an explicit route table: the route of
// every ordered pair of endpoints, given by the caller (dimension-ordered
// routes of the Wormhole n150's two NoCs, say). Each route is checked to be a
// chain of links from its source to its destination; an empty route for
// a != b means "no route". A family label and a display name may replace
// "custom" in kind() and name() (with_labels).
//
// Clusters. cluster(nodes, ppn, sockets, rank_node) holds nodes * ppn
// processes (the endpoints), in node-major order unless rank_node says
// otherwise (each node gets exactly ppn ranks; a node's ranks fill its
// sockets in increasing rank order, ppn / sockets each). Hidden routers: one
// switch per socket (only when sockets > 1), one router per node, one fabric
// switch. With P processes, S = nodes * sockets socket switches (0 when
// sockets == 1) and N = nodes, node ids are processes [0, P), socket switches
// [P, P + S), node routers [P + S, P + S + N) and the fabric P + S + N. Links:
//   process up   i: i -> its switch          id i            (class process)
//   process down i: its switch -> i          id P + i        (class process)
//   socket up    s: s -> its node router     id 2P + s       (class socket)
//   socket down  s: node router -> s         id 2P + S + s   (class socket)
//   NIC up       n: node router n -> fabric  id 2P + 2S + n  (class nic)
//   NIC down     n: fabric -> node router n  id 2P + 2S + N + n
//   lane up      i: i -> its NIC switch      id 2P + 2S + 2N + i  (class lane)
//   lane down    i: NIC switch -> i          id 3P + 2S + 2N + i  (class lane)
// where a process's switch is its socket switch, or its node router when
// sockets == 1. Lanes exist only when the lane class has a bandwidth (> 0):
// a process's own path to the NIC, so that off-node messages get the
// per-process network rate R_b while on-node ones keep the on-node rates.
// With lanes each node also has a NIC switch, node id P + S + N + 1 + n,
// from which its NIC links leave instead of the node router.
// Routes: same socket [up a, down b]; same node [up a, socket up, socket down,
// down b]; other node [up a, (socket up), NIC up, NIC down, (socket down),
// down b], or with lanes [lane up a, NIC up, NIC down, lane down b]. All
// off-node traffic of a node therefore shares its NIC links: the injection
// limit R_N of the max-rate model.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wafercoll/units.hpp"

namespace wafercoll {

struct Link {
  NodeId src;
  NodeId dst;
  BytesPerSecond bandwidth_Bps;
  Seconds latency_s;
};

enum class TopologyKind : std::uint8_t { line, ring, mesh, torus, custom, cluster };

// Link classes of a cluster (bandwidth and latency are given per class).
enum class ClusterLinkClass : std::uint8_t { process = 0, socket = 1, nic = 2, lane = 3 };

const char* to_string(TopologyKind kind);

class Topology {
 public:
  // Hard limits that keep a malformed request from exhausting memory.
  static constexpr std::int64_t kMaxGridNodes = std::int64_t{1} << 22;
  static constexpr std::int64_t kMaxCustomNodes = 20000;
  // Explicit route tables hold endpoints^2 routes.
  static constexpr std::int64_t kMaxRoutedEndpoints = 4096;
  static constexpr std::int64_t kMaxRouteTableLinks = std::int64_t{1} << 26;
  static constexpr std::int64_t kMaxClusterRanks = std::int64_t{1} << 21;
  static constexpr std::int64_t kMaxStarEndpoints = (std::int64_t{1} << 22) - 1;
  // Nodes x endpoints of the largest next-hop table (2 bytes each: 256 MiB).
  static constexpr std::int64_t kMaxNextHopEntries = std::int64_t{1} << 27;

  // Families. Every link gets bandwidth_Bps (> 0, finite) and latency_s
  // (>= 0, finite); sizes are >= 1. Invalid arguments throw
  // std::invalid_argument naming the parameter and the accepted range.
  static Topology line(NodeId n, BytesPerSecond bandwidth_Bps = 1e9,
                       Seconds latency_s = 0.0);
  static Topology ring(NodeId n, BytesPerSecond bandwidth_Bps = 1e9,
                       Seconds latency_s = 0.0);
  static Topology mesh(NodeId rows, NodeId cols, BytesPerSecond bandwidth_Bps = 1e9,
                       Seconds latency_s = 0.0);
  static Topology torus(NodeId rows, NodeId cols, BytesPerSecond bandwidth_Bps = 1e9,
                        Seconds latency_s = 0.0);
  // links[i] becomes link i. Checked: node ids in [0, N), no self-loops, no
  // duplicate (src, dst), per-link bandwidth and latency as above.
  static Topology custom(NodeId num_endpoints, NodeId num_hidden_routers,
                         std::vector<Link> links);
  // The same with an explicit route table: the route from a to b is
  // route_links[route_offsets[a * E + b] .. route_offsets[a * E + b + 1]),
  // with E * E + 1 offsets. Checked as described in the header comment.
  static Topology custom_routed(NodeId num_endpoints, NodeId num_hidden_routers,
                                std::vector<Link> links,
                                std::vector<std::int64_t> route_offsets,
                                std::vector<LinkId> route_links);
  // nodes * ppn processes; rank_node empty = node-major order. bandwidth_Bps
  // and latency_s per ClusterLinkClass (process, socket, nic, lane); a lane
  // bandwidth of 0 means no lanes.
  static Topology cluster(NodeId nodes, NodeId ppn, NodeId sockets,
                          std::vector<NodeId> rank_node,
                          const std::array<BytesPerSecond, 4>& bandwidth_Bps,
                          const std::array<Seconds, 4>& latency_s);
  // n endpoints on one hidden switch (node n): links 2i (i -> switch) and
  // 2i + 1 (switch -> i), all with bandwidth_Bps and latency_s.
  static Topology star(NodeId n, BytesPerSecond bandwidth_Bps = 1e9,
                       Seconds latency_s = 0.0);
  // A copy whose kind() and name() read `family` and `display` (custom
  // topologies only; empty strings keep the defaults).
  Topology with_labels(std::string family, std::string display) const;

  TopologyKind kind_enum() const { return kind_; }
  std::string kind() const { return family_.empty() ? to_string(kind_) : family_; }
  // "line(8)", "ring(8)", "mesh(4x5)", "torus(4x5)",
  // "custom(6 endpoints, 2 routers, 14 links)" (no routers: not mentioned).
  std::string name() const;

  NodeId num_endpoints() const { return num_endpoints_; }
  NodeId num_nodes() const { return num_nodes_; }
  LinkId num_links() const { return num_links_; }
  bool is_endpoint(NodeId node) const { return node >= 0 && node < num_endpoints_; }

  // Cluster shape (0 for other families) and each rank's node and global
  // socket index (node * sockets + socket); empty for other families.
  NodeId cluster_nodes() const;
  NodeId ppn() const;
  NodeId sockets() const;
  const std::vector<NodeId>& rank_node() const;
  const std::vector<NodeId>& rank_socket() const;
  // 0 = same socket (or a == b), 1 = same node, 2 = other node (clusters only).
  int locality(NodeId a, NodeId b) const;

  // Grid shape: 1 x n for line and ring, 0 x 0 for custom and cluster.
  NodeId rows() const { return rows_; }
  NodeId cols() const { return cols_; }
  // (row, col) of a node of a grid family; throws std::invalid_argument on a
  // custom topology and std::out_of_range for a bad id.
  std::pair<NodeId, NodeId> coords(NodeId node) const;
  // Inverse of coords().
  NodeId node_at(NodeId row, NodeId col) const;

  // One link (O(1)); the whole list is built on demand (O(L)) for the grid
  // families, which store no per-link data.
  Link link(LinkId id) const;
  std::vector<Link> links() const;
  // Id of the link u -> v, or -1 when there is none (also for u == v).
  LinkId link_id(NodeId u, NodeId v) const;

  // Links from endpoint src to endpoint dst, in order. Throws
  // std::out_of_range for ids outside [0, num_endpoints) and
  // std::invalid_argument ("no route from a to b") when dst is unreachable.
  std::vector<LinkId> route(NodeId src, NodeId dst) const;
  // Same, appended to `out` (lets hot loops reuse one buffer).
  void append_route(NodeId src, NodeId dst, std::vector<LinkId>& out) const;
  // Number of links on route(src, dst), without building it.
  std::int32_t hops(NodeId src, NodeId dst) const;
  // hops(a, dst) for every endpoint a, with -1 where dst is unreachable.
  std::vector<std::int32_t> hops_to(NodeId dst) const;

  // Routes computed a link at a time. Whether link i of route(a, b) costs
  // O(1) without any table: the grid families, stars and clusters (not
  // custom topologies, whose routes come from tables or searches).
  bool computed_routes() const;
  // Link i (from 0) of route(src, dst), or -1 when the route has at most i
  // links; with `hops` not null, *hops = hops(src, dst). O(1) when
  // computed_routes(), else the route is built (O(hops)). Throws like
  // route() for bad endpoints and std::invalid_argument for i < 0.
  LinkId route_link(NodeId src, NodeId dst, std::int32_t i,
                    std::int32_t* hops = nullptr) const;
  // The same without the argument checks (src and dst endpoints, i >= 0),
  // inline for the grids: for loops that call it once per packet and stage.
  LinkId route_link_unchecked(NodeId src, NodeId dst, std::int32_t i,
                              std::int32_t* hops) const {
    if (!stores_links()) return grid_route_link(src, dst, i, hops);
    return stored_route_link(src, dst, i, hops);
  }
  // The first link of the route from node `node` (an endpoint, or a hidden
  // router the routes to dst pass) to endpoint dst: the link route(a, dst)
  // takes when it reaches `node`, so that following next_link from a gives
  // exactly route(a, dst). -1 when node == dst. O(1) on grids, stars and
  // clusters; custom topologies read their next-hop table (built on first
  // use per destination). Throws std::invalid_argument for topologies with
  // an explicit route table or too large for a next-hop table (their
  // routes are not destination-based or not tabulated), for a router no
  // route to dst passes, and std::out_of_range for bad ids.
  LinkId next_link(NodeId node, NodeId dst) const;

  // Shortest-path custom topologies and stars: the next-hop table, entry
  // u * E + d = the first link of the route from node u to endpoint d (-1
  // when u == d or d is unreachable from u). Throws std::invalid_argument for
  // other kinds (their routes are not destination-based) and above
  // kMaxNextHopEntries entries.
  std::vector<LinkId> next_hops() const;
  // The per-destination search of custom topologies of at most
  // kMaxCustomNodes nodes (the fallback above the table's limit), whatever
  // the size: the same route as route(), found without the table.
  std::vector<LinkId> search_route(NodeId src, NodeId dst) const;

 private:
  struct CustomData;  // links, adjacency and the lazy routing tables
  struct ClusterData;  // rank placement of a cluster

  Topology() = default;
  static Topology grid(TopologyKind kind, NodeId rows, NodeId cols,
                       BytesPerSecond bandwidth_Bps, Seconds latency_s);

  void check_endpoint(NodeId node, const char* fn, const char* arg) const;
  void check_node(NodeId node, const char* fn, const char* arg) const;

  // Grid helpers: link ids of the four directions at (r, c) and the number of
  // steps and direction (+1/-1) needed along one dimension.
  // Inline (below the class): the simulator computes routes with them.
  LinkId east_id(NodeId r, NodeId c) const;
  LinkId west_id(NodeId r, NodeId c) const;
  LinkId south_id(NodeId r, NodeId c) const;
  LinkId north_id(NodeId r, NodeId c) const;
  static std::pair<NodeId, int> dim_steps(NodeId from, NodeId to, NodeId size,
                                          bool wrap);
  // Link i of the dimension-ordered route between grid nodes.
  LinkId grid_route_link(NodeId src, NodeId dst, std::int32_t i, std::int32_t* hops) const;
  LinkId cluster_next_link(NodeId node, NodeId dst) const;
  // route_link_unchecked for the families that store their links (stars,
  // clusters: computed; other custom graphs: the route is built), and link
  // i of a cluster's route computed alone (src != dst).
  LinkId stored_route_link(NodeId src, NodeId dst, std::int32_t i, std::int32_t* hops) const;
  LinkId cluster_route_link(NodeId a, NodeId b, std::int32_t i, std::int32_t* hops) const;

  // Custom helpers (custom_routes.cpp): hop distances from every node to
  // endpoint dst (cached), the greedy walk along them, and the next-hop
  // column of dst (nullptr when the topology keeps no table).
  const std::vector<std::uint16_t>& dist_to(NodeId dst) const;
  void search_append(NodeId src, NodeId dst, std::vector<LinkId>& out) const;
  const std::uint16_t* next_hop_column(NodeId dst) const;
  bool is_star() const;
  // Links from src to dst by the custom rules (star, table or search).
  void custom_append(NodeId src, NodeId dst, std::vector<LinkId>& out) const;
  std::int32_t custom_hops(NodeId src, NodeId dst) const;
  // Explicit route a -> b of a routed custom topology: [first, last) into
  // its route_links, or nullptr when the table is absent.
  const LinkId* routed(NodeId a, NodeId b, std::int64_t* count) const;
  void cluster_route(NodeId a, NodeId b, std::vector<LinkId>& out) const;
  // The same into buf (at most 6 links); returns the count.
  std::int32_t cluster_route(NodeId a, NodeId b, LinkId* buf) const;
  Link cluster_link(LinkId id) const;  // computed, never stored
  bool stores_links() const {
    return kind_ == TopologyKind::custom || kind_ == TopologyKind::cluster;
  }

  TopologyKind kind_ = TopologyKind::custom;
  NodeId num_endpoints_ = 0;
  NodeId num_nodes_ = 0;
  LinkId num_links_ = 0;
  // Grid families.
  NodeId rows_ = 0;
  NodeId cols_ = 0;
  bool wrap_x_ = false;  // ring/torus with cols >= 3
  bool wrap_y_ = false;  // torus with rows >= 3
  NodeId east_per_row_ = 0;   // ex in the header comment
  NodeId south_per_col_ = 0;  // ey in the header comment
  BytesPerSecond bandwidth_Bps_ = 0.0;
  Seconds latency_s_ = 0.0;
  // Custom family. Shared between copies: the graph is immutable and the
  // cache only ever gains tables, so sharing it is safe (it has its own lock).
  std::shared_ptr<CustomData> custom_;
  std::shared_ptr<const ClusterData> cluster_;
  std::string family_, display_;  // with_labels()
};

inline LinkId Topology::east_id(NodeId r, NodeId c) const { return r * east_per_row_ + c; }

inline LinkId Topology::west_id(NodeId r, NodeId c) const {
  return rows_ * east_per_row_ + r * east_per_row_ + (c == 0 ? cols_ - 1 : c - 1);
}

inline LinkId Topology::south_id(NodeId r, NodeId c) const {
  return 2 * rows_ * east_per_row_ + r * cols_ + c;
}

inline LinkId Topology::north_id(NodeId r, NodeId c) const {
  return 2 * rows_ * east_per_row_ + south_per_col_ * cols_ +
         (r == 0 ? rows_ - 1 : r - 1) * cols_ + c;
}

// Steps from `from` to `to` (both in [0, size)) along one dimension and
// their direction. Without wrap the direction is forced; with wrap the
// shorter way wins and an exact half (forward * 2 == size) goes forward:
// the tie rule of the header.
inline std::pair<NodeId, int> Topology::dim_steps(NodeId from, NodeId to, NodeId size,
                                                  bool wrap) {
  if (!wrap) return {to >= from ? to - from : from - to, to >= from ? 1 : -1};
  const NodeId forward = to >= from ? to - from : to - from + size;
  if (2 * forward <= size) return {forward, 1};
  return {size - forward, -1};
}

// Link i of the dimension-ordered route (X first, then Y): the node before
// step i is found directly, and its link by the id formulas; -1 past the
// end. Lines and rings (one row) need no division.
inline LinkId Topology::grid_route_link(NodeId src, NodeId dst, std::int32_t i,
                                        std::int32_t* hops) const {
  const NodeId r0 = rows_ == 1 ? 0 : src / cols_, c0 = src - r0 * cols_;
  const NodeId rt = rows_ == 1 ? 0 : dst / cols_, ct = dst - rt * cols_;
  const auto [nx, dx] = dim_steps(c0, ct, cols_, wrap_x_);
  const auto [ny, dy] = dim_steps(r0, rt, rows_, wrap_y_);
  if (hops != nullptr) *hops = nx + ny;
  if (i < nx) {
    NodeId c = c0 + (dx > 0 ? i : -i);
    if (c >= cols_) c -= cols_;
    if (c < 0) c += cols_;
    return dx > 0 ? east_id(r0, c) : west_id(r0, c);
  }
  const NodeId j = i - nx;
  if (j >= ny) return -1;
  NodeId r = r0 + (dy > 0 ? j : -j);
  if (r >= rows_) r -= rows_;
  if (r < 0) r += rows_;
  return dy > 0 ? south_id(r, ct) : north_id(r, ct);
}

}  // namespace wafercoll
