// Topologies: see topology.hpp for the families, link numbering and
// routing rules. This unit holds the grid families (line, ring, mesh,
// torus), whose links and routes are pure arithmetic on (row, column), and
// the queries every kind answers; custom.cpp and cluster.cpp build the
// stored kinds.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "topology_data.hpp"
#include "wafercoll/topology/topology.hpp"

namespace wafercoll {

using namespace topology_detail;

const char* to_string(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::line: return "line";
    case TopologyKind::ring: return "ring";
    case TopologyKind::mesh: return "mesh";
    case TopologyKind::torus: return "torus";
    case TopologyKind::custom: return "custom";
    case TopologyKind::cluster: return "cluster";
  }
  return "unknown";
}

// ---------------------------------------------------------------- families

// All four grid families are one representation: sizes, whether each
// dimension wraps, and one bandwidth and latency for every link. Nothing
// per link or per route is stored, so the limit (kMaxGridNodes) is on ids,
// not memory.
Topology Topology::grid(TopologyKind kind, NodeId rows, NodeId cols,
                        BytesPerSecond bandwidth_Bps, Seconds latency_s) {
  const char* fn = to_string(kind);
  const bool one_dim = kind == TopologyKind::line || kind == TopologyKind::ring;
  if (one_dim) {
    check_size(fn, "n", cols);
  } else {
    check_size(fn, "rows", rows);
    check_size(fn, "cols", cols);
  }
  const std::int64_t nodes = std::int64_t{rows} * cols;
  if (nodes > kMaxGridNodes) {
    throw std::invalid_argument(
        one_dim ? cat(fn, ": n = ", cols, " exceeds the limit of ", kMaxGridNodes,
                      " nodes")
                : cat(fn, ": rows * cols = ", nodes, " exceeds the limit of ",
                      kMaxGridNodes, " nodes"));
  }
  check_bandwidth(fn, "", bandwidth_Bps);
  check_latency(fn, "", latency_s);

  Topology t;
  t.kind_ = kind;
  t.rows_ = rows;
  t.cols_ = cols;
  t.num_endpoints_ = t.num_nodes_ = static_cast<NodeId>(nodes);
  const bool wraps = kind == TopologyKind::ring || kind == TopologyKind::torus;
  // Size 2 wraps onto the neighbour link itself, so only sizes >= 3 get a
  // separate wrap link.
  t.wrap_x_ = wraps && cols >= 3;
  t.wrap_y_ = wraps && rows >= 3;
  t.east_per_row_ = t.wrap_x_ ? cols : cols - 1;
  t.south_per_col_ = t.wrap_y_ ? rows : rows - 1;
  t.num_links_ = 2 * (t.east_per_row_ * rows + t.south_per_col_ * cols);
  t.bandwidth_Bps_ = bandwidth_Bps;
  t.latency_s_ = latency_s;
  return t;
}

Topology Topology::line(NodeId n, BytesPerSecond bandwidth_Bps, Seconds latency_s) {
  return grid(TopologyKind::line, 1, n, bandwidth_Bps, latency_s);
}

Topology Topology::ring(NodeId n, BytesPerSecond bandwidth_Bps, Seconds latency_s) {
  return grid(TopologyKind::ring, 1, n, bandwidth_Bps, latency_s);
}

Topology Topology::mesh(NodeId rows, NodeId cols, BytesPerSecond bandwidth_Bps,
                        Seconds latency_s) {
  return grid(TopologyKind::mesh, rows, cols, bandwidth_Bps, latency_s);
}

Topology Topology::torus(NodeId rows, NodeId cols, BytesPerSecond bandwidth_Bps,
                         Seconds latency_s) {
  return grid(TopologyKind::torus, rows, cols, bandwidth_Bps, latency_s);
}

// ---------------------------------------------------------------- queries

