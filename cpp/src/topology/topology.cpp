#include "wafercoll/topology/topology.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace wafercoll {

namespace {

constexpr std::uint16_t kUnreached = std::numeric_limits<std::uint16_t>::max();
static_assert(Topology::kMaxCustomNodes < kUnreached,
              "hop distances of custom topologies must fit in uint16 below kUnreached");

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

void check_size(const char* fn, const char* arg, NodeId value) {
  if (value < 1) {
    throw std::invalid_argument(cat(fn, ": ", arg, " must be >= 1, got ", value));
  }
}

// `where` prefixes the parameter name, e.g. "links[3]." for per-link values.
void check_bandwidth(const char* fn, const std::string& where, BytesPerSecond bw) {
  if (!(bw > 0.0) || !std::isfinite(bw)) {
    throw std::invalid_argument(cat(fn, ": ", where,
                                    "bandwidth_Bps must be > 0 and finite, got ", bw));
  }
}

void check_latency(const char* fn, const std::string& where, Seconds lat) {
  if (!(lat >= 0.0) || !std::isfinite(lat)) {
    throw std::invalid_argument(cat(fn, ": ", where,
                                    "latency_s must be >= 0 and finite, got ", lat));
  }
}

std::int64_t pair_key(NodeId u, NodeId v) {
  return (static_cast<std::int64_t>(u) << 32) | static_cast<std::uint32_t>(v);
}

}  // namespace

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

// Everything a custom topology stores. Adjacency is CSR with each node's links
// in increasing id order, which is what makes "lowest link id" tie-breaking a
// simple first-match scan.
struct Topology::CustomData {
  std::vector<Link> links;
  std::vector<LinkId> out_offsets, out_links;  // by src
  std::vector<LinkId> in_offsets, in_links;    // by dst
  std::vector<std::pair<std::int64_t, LinkId>> by_pair;  // sorted (src,dst) keys

  // Lazy routing tables, one per destination endpoint. The outer vector is
  // sized once; an inner table is written once under the lock and never
  // modified afterwards, so a reference to it stays valid without the lock.
  std::mutex mutex;
  std::vector<std::vector<std::uint16_t>> dist_to;

  // Explicit route table (custom_routed): empty when routes are shortest paths.
  std::vector<std::int64_t> route_offsets;
  std::vector<LinkId> route_links;
};

struct Topology::ClusterData {
  NodeId nodes = 0, ppn = 0, sockets = 0;
  bool lanes = false;                          // per-process links to the NIC
  std::vector<NodeId> rank_node, rank_socket;  // socket: global index
};

// ---------------------------------------------------------------- families

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

