// Route and trie preparation for the simulator: see routes.hpp for the model.
//
// Everything here runs once, before the first event. The tries are built in
// transfer order, and within a transfer in destination order, so node
// numbers (and with them the local keys that break event ties) depend only
// on the schedule and the topology's routes.
#include "wafercoll/simulate/routes.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace wafercoll::sim {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument(msg);
}

// Routes where a hidden router is an end (see routes.hpp): BFS distances to
// each destination node used, kept for the preparation's lifetime.
class NodeRoutes {
 public:
  explicit NodeRoutes(const Topology& topo) : topo_(topo) {}

  // Appends the links from node a to node b (a != b); throws when there is none.
  void append(NodeId a, NodeId b, std::vector<LinkId>& out) {
    if (topo_.is_endpoint(a) && topo_.is_endpoint(b)) {
      topo_.append_route(a, b, out);
      return;
    }
    const std::vector<std::int32_t>& dist = dist_to(b);
    if (dist[a] < 0) no_route(a, b);
    for (NodeId u = a; u != b;) {
      for (LinkId k = out_off_[u]; k < out_off_[u + 1]; ++k) {
        const NodeId v = links_[out_[k]].dst;
        if (dist[v] >= 0 && dist[v] + 1 == dist[u] && relays(v, b)) {
          out.push_back(out_[k]);
          u = v;
          break;
        }
      }
    }
  }

  std::int32_t hops(NodeId a, NodeId b, bool multipath) {
    if (!multipath && topo_.is_endpoint(a) && topo_.is_endpoint(b)) return topo_.hops(a, b);
    return dist_to(b)[a];
  }

  // The out-links of u one hop nearer b, in increasing link id.
  void nearer(NodeId u, NodeId b, std::vector<LinkId>& out) {
    const std::vector<std::int32_t>& dist = dist_to(b);
    out.clear();
    for (LinkId k = out_off_[u]; k < out_off_[u + 1]; ++k) {
      const NodeId v = links_[out_[k]].dst;
      if (dist[v] >= 0 && dist[v] + 1 == dist[u] && relays(v, b)) out.push_back(out_[k]);
    }
  }

  const Link& link(LinkId l) const { return links_[l]; }

  // Whether a path to b may pass node v: where the topology has hidden
  // routers, only they relay (an endpoint, a GPU, does not forward).
  bool relays(NodeId v, NodeId b) const {
    return v == b || v >= topo_.num_endpoints() || topo_.num_nodes() == topo_.num_endpoints();
  }

  // Shortest paths in hops from a to b, saturated at 2^31 - 1 (computed for
  // every a at once, nearest first, and kept per b).
  std::int32_t paths(NodeId a, NodeId b) {
    std::vector<std::int32_t>& np = paths_[b];
    if (np.empty()) {
      const std::vector<std::int32_t>& dist = dist_to(b);
      const NodeId n = topo_.num_nodes();
      std::vector<NodeId> order;
      for (NodeId u = 0; u < n; ++u)
        if (dist[u] >= 0) order.push_back(u);
      std::stable_sort(order.begin(), order.end(),
                       [&](NodeId x, NodeId y) { return dist[x] < dist[y]; });
      np.assign(static_cast<std::size_t>(n), 0);
      np[b] = 1;
      std::vector<LinkId> opts;
      for (const NodeId u : order) {
        if (u == b) continue;
        nearer(u, b, opts);
        std::int64_t sum = 0;
        for (const LinkId l : opts) sum += np[links_[l].dst];
        np[u] = static_cast<std::int32_t>(
            std::min<std::int64_t>(sum, std::numeric_limits<std::int32_t>::max()));
      }
    }
    return np[a];
  }