std::string Topology::name() const {
  if (!display_.empty()) return display_;
  switch (kind_) {
    case TopologyKind::line:
    case TopologyKind::ring: return cat(to_string(kind_), "(", cols_, ")");
    case TopologyKind::mesh:
    case TopologyKind::torus:
      return cat(to_string(kind_), "(", rows_, "x", cols_, ")");
    case TopologyKind::custom: break;
    case TopologyKind::cluster:
      return sockets() > 1 ? cat("cluster(", cluster_nodes(), " nodes x ", sockets(),
                                 " sockets x ", ppn() / sockets(), ")")
                           : cat("cluster(", cluster_nodes(), " nodes x ", ppn(), ")");
  }
  auto count = [](std::int64_t n, const char* noun) {
    return cat(n, " ", noun, n == 1 ? "" : "s");
  };
  const NodeId routers = num_nodes_ - num_endpoints_;
  std::string s = "custom(" + count(num_endpoints_, "endpoint") + ", ";
  if (routers > 0) s += count(routers, "router") + ", ";
  return s + count(num_links_, "link") + ")";
}

void Topology::check_endpoint(NodeId node, const char* fn, const char* arg) const {
  if (node < 0 || node >= num_endpoints_) {
    throw std::out_of_range(cat(fn, ": ", arg, " = ", node,
                                " is not an endpoint id in [0, ", num_endpoints_, ")"));
  }
}

void Topology::check_node(NodeId node, const char* fn, const char* arg) const {
  if (node < 0 || node >= num_nodes_) {
    throw std::out_of_range(
        cat(fn, ": ", arg, " = ", node, " is not a node id in [0, ", num_nodes_, ")"));
  }
}

std::pair<NodeId, NodeId> Topology::coords(NodeId node) const {
  if (stores_links()) {
    throw std::invalid_argument(cat("coords: a ", kind(), " topology has no grid coordinates"));
  }
  check_node(node, "coords", "node");
  return {node / cols_, node % cols_};
}

NodeId Topology::node_at(NodeId row, NodeId col) const {
  if (stores_links()) {
    throw std::invalid_argument(cat("node_at: a ", kind(), " topology has no grid coordinates"));
  }
  if (row < 0 || row >= rows_) {
    throw std::out_of_range(
        cat("node_at: row = ", row, " is out of range [0, ", rows_, ")"));
  }
  if (col < 0 || col >= cols_) {
    throw std::out_of_range(
        cat("node_at: col = ", col, " is out of range [0, ", cols_, ")"));
  }
  return row * cols_ + col;
}

// Grid link ids (see the header): the west link at (r, c) is the reverse of the
// east edge that starts one column to the left, likewise north/south.
// The inverse of the id formulas: find the block (east, west, south, north)
// and the edge within it, then orient the edge.
Link Topology::link(LinkId id) const {
  if (id < 0 || id >= num_links_) {
    throw std::out_of_range(
        cat("link: id = ", id, " is out of range [0, ", num_links_, ")"));
  }
  if (kind_ == TopologyKind::cluster) return cluster_link(id);
  if (stores_links()) return custom_->links[id];
  const LinkId per_x = rows_ * east_per_row_;  // east links = west links
  const LinkId per_y = south_per_col_ * cols_;
  NodeId r0, c0, r1, c1;  // the edge: start and end
  bool reverse;
  if (id < 2 * per_x) {
    reverse = id >= per_x;
    const LinkId e = reverse ? id - per_x : id;
    r0 = r1 = e / east_per_row_;
    c0 = e % east_per_row_;
    c1 = (c0 + 1) % cols_;
  } else {
    const LinkId k = id - 2 * per_x;
    reverse = k >= per_y;
    const LinkId e = reverse ? k - per_y : k;
    r0 = e / cols_;
    c0 = c1 = e % cols_;
    r1 = (r0 + 1) % rows_;
  }
  NodeId a = r0 * cols_ + c0, b = r1 * cols_ + c1;
  if (reverse) std::swap(a, b);
  return Link{a, b, bandwidth_Bps_, latency_s_};
}