namespace {

// Checks links and indexes them: by (src, dst) pair and CSR adjacency (with
// `adjacency`), each node's lists in increasing id order.
template <typename Data>
void index_links(const char* fn, NodeId n, std::vector<Link>& links, Data& data,
                 bool adjacency) {
  if (links.size() > static_cast<std::size_t>(std::numeric_limits<LinkId>::max())) {
    throw std::invalid_argument(cat(fn, ": too many links (", links.size(), ")"));
  }
  const auto num_links = static_cast<LinkId>(links.size());
  data.by_pair.reserve(links.size());
  for (LinkId i = 0; i < num_links; ++i) {
    const Link& l = links[i];
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
    data.by_pair.emplace_back(pair_key(l.src, l.dst), i);
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
  if (!adjacency) return;
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

}  // namespace

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
  index_links(fn, n, links, *data, true);
  data->dist_to.resize(static_cast<std::size_t>(num_endpoints));
  Topology t;
  t.kind_ = TopologyKind::custom;
  t.num_endpoints_ = num_endpoints;
  t.num_nodes_ = n;
  t.num_links_ = static_cast<LinkId>(links.size());
  data->links = std::move(links);
  t.custom_ = std::move(data);
  return t;
}

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
  t.custom_->dist_to.clear();  // not used with an explicit table
  return t;
}

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
  data->rank_node = std::move(rank_node);

  const auto P = static_cast<NodeId>(p);
  const NodeId S = sockets > 1 ? nodes * sockets : 0;
  const NodeId N = nodes;
  const NodeId router0 = P + S, fabric = P + S + N;
  std::vector<Link> links;
  links.reserve(static_cast<std::size_t>(2 * (p + S + N) + (lanes ? 2 * p : 0)));
  auto sw = [&](NodeId r) {
    return sockets > 1 ? P + data->rank_socket[r] : router0 + data->rank_node[r];
  };
  const auto proc = static_cast<int>(ClusterLinkClass::process);
  const auto sock = static_cast<int>(ClusterLinkClass::socket);
  const auto nic = static_cast<int>(ClusterLinkClass::nic);
  for (NodeId r = 0; r < P; ++r) {
    links.push_back({r, sw(r), bandwidth_Bps[proc], latency_s[proc]});
  }
  for (NodeId r = 0; r < P; ++r) {
    links.push_back({sw(r), r, bandwidth_Bps[proc], latency_s[proc]});
  }
  for (NodeId s = 0; s < S; ++s) {
    links.push_back({P + s, router0 + s / sockets, bandwidth_Bps[sock], latency_s[sock]});
  }
  for (NodeId s = 0; s < S; ++s) {
    links.push_back({router0 + s / sockets, P + s, bandwidth_Bps[sock], latency_s[sock]});
  }
  // With lanes the NIC links leave from a node's NIC switch (ids after the
  // fabric), which only the lanes reach; without, from the node router.
  const NodeId nic0 = lanes ? fabric + 1 : router0;
  for (NodeId n = 0; n < N; ++n) {
    links.push_back({nic0 + n, fabric, bandwidth_Bps[nic], latency_s[nic]});
  }
  for (NodeId n = 0; n < N; ++n) {
    links.push_back({fabric, nic0 + n, bandwidth_Bps[nic], latency_s[nic]});
  }
  if (lanes) {
    const auto lane = static_cast<int>(ClusterLinkClass::lane);
    for (NodeId r = 0; r < P; ++r) {
      links.push_back({r, nic0 + data->rank_node[r], bandwidth_Bps[lane], latency_s[lane]});
    }
    for (NodeId r = 0; r < P; ++r) {
      links.push_back({nic0 + data->rank_node[r], r, bandwidth_Bps[lane], latency_s[lane]});
    }
  }
  const NodeId num_nodes = lanes ? fabric + 1 + N : fabric + 1;
  auto store = std::make_shared<CustomData>();
  index_links(fn, num_nodes, links, *store, false);
  Topology t;
  t.kind_ = TopologyKind::cluster;
  t.num_endpoints_ = P;
  t.num_nodes_ = num_nodes;
  t.num_links_ = static_cast<LinkId>(links.size());
  store->links = std::move(links);
  t.custom_ = std::move(store);
  t.cluster_ = std::move(data);
  return t;
}