  // Equal-cost multipath (NetworkModel::ecmp): a shortest path from a to b,
  // the next link at every node chosen by the flow's hash.
  void append_ecmp(NodeId a, NodeId b, std::uint64_t flow, std::vector<LinkId>& out) {
    const std::vector<std::int32_t>& dist = dist_to(b);
    if (dist[a] < 0) no_route(a, b);
    const std::uint64_t h = splitmix64(flow);
    for (NodeId u = a; u != b;) {
      std::int32_t count = 0;
      for (LinkId k = out_off_[u]; k < out_off_[u + 1]; ++k) {
        const NodeId v = links_[out_[k]].dst;
        if (dist[v] >= 0 && dist[v] + 1 == dist[u] && relays(v, b)) ++count;
      }
      auto pick = static_cast<std::int32_t>(
          (h ^ splitmix64(static_cast<std::uint64_t>(u))) % static_cast<std::uint64_t>(count));
      for (LinkId k = out_off_[u]; k < out_off_[u + 1]; ++k) {
        const NodeId v = links_[out_[k]].dst;
        if (dist[v] >= 0 && dist[v] + 1 == dist[u] && relays(v, b) && pick-- == 0) {
          out.push_back(out_[k]);
          u = v;
          break;
        }
      }
    }
  }

  // Steele, Lea and Flood's SplitMix64 finaliser (OOPSLA 2014).
  static std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }

 private:
  [[noreturn]] static void no_route(NodeId a, NodeId b) {
    throw std::invalid_argument("no route from node " + std::to_string(a) + " to node " +
                                std::to_string(b));
  }

  const std::vector<std::int32_t>& dist_to(NodeId b) {
    if (links_.empty()) index();
    auto& dist = dist_[b];
    if (!dist.empty()) return dist;
    const NodeId n = topo_.num_nodes();
    dist.assign(static_cast<std::size_t>(n), -1);
    std::vector<NodeId> queue{b};
    dist[b] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const NodeId v = queue[head];
      if (!relays(v, b)) continue;  // a source, but no way through
      for (LinkId k = in_off_[v]; k < in_off_[v + 1]; ++k) {
        const NodeId u = links_[in_[k]].src;
        if (dist[u] < 0) {
          dist[u] = dist[v] + 1;
          queue.push_back(u);
        }
      }
    }
    return dist;
  }

  // Out- and in-links of every node in increasing link id (counting sort).
  void index() {
    links_ = topo_.links();
    const NodeId n = topo_.num_nodes();
    out_off_.assign(static_cast<std::size_t>(n) + 1, 0);
    in_off_.assign(static_cast<std::size_t>(n) + 1, 0);
    for (const Link& l : links_) {
      ++out_off_[l.src + 1];
      ++in_off_[l.dst + 1];
    }
    for (NodeId u = 0; u < n; ++u) {
      out_off_[u + 1] += out_off_[u];
      in_off_[u + 1] += in_off_[u];
    }
    out_.resize(links_.size());
    in_.resize(links_.size());
    std::vector<LinkId> fo(out_off_.begin(), out_off_.end() - 1);
    std::vector<LinkId> fi(in_off_.begin(), in_off_.end() - 1);
    for (LinkId k = 0; k < static_cast<LinkId>(links_.size()); ++k) {
      out_[fo[links_[k].src]++] = k;
      in_[fi[links_[k].dst]++] = k;
    }
  }

  const Topology& topo_;
  std::vector<Link> links_;
  std::vector<LinkId> out_off_, out_, in_off_, in_;
  std::map<NodeId, std::vector<std::int32_t>> dist_;
  std::map<NodeId, std::vector<std::int32_t>> paths_;
};

// The stages a packet of a transfer from endpoint `src` crosses to endpoint
// `dst`, in order. With one channel per port the port stages are known now:
// stage L + src (injection at src) and L + E + dst (ejection at dst); with
// more channels they are placeholders resolved when the first packet
// arrives.
// A switch rank's router has no ports: its links are its stages.
// With ECMP, `flow` (transfer * 2^32 + destination slot) picks the path.
void stage_sequence(const Topology& topo, const NetworkModel& net, NodeId src, NodeId dst,
                    std::uint64_t flow, NodeRoutes& routes, std::vector<LinkId>& route,
                    std::vector<std::int32_t>& seq) {
  const LinkId L = topo.num_links();
  const NodeId E = topo.num_endpoints();
  const bool fixed_ports = net.ports == 1;
  seq.clear();
  if (net.ports > 0 && src < E)
    seq.push_back(fixed_ports ? static_cast<std::int32_t>(L + src) : kInjPort);
  route.clear();
  if (net.ecmp)
    routes.append_ecmp(src, dst, flow, route);
  else
    routes.append(src, dst, route);
  seq.insert(seq.end(), route.begin(), route.end());
  if (net.ports > 0 && dst < E)
    seq.push_back(fixed_ports ? static_cast<std::int32_t>(L + E + dst) : kEjPort);
}