std::vector<Link> Topology::links() const {
  if (kind_ == TopologyKind::custom) return custom_->links;
  std::vector<Link> out;
  out.reserve(static_cast<std::size_t>(num_links_));
  for (LinkId i = 0; i < num_links_; ++i) out.push_back(link(i));
  return out;
}

// Stored kinds: a binary search in the sorted (src, dst) keys. Grids: v must
// be a neighbour of u in the same row or column, possibly across the wrap.
LinkId Topology::link_id(NodeId u, NodeId v) const {
  check_node(u, "link_id", "u");
  check_node(v, "link_id", "v");
  if (u == v) return -1;
  if (stores_links()) {
    const auto& bp = custom_->pairs(num_links_, [this](LinkId i) { return link(i); });
    const std::int64_t key = pair_key(u, v);
    auto it = std::lower_bound(bp.begin(), bp.end(), std::make_pair(key, LinkId{0}));
    return (it != bp.end() && it->first == key) ? it->second : -1;
  }
  const NodeId ru = u / cols_, cu = u % cols_, rv = v / cols_, cv = v % cols_;
  if (ru == rv) {
    const NodeId right = wrap_x_ ? (cu + 1) % cols_ : cu + 1;
    const NodeId left = wrap_x_ ? (cu + cols_ - 1) % cols_ : cu - 1;
    if (cv == right) return east_id(ru, cu);
    if (cv == left) return west_id(ru, cu);
  } else if (cu == cv) {
    const NodeId down = wrap_y_ ? (ru + 1) % rows_ : ru + 1;
    const NodeId up = wrap_y_ ? (ru + rows_ - 1) % rows_ : ru - 1;
    if (rv == down) return south_id(ru, cu);
    if (rv == up) return north_id(ru, cu);
  }
  return -1;
}

// The one routing function every consumer uses (cost model, metrics,
// simulator), so they all agree on paths. Appends instead of returning a
// vector: the simulator and the metrics call it for millions of pairs and
// reuse one buffer.
void Topology::append_route(NodeId src, NodeId dst, std::vector<LinkId>& out) const {
  check_endpoint(src, "route", "src");
  check_endpoint(dst, "route", "dst");
  if (src == dst) return;
  if (kind_ == TopologyKind::cluster) {
    cluster_route(src, dst, out);
    return;
  }
  std::int64_t count = 0;
  if (const LinkId* first = routed(src, dst, &count)) {
    if (count == 0) throw std::invalid_argument(cat("no route from ", src, " to ", dst));
    out.insert(out.end(), first, first + count);
    return;
  }
  if (kind_ == TopologyKind::custom) {
    custom_append(src, dst, out);  // star, next-hop table or search
    return;
  }
  // Grids: X first, then Y (dimension order, see the header).
  NodeId r = src / cols_, c = src % cols_;
  const NodeId rt = dst / cols_, ct = dst % cols_;
  const auto [nx, dx] = dim_steps(c, ct, cols_, wrap_x_);
  for (NodeId i = 0; i < nx; ++i) {
    if (dx > 0) {
      out.push_back(east_id(r, c));
      c = (c + 1) % cols_;
    } else {
      out.push_back(west_id(r, c));
      c = (c + cols_ - 1) % cols_;
    }
  }
  const auto [ny, dy] = dim_steps(r, rt, rows_, wrap_y_);
  for (NodeId i = 0; i < ny; ++i) {
    if (dy > 0) {
      out.push_back(south_id(r, c));
      r = (r + 1) % rows_;
    } else {
      out.push_back(north_id(r, c));
      r = (r + rows_ - 1) % rows_;
    }
  }
}

std::vector<LinkId> Topology::route(NodeId src, NodeId dst) const {
  std::vector<LinkId> out;
  if (!stores_links()) {
    // Reserve the exact length; the extra validation is cheap and the error
    // messages are the same as append_route's.
    check_endpoint(src, "route", "src");
    check_endpoint(dst, "route", "dst");
    out.reserve(static_cast<std::size_t>(hops(src, dst)));
  }
  append_route(src, dst, out);
  return out;
}

