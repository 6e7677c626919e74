// Route and trie preparation for the simulator: see routes.hpp for the model.
//
// Everything here runs once, before the first event. The tries are built in
// transfer order, and within a transfer in destination order, so node
// numbers (and with them the local keys that break event ties) depend only
// on the schedule and the topology's routes.
#include "wafercoll/simulate/routes.hpp"

#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace wafercoll::sim {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument(msg);
}

// The stages a packet of a transfer from endpoint `src` crosses to endpoint
// `dst`, in order. With one channel per port the port stages are known now:
// stage L + src (injection at src) and L + E + dst (ejection at dst); with
// more channels they are placeholders resolved when the first packet
// arrives.
void stage_sequence(const Topology& topo, const NetworkModel& net, NodeId src, NodeId dst,
                    std::vector<LinkId>& route, std::vector<std::int32_t>& seq) {
  const LinkId L = topo.num_links();
  const NodeId E = topo.num_endpoints();
  const bool fixed_ports = net.ports == 1;
  seq.clear();
  if (net.ports > 0) seq.push_back(fixed_ports ? static_cast<std::int32_t>(L + src) : kInjPort);
  route.clear();
  topo.append_route(src, dst, route);
  seq.insert(seq.end(), route.begin(), route.end());
  if (net.ports > 0)
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
      TrieNode nd{res, -1, -1, -1, (t << 1) | (parent < 0 ? 1 : 0)};
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

}  // namespace

std::vector<NodeId> resolve_placement(const Schedule& s, const Topology& topo,
                                      const SimOptions& options) {
  const RankId P = s.num_ranks();
  const NodeId E = topo.num_endpoints();
  std::vector<NodeId> place;
  if (options.placement.empty()) {
    require(P <= E, "the schedule has " + std::to_string(P) + " ranks but topology " +
                        topo.name() + " has only " + std::to_string(E) +
                        " endpoints; use a topology with at least as many endpoints");
    place.resize(P);
    std::iota(place.begin(), place.end(), 0);
    return place;
  }
  require(static_cast<std::int64_t>(options.placement.size()) == P,
          "placement must list one endpoint per rank (" + std::to_string(P) + "), got " +
              std::to_string(options.placement.size()));
  std::vector<std::uint8_t> used(E, 0);
  for (RankId r = 0; r < P; ++r) {
    const NodeId e = options.placement[r];
    require(e >= 0 && e < E, "placement[" + std::to_string(r) + "] = " + std::to_string(e) +
                                 " is not an endpoint of " + topo.name() + " (in [0, " +
                                 std::to_string(E) + "))");
    require(!used[e], "placement maps two ranks to endpoint " + std::to_string(e) +
                          "; ranks must run on distinct endpoints");
    used[e] = 1;
  }
  place = options.placement;
  return place;
}

std::int64_t count_route_stages(const Schedule& s, const Topology& topo, const NetworkModel& net,
                                const std::vector<NodeId>& place) {
  const std::int64_t port_stages = net.ports > 0 ? 2 : 0;
  std::int64_t bound = 0;
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    const NodeId a = place[s.src(t)];
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      const std::int32_t h = topo.hops(a, place[*d]);
      if (h < 0)
        throw std::invalid_argument("transfer " + std::to_string(t) + ": no route from rank " +
                                    std::to_string(s.src(t)) + " (endpoint " +
                                    std::to_string(a) + ") to rank " + std::to_string(*d) +
                                    " (endpoint " + std::to_string(place[*d]) + ") in " +
                                    topo.name());
      bound += h + port_stages;
    }
    // Checked per transfer, so a huge schedule fails before it is all read.
    if (bound > kMaxNodes)
      throw std::invalid_argument(
          "the schedule's routes have more than " + std::to_string(kMaxNodes) +
          " stages in all; simulating it would need too much memory");
  }
  return bound;
}

StageTries build_stage_tries(const Schedule& s, const Topology& topo, const NetworkModel& net,
                             const std::vector<NodeId>& place, std::int64_t stage_bound) {
  const TransferId T = s.num_transfers();
  const bool fixed_ports = net.ports == 1;
  const auto first_ejection_stage =
      static_cast<std::int32_t>(topo.num_links() + topo.num_endpoints());
  StageTries tries;
  tries.nodes.reserve(static_cast<std::size_t>(stage_bound));
  tries.base.resize(static_cast<std::size_t>(T) + 1);
  std::vector<std::int32_t> seq;
  std::vector<LinkId> route;
  for (TransferId t = 0; t < T; ++t) {
    const std::int64_t first = static_cast<std::int64_t>(tries.nodes.size());
    tries.base[t] = first;
    const NodeId a = place[s.src(t)];
    std::int64_t slot = s.dst_offsets()[t];
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d, ++slot) {
      stage_sequence(topo, net, a, place[*d], route, seq);
      insert_path(tries, t, first, seq, slot, first_ejection_stage, fixed_ports);
    }
  }
  tries.base[T] = static_cast<std::int64_t>(tries.nodes.size());
  return tries;
}

}  // namespace wafercoll::sim