// Adds one destination's stage sequence to transfer t's trie (whose nodes
// start at `first`), sharing the longest prefix already there, and marks the
// last node as ending destination slot `slot`. Children are searched by
// resource; an ejection stage is never shared (one per destination), so two
// destinations on one endpoint (impossible with distinct placements, but
// cheap to rule out) would still get their own.
void insert_path(StageTries& tries, TransferId t, std::int64_t first,
                 const std::vector<std::int32_t>& seq, std::int64_t slot,
                 std::int32_t first_ejection_stage, bool fixed_ports) {
  BigVector<TrieNode>& nodes = tries.nodes;
  std::int32_t parent = -1;
  for (const std::int32_t res : seq) {
    std::int32_t c = -1;
    if (res != kEjPort && !(fixed_ports && res >= first_ejection_stage)) {
      c = parent < 0 ? (nodes.size() > static_cast<std::size_t>(first)
                            ? static_cast<std::int32_t>(first)
                            : -1)
                     : nodes[parent].first_child;
      while (c >= 0 && nodes[c].resource != res) c = nodes[c].next_sibling;
    }
    if (c < 0) {
      if (nodes.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw std::invalid_argument("too many stages to simulate");
      c = static_cast<std::int32_t>(nodes.size());
      TrieNode nd{res, -1, -1, -1, (t << 2) | (parent < 0 ? 1 : 0)};
      if (parent < 0) {
        // Top-level siblings chain from the stream's first node, in
        // creation order.
        if (c != first) {
          std::int32_t x = static_cast<std::int32_t>(first);
          while (nodes[x].next_sibling >= 0) x = nodes[x].next_sibling;
          nodes.push_back(nd);
          nodes[x].next_sibling = c;
        } else {
          nodes.push_back(nd);
        }
      } else {
        // Children are prepended: the newest child is first_child.
        nd.next_sibling = nodes[parent].first_child;
        nodes.push_back(nd);
        nodes[parent].first_child = c;
      }
    }
    parent = c;
  }
  nodes[parent].term = static_cast<std::int32_t>(slot);
}

// Dealing weights of the out-links `opts` (simulate.hpp, NetworkModel::spray):
// equal under one bandwidth for every link, else in proportion to the
// links' bandwidths as the smallest integers (a multiplier up to 8 of each
// link's ratio to the slowest) that state it exactly, or eighths of the
// slowest rounded when none does; at most kMaxSprayWeight each (a link
// that much faster than the slowest gets that many turns).
constexpr double kMaxSprayWeight = 1024.0;

std::vector<std::int32_t> spray_weights(const std::vector<LinkId>& opts, NodeRoutes& routes,
                                        const NetworkModel& net) {
  std::vector<std::int32_t> w(opts.size(), 1);
  if (net.bandwidth_Bps > 0.0) return w;
  double lo = std::numeric_limits<double>::infinity();
  for (const LinkId l : opts) lo = std::min(lo, routes.link(l).bandwidth_Bps);
  auto weight = [&](LinkId l, std::int32_t m) {
    return std::min(routes.link(l).bandwidth_Bps / lo * m, kMaxSprayWeight);
  };
  for (std::int32_t m = 1; m <= 8; ++m) {
    bool exact = true;
    for (std::size_t i = 0; i < opts.size(); ++i) {
      const double x = weight(opts[i], m);
      w[i] = static_cast<std::int32_t>(std::lround(x));
      exact = exact && std::abs(x - static_cast<double>(w[i])) <= 1e-9 * x;
    }
    if (exact) return w;
  }
  for (std::size_t i = 0; i < opts.size(); ++i)
    w[i] = std::max<std::int32_t>(1, static_cast<std::int32_t>(std::lround(weight(opts[i], 8))));
  return w;
}

// Builds the tries of sprayed transfers (routes.hpp, SprayChoice): every
// packet's path, found by dealing it at each node where several links lead
// one hop nearer, shares the stages it has in common with earlier packets.
class SprayBuilder {
 public:
  SprayBuilder(const Topology& topo, const NetworkModel& net, NodeRoutes& routes,
               StageTries& tries)
      : net_(net), routes_(routes), tries_(tries), L_(topo.num_links()),
        E_(topo.num_endpoints()), N_(topo.num_nodes()) {}

  // Transfer t (trie from node `first`) of n packets from node a to node b,
  // ending destination slot `slot`; `flow` rotates the dealing.
  void add(TransferId t, std::int64_t first, NodeId a, NodeId b, std::int64_t n,
           std::uint64_t flow, std::int64_t slot) {
    const bool fixed_ports = net_.ports == 1;
    const std::uint64_t h = NodeRoutes::splitmix64(flow);
    SprayChoice& root = tries_.spray_root[t];
    for (std::int64_t k = 0; k < n; ++k) {
      std::int32_t parent = -1, depth = 0;
      std::int64_t stride = 1;
      auto step = [&](std::int32_t res) {
        parent = child(t, first, parent, res);
        ++depth;
      };
      if (net_.ports > 0 && a < E_) step(fixed_ports ? static_cast<std::int32_t>(L_ + a) : kInjPort);
      for (NodeId u = a; u != b;) {
        const auto [off, ways] = sequence(u, b);
        LinkId l = tries_.spray_seq[static_cast<std::size_t>(off)];
        if (ways > 1) {
          const auto rot = static_cast<std::int32_t>(
              (h ^ NodeRoutes::splitmix64(static_cast<std::uint64_t>(u))) %
              static_cast<std::uint64_t>(ways));
          const SprayChoice c{stride, ways, off, rot, 0};
          if (parent < 0) {
            root.stride = c.stride;
            root.ways = c.ways;
            root.seq_off = c.seq_off;
            root.rot = c.rot;
          } else {
            if (tries_.spray.size() <= static_cast<std::size_t>(parent))
              tries_.spray.resize(tries_.nodes.size());
            tries_.spray[parent] = c;
          }
          l = tries_.spray_link(c, k);
          // Beyond the packet count further quotients are all 0.
          stride = std::min<std::int64_t>(stride * ways, std::int64_t{1} << 40);
        }
        step(l);
        u = routes_.link(l).dst;
      }
      if (net_.ports > 0 && b < E_)
        step(fixed_ports ? static_cast<std::int32_t>(L_ + E_ + b) : kEjPort);
      tries_.nodes[parent].term = static_cast<std::int32_t>(slot);
      root.depth = depth;
    }
  }

 private:
  // The child of `parent` (-1: a first stage of t) on resource res, added
  // if there is none.
  std::int32_t child(TransferId t, std::int64_t first, std::int32_t parent, std::int32_t res) {
    BigVector<TrieNode>& nodes = tries_.nodes;
    const bool any = nodes.size() > static_cast<std::size_t>(first);
    std::int32_t c = parent >= 0 ? nodes[parent].first_child
                                 : (any ? static_cast<std::int32_t>(first) : -1);
    std::int32_t last = -1;
    for (; c >= 0; c = nodes[c].next_sibling) {
      if (nodes[c].resource == res) return c;
      last = c;
    }
    if (nodes.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw std::invalid_argument("too many stages to simulate");
    c = static_cast<std::int32_t>(nodes.size());
    nodes.push_back(TrieNode{res, -1, -1, -1, (t << 2) | 2 | (parent < 0 ? 1 : 0)});
    // Siblings in creation order, the first packet's first.
    if (last >= 0)
      nodes[last].next_sibling = c;
    else if (parent >= 0)
      nodes[parent].first_child = c;
    return c;
  }

  // The dealing sequence of node u towards b: smooth weighted round robin
  // over its nearer links (each turn, every link gains its weight and the
  // one with the most, the first on a tie, goes and loses the total); one
  // entry where a single link leads nearer.
  std::pair<std::int32_t, std::int32_t> sequence(NodeId u, NodeId b) {
    const std::int64_t key = static_cast<std::int64_t>(u) * N_ + b;
    auto it = seqs_.find(key);
    if (it != seqs_.end()) return it->second;
    routes_.nearer(u, b, opts_);
    const std::vector<std::int32_t> w = opts_.size() == 1
                                            ? std::vector<std::int32_t>{1}
                                            : spray_weights(opts_, routes_, net_);
    std::int64_t total = 0;
    for (const std::int32_t x : w) total += x;
    const auto off = static_cast<std::int32_t>(tries_.spray_seq.size());
    std::vector<std::int64_t> cur(w.size(), 0);
    for (std::int64_t j = 0; j < total; ++j) {
      std::size_t best = 0;
      for (std::size_t i = 0; i < w.size(); ++i) cur[i] += w[i];
      for (std::size_t i = 1; i < w.size(); ++i)
        if (cur[i] > cur[best]) best = i;
      cur[best] -= total;
      tries_.spray_seq.push_back(opts_[best]);
    }
    return seqs_[key] = {off, static_cast<std::int32_t>(total)};
  }

  const NetworkModel& net_;
  NodeRoutes& routes_;
  StageTries& tries_;
  LinkId L_;
  NodeId E_, N_;
  std::vector<LinkId> opts_;
  std::unordered_map<std::int64_t, std::pair<std::int32_t, std::int32_t>> seqs_;
};

}  // namespace

std::vector<NodeId> resolve_placement(const Schedule& s, const Topology& topo,
                                      const SimOptions& options) {
  const RankId P = s.num_ranks();
  const NodeId E = topo.num_endpoints();
  const NodeId N = topo.num_nodes();
  std::vector<NodeId> place;
  if (options.placement.empty()) {
    const NodeId room = s.has_switches() ? N : E;
    require(P <= room, "the schedule has " + std::to_string(P) + " ranks but topology " +
                           topo.name() + " has only " + std::to_string(room) +
                           (s.has_switches() ? " nodes" : " endpoints") +
                           "; use a topology with at least as many");
    place.resize(P);
    std::iota(place.begin(), place.end(), 0);
  } else {
    require(static_cast<std::int64_t>(options.placement.size()) == P,
            "placement must list one endpoint per rank (" + std::to_string(P) +
                "; a switch rank's: a hidden router), got " +
                std::to_string(options.placement.size()));
    place = options.placement;
  }
  // The messages are made only for a rank that fails (made for every rank,
  // with the topology's name, they drew about 7 % of the samples of
  // simulating recursive doubling on 262,144 ranks).
  std::vector<std::uint8_t> used(N, 0);
  for (RankId r = 0; r < P; ++r) {
    const NodeId e = place[r];
    const auto at = [&] { return "placement[" + std::to_string(r) + "] = " + std::to_string(e); };
    if (s.is_switch(r)) {
      if (e < E || e >= N)
        require(false, at() + ": rank " + std::to_string(r) +
                           " is a switch rank and must run on a hidden router of " +
                           topo.name() + " (a node in [" + std::to_string(E) + ", " +
                           std::to_string(N) + "))");
    } else if (e < 0 || e >= E) {
      require(false, at() + " is not an endpoint of " + topo.name() + " (in [0, " +
                         std::to_string(E) + "))");
    }
    if (used[e])
      require(false, "placement maps two ranks to node " + std::to_string(e) +
                         "; ranks must run on distinct endpoints (switch ranks on "
                         "distinct routers)");
    used[e] = 1;
  }
  return place;
}

namespace {
std::atomic<bool> g_force_tries{false};
}  // namespace

void force_trie_routes(bool on) { g_force_tries.store(on); }

bool computes_routes(const Topology& topo, const NetworkModel& net) {
  return !g_force_tries.load() && topo.computed_routes() && !net.ecmp && !net.spray;
}

namespace {
std::invalid_argument too_many_stages() {
  return std::invalid_argument("the schedule's routes have more than " +
                               std::to_string(kMaxNodes) +
                               " stages in all; simulating it would need too much memory");
}
}  // namespace

void refuse_too_many_stages(const Schedule& s, const NetworkModel& net, bool computes) {
  if (computes || net.ecmp || net.spray) return;  // their own checks come first
  // A destination is another node, so its route has at least one link.
  const std::int64_t at_least =
      static_cast<std::int64_t>(s.dst_array().size()) * (1 + port_stages(net));
  if (at_least > kMaxNodes) throw too_many_stages();
}

std::int64_t count_route_stages(const Schedule& s, const Topology& topo, const NetworkModel& net,
                                const std::vector<NodeId>& place,
                                PacketCounts npackets, bool computes) {
  const std::int64_t ports = port_stages(net);
  std::int64_t bound = 0;
  // ECMP keeps every destination's hop distances (4 bytes per node).
  constexpr std::int64_t kMaxEcmpEntries = std::int64_t{1} << 27;
  const std::int64_t entries =
      static_cast<std::int64_t>(topo.num_nodes()) * static_cast<std::int64_t>(topo.num_endpoints());
  const char* multipath = net.ecmp ? "ecmp" : "spray";
  if ((net.ecmp || net.spray) && entries > kMaxEcmpEntries)
    throw std::invalid_argument(
        std::string(multipath) + " keeps hop distances from every node to every destination: " +
        std::to_string(topo.num_nodes()) + " nodes x " + std::to_string(topo.num_endpoints()) +
        " endpoints is more than " + std::to_string(kMaxEcmpEntries) + "; use the topology's own "
        "routes (" + multipath + "=False) on a machine this large");
  NodeRoutes routes(topo);
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    // Computed routes always exist (grids, stars and clusters are connected).
    if (computes && computed_route(s, place, t)) continue;
    const NodeId a = place[s.src(t)];
    const bool sprayed = net.spray && s.num_dsts(t) == 1;
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      const std::int32_t h = routes.hops(a, place[*d], net.ecmp || sprayed);
      if (h < 0)
        throw std::invalid_argument("transfer " + std::to_string(t) + ": no route from rank " +
                                    std::to_string(s.src(t)) + " (endpoint " +
                                    std::to_string(a) + ") to rank " + std::to_string(*d) +
                                    " (endpoint " + std::to_string(place[*d]) + ") in " +
                                    topo.name());
      // A sprayed transfer's packets take at most as many paths as there are.
      const std::int64_t paths =
          sprayed ? std::min<std::int64_t>(npackets[t], routes.paths(a, place[*d])) : 1;
      bound += paths * (h + ports);
    }
    // Checked per transfer, so a huge schedule fails before it is all read.
    if (bound > kMaxNodes) throw too_many_stages();
  }
  return bound;
}