// Route lengths without building routes: closed forms for grids, clusters
// and stars, the table for explicit routes, the next-hop walk or the BFS
// distance otherwise (the greedy walk of append_route takes exactly that
// many hops).
std::int32_t Topology::hops(NodeId src, NodeId dst) const {
  check_endpoint(src, "hops", "src");
  check_endpoint(dst, "hops", "dst");
  if (stores_links()) {
    if (src == dst) return 0;
    if (kind_ == TopologyKind::cluster) {
      const int loc = locality(src, dst);
      return loc == 0 ? 2 : loc == 1 ? 4 : (sockets() > 1 && !cluster_->lanes ? 6 : 4);
    }
    std::int64_t count = 0;
    if (routed(src, dst, &count)) {
      if (count == 0) throw std::invalid_argument(cat("no route from ", src, " to ", dst));
      return static_cast<std::int32_t>(count);
    }
    return custom_hops(src, dst);
  }
  return dim_steps(src % cols_, dst % cols_, cols_, wrap_x_).first +
         dim_steps(src / cols_, dst / cols_, rows_, wrap_y_).first;
}

std::vector<std::int32_t> Topology::hops_to(NodeId dst) const {
  check_endpoint(dst, "hops_to", "dst");
  std::vector<std::int32_t> out(static_cast<std::size_t>(num_endpoints_));
  if (kind_ == TopologyKind::cluster) {
    for (NodeId a = 0; a < num_endpoints_; ++a) out[a] = hops(a, dst);
  } else if (custom_ && !custom_->route_offsets.empty()) {
    for (NodeId a = 0; a < num_endpoints_; ++a) {
      std::int64_t count = 0;
      routed(a, dst, &count);
      out[a] = a == dst ? 0 : count == 0 ? -1 : static_cast<std::int32_t>(count);
    }
  } else if (is_star()) {
    for (NodeId a = 0; a < num_endpoints_; ++a) out[a] = a == dst ? 0 : 2;
  } else if (kind_ == TopologyKind::custom && !custom_->next_hop) {
    const auto& dist = dist_to(dst);
    for (NodeId a = 0; a < num_endpoints_; ++a) {
      out[a] = dist[a] == kUnreached ? -1 : std::int32_t{dist[a]};
    }
  } else if (kind_ == TopologyKind::custom) {
    const std::uint16_t* col = next_hop_column(dst);
    for (NodeId a = 0; a < num_endpoints_; ++a) {
      out[a] = a == dst ? 0 : col[a] == kNoHop ? -1 : custom_hops(a, dst);
    }
  } else {
    // hops separate by dimension: tabulate each once, then add.
    std::vector<std::int32_t> hx(static_cast<std::size_t>(cols_));
    std::vector<std::int32_t> hy(static_cast<std::size_t>(rows_));
    for (NodeId c = 0; c < cols_; ++c) {
      hx[c] = dim_steps(c, dst % cols_, cols_, wrap_x_).first;
    }
    for (NodeId r = 0; r < rows_; ++r) {
      hy[r] = dim_steps(r, dst / cols_, rows_, wrap_y_).first;
    }
    for (NodeId r = 0, a = 0; r < rows_; ++r) {
      for (NodeId c = 0; c < cols_; ++c, ++a) out[a] = hy[r] + hx[c];
    }
  }
  return out;
}

// The explicit route of (a, b), or nullptr when the topology has no route
// table (routes are then shortest paths). count = 0 means "no route".
const LinkId* Topology::routed(NodeId a, NodeId b, std::int64_t* count) const {
  if (!custom_ || custom_->route_offsets.empty()) return nullptr;
  const std::int64_t k = std::int64_t{a} * num_endpoints_ + b;
  const std::int64_t lo = custom_->route_offsets[k];
  *count = custom_->route_offsets[k + 1] - lo;
  return custom_->route_links.data() + lo;
}

}  // namespace wafercoll