Topology Topology::with_labels(std::string family, std::string display) const {
  if (kind_ != TopologyKind::custom) {
    throw std::invalid_argument("with_labels: only custom topologies take labels");
  }
  Topology t = *this;
  t.family_ = std::move(family);
  t.display_ = std::move(display);
  return t;
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

int Topology::locality(NodeId a, NodeId b) const {
  if (!cluster_) throw std::invalid_argument("locality: not a cluster topology");
  check_endpoint(a, "locality", "a");
  check_endpoint(b, "locality", "b");
  if (cluster_->rank_node[a] != cluster_->rank_node[b]) return 2;
  return cluster_->rank_socket[a] == cluster_->rank_socket[b] ? 0 : 1;
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
LinkId Topology::east_id(NodeId r, NodeId c) const { return r * east_per_row_ + c; }

LinkId Topology::west_id(NodeId r, NodeId c) const {
  return rows_ * east_per_row_ + r * east_per_row_ + (c == 0 ? cols_ - 1 : c - 1);
}

LinkId Topology::south_id(NodeId r, NodeId c) const {
  return 2 * rows_ * east_per_row_ + r * cols_ + c;
}

LinkId Topology::north_id(NodeId r, NodeId c) const {
  return 2 * rows_ * east_per_row_ + south_per_col_ * cols_ +
         (r == 0 ? rows_ - 1 : r - 1) * cols_ + c;
}

Link Topology::link(LinkId id) const {
  if (id < 0 || id >= num_links_) {
    throw std::out_of_range(
        cat("link: id = ", id, " is out of range [0, ", num_links_, ")"));
  }
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
  if (stores_links()) return custom_->links;
  std::vector<Link> out;
  out.reserve(static_cast<std::size_t>(num_links_));
  for (LinkId i = 0; i < num_links_; ++i) out.push_back(link(i));
  return out;
}

LinkId Topology::link_id(NodeId u, NodeId v) const {
  check_node(u, "link_id", "u");
  check_node(v, "link_id", "v");
  if (u == v) return -1;
  if (stores_links()) {
    const auto& bp = custom_->by_pair;
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

// Steps from `from` to `to` along one dimension and their direction. Without
// wrap the direction is forced; with wrap the shorter way wins and an exact
// half (forward * 2 == size) goes forward: the tie rule of the header.
std::pair<NodeId, int> Topology::dim_steps(NodeId from, NodeId to, NodeId size,
                                           bool wrap) {
  if (!wrap) return {std::abs(to - from), to >= from ? 1 : -1};
  const NodeId forward = (to - from + size) % size;
  if (2 * forward <= size) return {forward, 1};
  return {size - forward, -1};
}

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
    const auto& dist = dist_to(dst);
    if (dist[src] == kUnreached) {
      throw std::invalid_argument(cat("no route from ", src, " to ", dst));
    }
    const CustomData& d = *custom_;
    // Greedy walk: the first (lowest-id) link that gets one hop closer. It
    // always exists because dist was computed over the same links.
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
    return;
  }
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
    const std::uint16_t d = dist_to(dst)[src];
    if (d == kUnreached) {
      throw std::invalid_argument(cat("no route from ", src, " to ", dst));
    }
    return d;
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
  } else if (kind_ == TopologyKind::custom) {
    const auto& dist = dist_to(dst);
    for (NodeId a = 0; a < num_endpoints_; ++a) {
      out[a] = dist[a] == kUnreached ? -1 : std::int32_t{dist[a]};
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

// Reverse BFS from dst over in-links: dist[v] = hops of a shortest v -> dst
// path, through routers and endpoints alike.
const std::vector<std::uint16_t>& Topology::dist_to(NodeId dst) const {
  CustomData& d = *custom_;
  std::lock_guard<std::mutex> lock(d.mutex);
  auto& dist = d.dist_to[dst];
  if (!dist.empty()) return dist;
  std::vector<std::uint16_t> fresh(static_cast<std::size_t>(num_nodes_), kUnreached);
  std::deque<NodeId> queue{dst};
  fresh[dst] = 0;
  while (!queue.empty()) {
    const NodeId v = queue.front();
    queue.pop_front();
    for (LinkId k = d.in_offsets[v]; k < d.in_offsets[v + 1]; ++k) {
      const NodeId u = d.links[d.in_links[k]].src;
      if (fresh[u] == kUnreached) {
        fresh[u] = static_cast<std::uint16_t>(fresh[v] + 1);
        queue.push_back(u);
      }
    }
  }
  dist = std::move(fresh);
  return dist;
}

const LinkId* Topology::routed(NodeId a, NodeId b, std::int64_t* count) const {
  if (!custom_ || custom_->route_offsets.empty()) return nullptr;
  const std::int64_t k = std::int64_t{a} * num_endpoints_ + b;
  const std::int64_t lo = custom_->route_offsets[k];
  *count = custom_->route_offsets[k + 1] - lo;
  return custom_->route_links.data() + lo;
}

// The link ids of the header comment, from each rank's node and socket.
void Topology::cluster_route(NodeId a, NodeId b, std::vector<LinkId>& out) const {
  const ClusterData& c = *cluster_;
  const NodeId P = num_endpoints_;
  const NodeId S = c.sockets > 1 ? c.nodes * c.sockets : 0;
  const NodeId N = c.nodes;
  const NodeId na = c.rank_node[a], nb = c.rank_node[b];
  const NodeId sa = c.rank_socket[a], sb = c.rank_socket[b];
  if (c.lanes && na != nb) {
    const LinkId lanes0 = 2 * P + 2 * S + 2 * N;
    out.push_back(lanes0 + a);                      // lane up
    out.push_back(2 * P + 2 * S + na);              // NIC up
    out.push_back(2 * P + 2 * S + N + nb);          // NIC down
    out.push_back(lanes0 + P + b);                  // lane down
    return;
  }
  out.push_back(a);  // process up
  if (na == nb && sa == sb) {
    out.push_back(P + b);
    return;
  }
  if (S > 0) out.push_back(2 * P + sa);  // socket up
  if (na != nb) {
    out.push_back(2 * P + 2 * S + na);      // NIC up
    out.push_back(2 * P + 2 * S + N + nb);  // NIC down
  }
  if (S > 0) out.push_back(2 * P + S + sb);  // socket down
  out.push_back(P + b);                      // process down
}

}  // namespace wafercoll