StageTries build_stage_tries(const Schedule& s, const Topology& topo, const NetworkModel& net,
                             const std::vector<NodeId>& place,
                             PacketCounts npackets, std::int64_t stage_bound,
                             bool computes) {
  const TransferId T = s.num_transfers();
  const bool fixed_ports = net.ports == 1;
  const auto first_ejection_stage =
      static_cast<std::int32_t>(topo.num_links() + topo.num_endpoints());
  StageTries tries;
  tries.nodes.reserve(static_cast<std::size_t>(stage_bound));
  tries.base.resize(static_cast<std::size_t>(T) + 1);
  std::vector<std::int32_t> seq;
  std::vector<LinkId> route;
  NodeRoutes routes(topo);
  SprayBuilder spray(topo, net, routes, tries);
  if (net.spray) tries.spray_root.resize(static_cast<std::size_t>(T));
  for (TransferId t = 0; t < T; ++t) {
    const std::int64_t first = static_cast<std::int64_t>(tries.nodes.size());
    tries.base[t] = static_cast<std::int32_t>(first);
    if (computes && computed_route(s, place, t)) continue;
    const NodeId a = place[s.src(t)];
    std::int64_t slot = s.dst_offsets()[t];
    if (net.spray && s.num_dsts(t) == 1) {  // several destinations: one route each
      spray.add(t, first, a, place[*s.dsts_begin(t)], npackets[t],
                (static_cast<std::uint64_t>(t) << 32) + static_cast<std::uint64_t>(slot), slot);
      continue;
    }
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d, ++slot) {
      const std::uint64_t flow =
          (static_cast<std::uint64_t>(t) << 32) + static_cast<std::uint64_t>(slot);
      stage_sequence(topo, net, a, place[*d], flow, routes, route, seq);
      insert_path(tries, t, first, seq, slot, first_ejection_stage, fixed_ports);
    }
  }
  tries.base[T] = static_cast<std::int32_t>(tries.nodes.size());
  if (net.spray) tries.spray.resize(tries.nodes.size());
  return tries;
}

}  // namespace wafercoll::sim
