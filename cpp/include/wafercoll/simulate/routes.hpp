// Internal to the simulator (not part of the public API): where each
// transfer's packets go, as a prefix tree ("trie") of stages.
//
// A transfer from endpoint a to destinations b1..bn crosses, for each bi,
// the stage sequence
//
//     [injection port of a]  route(a, bi) links ...  [ejection port of bi]
//
// (port stages only when the model has ports). The transfer's trie is the
// union of these sequences as a prefix tree: stages the routes share are one
// node, crossed once per packet, and the packet is copied where routes part.
// A unicast is a path. The tries of all transfers live in one array; the
// nodes of transfer t are [base[t], base[t + 1]), its first stage(s) the
// top-level siblings chained from base[t].
//
// Computed routes. A transfer to one destination whose route the topology
// computes a link at a time in O(1) (Topology::computed_routes: grids, stars,
// clusters) has no trie: its stages are numbered 0, 1, ... along the path
// (the numbers its trie nodes would have, relative to the first, so the
// local tie keys of its events are the same), and the event loop asks
// Topology::route_link for the link of stage i as the packet reaches it.
// Its events carry kComputedNode | transfer in their node field. In dataflow
// runs the order gates of its stages are kept by (transfer, stage number)
// (simulation.hpp, DataflowEdges). Transfers with several destinations,
// sprayed and ECMP runs and routes that start or end at a switch rank's
// router keep their tries; one run may mix both.
#pragma once

#include <cstdint>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"
#include "wafercoll/simulate/huge_alloc.hpp"
#include "wafercoll/simulate/simulate.hpp"
#include "wafercoll/topology/topology.hpp"

// Internal to the library: hidden symbols are resolved within it, so calls
// between the simulator's parts are direct and the compiler may optimise
// across them as it does for functions local to one file.
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::sim {

// Resource of a port stage whose channel is chosen when the first packet
// reaches it (ports > 1): the source's injection port, the destination's
// ejection port. With one channel per port the stage is known up front and
// the node holds its stage index instead (see build_stage_tries).
constexpr std::int32_t kInjPort = -2;
constexpr std::int32_t kEjPort = -3;

// The node field of an event of a computed route: this bit | the transfer
// (transfers < 2^26, trie nodes < 2^27, tasks negative).
constexpr std::int32_t kComputedNode = std::int32_t{1} << 30;

// Tries are bounded to 2^27 nodes in all (24 bytes each: 3 GiB), and the
// event loop stores node indices in 32 bits.
constexpr std::int64_t kMaxNodes = std::int64_t{1} << 27;

// 24 bytes per node.
struct TrieNode {
  std::int32_t resource;      // stage (link id, or port stage with one channel
                              // per port), kInjPort or kEjPort
  std::int32_t first_child;   // -1: none
  std::int32_t next_sibling;  // -1: none
  std::int32_t term;          // destination slot ending here, or -1
  std::int32_t owner;         // transfer whose trie holds it << 2, | 2 when
                              // the transfer is sprayed, | 1 for a first
                              // stage of the stream (transfers < 2^26)
  // Filled by the simulation (dataflow): order gates still closed on this
  // node, or the packets parked here (a gate word: simulation.hpp, Parking).
  std::int32_t gate = 0;
  TransferId transfer() const { return owner >> 2; }
  bool top() const { return (owner & 1) != 0; }
  bool sprayed() const { return (owner & 2) != 0; }
};

// Packet spraying (NetworkModel::spray). A sprayed transfer's trie holds
// the paths its packets take; where they part, the children are
// alternatives, not copies: packet k goes on to the child whose link is
//
//     seq[seq_off + ((k / stride) + rot) % ways]
//
// (the node's dealing sequence, simulate.hpp). `stride` is the product of
// the ways of the choices above, so the packets that reach a node are dealt
// evenly again below it. ways == 0: every child gets every packet.
struct SprayChoice {
  std::int64_t stride = 1;
  std::int32_t ways = 0;
  std::int32_t seq_off = 0;
  std::int32_t rot = 0;
  std::int32_t depth = 0;  // per transfer: stages every packet crosses
                           // (0: not sprayed, its packets follow one route)
};

struct StageTries {
  BigVector<TrieNode> nodes;       // all tries
  BigVector<std::int32_t> base;    // per transfer: first node (< kMaxNodes); size T + 1
  // Spraying only (else empty): per node the choice among its children,
  // per transfer the choice among its first stages, and the dealing
  // sequences (link ids) they index.
  std::vector<SprayChoice> spray, spray_root;
  std::vector<LinkId> spray_seq;

  // The link packet k takes at choice c.
  LinkId spray_link(const SprayChoice& c, std::int64_t k) const {
    const std::int64_t i = ((k / c.stride) + c.rot) % c.ways;
    return spray_seq[static_cast<std::size_t>(c.seq_off + i)];
  }
};

// Packets per transfer, read in place from the per-transfer records that
// hold them (every `stride`-th 32-bit word from `first`).
struct PacketCounts {
  const std::uint32_t* first;
  std::size_t stride;
  int shift = 0;  // the counts are the values' bits from here up
  std::int64_t operator[](TransferId t) const {
    return first[static_cast<std::size_t>(t) * stride] >> shift;
  }
};

// Rank -> node: the identity, or options.placement once checked (one node
// per rank, distinct, in range). Ordinary ranks run on endpoints; switch
// ranks (schedule.hpp) on hidden routers, so a schedule with switch ranks
// usually numbers them after its endpoint ranks, as the fabrics number
// their switches after the GPUs (then the identity places them). Throws
// std::invalid_argument.
//
// Routes that start or end at a hidden router (a switch rank's) are not
// the topology's (those join endpoints): they are shortest paths by hop
// count, taking at each node the lowest-id link that stays on one, the
// rule of shortest-path custom topologies, computed by a reverse BFS per
// router destination. Between two endpoints the topology's route is used.
// These paths, and those of ECMP and spraying, pass through hidden routers
// only where the topology has any (endpoints such as GPUs do not forward).
std::vector<NodeId> resolve_placement(const Schedule& s, const Topology& topo,
                                      const SimOptions& options);

// Whether this run computes the routes of its single-destination transfers
// (see "Computed routes" above): the topology computes its routes, and the
// model neither sprays nor uses ECMP.
bool computes_routes(const Topology& topo, const NetworkModel& net);

// Whether transfer t's route is computed in a run where computes_routes():
// one destination, on another node, neither end a switch rank.
inline bool computed_route(const Schedule& s, const std::vector<NodeId>& place, TransferId t) {
  if (s.num_dsts(t) != 1) return false;
  const RankId a = s.src(t), b = *s.dsts_begin(t);
  return !s.is_switch(a) && !s.is_switch(b) && place[a] != place[b];
}

// Testing only: with `on`, every transfer gets a trie (the routes of
// computes_routes() runs are then stored), to check that both give the same
// results. Not thread-safe with simulations running.
void force_trie_routes(bool on);

// An upper bound on the trie nodes of all transfers (every route's stages
// counted as if no two destinations shared any; a sprayed transfer's paths
// as if no two packets shared any stage, at most as many as it has packets
// or shortest paths), checked before anything is built: throws
// std::invalid_argument when a destination is unreachable or the bound
// exceeds kMaxNodes.
// Transfers with computed routes (`computes`: computes_routes()) add none.
// Stages a route has beside its links: an injection and an ejection port
// when the model has ports.
inline std::int64_t port_stages(const NetworkModel& net) { return net.ports > 0 ? 2 : 0; }

// Throws count_route_stages()'s refusal at once when no transfer's route is
// computed and even one link per destination (plus its ports) would exceed
// kMaxNodes, before anything per transfer is allocated or computed.
void refuse_too_many_stages(const Schedule& s, const NetworkModel& net, bool computes);

std::int64_t count_route_stages(const Schedule& s, const Topology& topo, const NetworkModel& net,
                                const std::vector<NodeId>& place,
                                PacketCounts npackets, bool computes);

// The tries of every transfer. stage_bound is count_route_stages()'s result
// (it sizes the node array once). A transfer with a computed route gets no
// nodes (base[t] == base[t + 1]).
StageTries build_stage_tries(const Schedule& s, const Topology& topo, const NetworkModel& net,
                             const std::vector<NodeId>& place,
                             PacketCounts npackets, std::int64_t stage_bound, bool computes);

}  // namespace wafercoll::sim

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
