// Routes computed a link at a time (Topology::route_link and next_link)
// against the routes append_route builds, on every family and odd sizes;
// and the simulator's computed routes against its stored tries: the same
// results, bit for bit, with no trie nodes for single-destination transfers.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/simulate/routes.hpp"
#include "wafercoll/simulate/simulate.hpp"
#include "wafercoll/simulate/simulation.hpp"

using namespace wafercoll;

namespace {

std::vector<Topology> regular_topologies() {
  std::vector<Topology> out = {
      Topology::line(9),     Topology::line(2),      Topology::ring(7),     Topology::ring(8),
      Topology::ring(2),     Topology::ring(3),      Topology::mesh(3, 5),  Topology::mesh(1, 4),
      Topology::torus(5, 3), Topology::torus(4, 6),  Topology::torus(2, 3), Topology::torus(1, 5),
      Topology::star(5),
      Topology::cluster(3, 4, 2, {}, {1e9, 2e9, 3e9, 0}, {0, 0, 0, 0}),
      Topology::cluster(3, 4, 1, {}, {1e9, 2e9, 3e9, 0}, {0, 0, 0, 0}),
      Topology::cluster(3, 4, 2, {}, {1e9, 2e9, 3e9, 4e9}, {0, 0, 0, 0}),
      Topology::cluster(3, 4, 1, {}, {1e9, 2e9, 3e9, 4e9}, {0, 0, 0, 0}),
      Topology::cluster(2, 4, 2, {1, 0, 1, 1, 0, 0, 1, 0}, {1e9, 2e9, 3e9, 0}, {0, 0, 0, 0}),
      Topology::cluster(2, 3, 1, {1, 0, 1, 0, 1, 0}, {1e9, 2e9, 3e9, 0}, {0, 0, 0, 0})};
  return out;
}

// A custom graph with hidden routers and several equally short paths:
// endpoints 0..3 on a square of routers 4..7, each endpoint on two routers.
Topology custom_square() {
  std::vector<Link> links;
  auto both = [&](NodeId a, NodeId b) {
    links.push_back({a, b, 1e9, 0.0});
    links.push_back({b, a, 1e9, 0.0});
  };
  for (NodeId r = 0; r < 4; ++r) both(4 + r, 4 + (r + 1) % 4);
  for (NodeId e = 0; e < 4; ++e) {
    both(e, 4 + e);
    both(e, 4 + (e + 1) % 4);
  }
  return Topology::custom(4, 4, links);
}

}  // namespace

TEST(RouteSteps, RouteLinkGivesTheRouteLinkByLink) {
  for (const Topology& topo : regular_topologies()) {
    EXPECT_TRUE(topo.computed_routes()) << topo.name();
    const NodeId E = topo.num_endpoints();
    for (NodeId a = 0; a < E; ++a) {
      for (NodeId b = 0; b < E; ++b) {
        const std::vector<LinkId> route = topo.route(a, b);
        const auto n = static_cast<std::int32_t>(route.size());
        for (std::int32_t i = 0; i < n; ++i) {
          std::int32_t hops = -1;
          ASSERT_EQ(topo.route_link(a, b, i, &hops), route[i])
              << topo.name() << " " << a << "->" << b << " link " << i;
          EXPECT_EQ(hops, n);
        }
        EXPECT_EQ(topo.route_link(a, b, n), -1) << topo.name();
        EXPECT_EQ(topo.route_link(a, b, n + 3), -1) << topo.name();
      }
    }
  }
}

TEST(RouteSteps, NextLinkFollowedFromTheSourceIsTheRoute) {
  std::vector<Topology> all = regular_topologies();
  all.push_back(custom_square());
  for (const Topology& topo : all) {
    const NodeId E = topo.num_endpoints();
    for (NodeId a = 0; a < E; ++a) {
      for (NodeId b = 0; b < E; ++b) {
        std::vector<LinkId> walked;
        for (NodeId u = a; u != b && walked.size() <= 16;) {
          const LinkId l = topo.next_link(u, b);
          ASSERT_GE(l, 0) << topo.name() << " at node " << u;
          ASSERT_EQ(topo.link(l).src, u) << topo.name();
          walked.push_back(l);
          u = topo.link(l).dst;
        }
        EXPECT_EQ(walked, topo.route(a, b)) << topo.name() << " " << a << "->" << b;
        EXPECT_EQ(topo.next_link(b, b), -1);
      }
    }
  }
}

TEST(RouteSteps, ClosedFormsOnARingAndATorus) {
  // ring(7): from 0 to 3 three links east (0->1, 1->2, 2->3: ids 0, 1, 2);
  // to 4 three links west (0->6, 6->5, 5->4: ids 7 + 6, 7 + 5, 7 + 4).
  const Topology ring = Topology::ring(7);
  EXPECT_EQ(ring.route_link(0, 3, 2), 2);
  EXPECT_EQ(ring.route_link(0, 4, 0), 7 + 6);
  EXPECT_EQ(ring.route_link(0, 4, 2), 7 + 4);
  // torus(5, 3) (5 rows, 3 columns): 0 = (0, 0) to 13 = (4, 1): one step
  // east (link 0), then one north the short way, wrapping from row 0 to
  // row 4 along column 1: the north block starts at 2*5*3 + 5*3 = 45, and
  // the edge is (4, 1) -> (0, 1), id 45 + 4*3 + 1 = 58.
  const Topology torus = Topology::torus(5, 3);
  std::int32_t hops = 0;
  EXPECT_EQ(torus.route_link(0, 13, 0, &hops), 0);
  EXPECT_EQ(hops, 2);
  EXPECT_EQ(torus.route_link(0, 13, 1), 58);
}

TEST(RouteSteps, BadArgumentsThrow) {
  const Topology t = Topology::mesh(3, 5);
  EXPECT_THROW(t.route_link(0, 15, 0), std::out_of_range);
  EXPECT_THROW(t.route_link(-1, 1, 0), std::out_of_range);
  EXPECT_THROW(t.route_link(0, 1, -1), std::invalid_argument);
  EXPECT_THROW(t.next_link(15, 0), std::out_of_range);
  EXPECT_FALSE(custom_square().computed_routes());
  // With lanes, a node router carries only its own node's traffic.
  const Topology lanes = Topology::cluster(3, 4, 1, {}, {1e9, 2e9, 3e9, 4e9}, {0, 0, 0, 0});
  EXPECT_THROW(lanes.next_link(12 + 1, 0), std::invalid_argument);  // router of node 1
}

namespace {

// Options that record every result field: transfers, timeline, trace.
SimOptions recording_everything() {
  SimOptions opt;
  opt.record_transfers = true;
  opt.record_timeline = true;
  opt.record_trace = true;
  return opt;
}

// Model m's flits, switching, ports and costs: flits (m = 4),
// store-and-forward (m = 2), 0, 1 or 2 channels per port, a port bandwidth
// (m = 5), switch overhead, reduction and copy costs.
void vary_costs(NetworkModel& net, int m) {
  net.flit_bytes = m == 4 ? 64 : 0;
  net.switching = m == 2 ? Switching::store_and_forward : Switching::cut_through;
  net.ports = m % 3;  // 0, 1 or 2 channels
  net.port_bandwidth_Bps = m == 5 ? 3e9 : 0.0;
  net.switch_overhead_s = net.ports > 0 && m % 2 ? 2e-7 : 0.0;
  net.gamma_s_per_byte = m >= 3 ? 1e-10 : 0.0;
  net.copy_s_per_byte = m == 4 ? 5e-11 : 0.0;
}

// An allgather of p ranks, rank r owning block r of base + step * (r % mod)
// bytes, with no transfers yet.
Schedule empty_allgather(RankId p, Bytes base, Bytes step, RankId mod) {
  Collective c;
  c.kind = CollectiveKind::allgather;
  for (RankId r = 0; r < p; ++r) c.owners.push_back(r);
  std::vector<Bytes> blocks;
  for (RankId r = 0; r < p; ++r) blocks.push_back(base + step * (r % mod));
  return Schedule(p, blocks, c);
}

// Unicasts with dependencies among ranks of `p`, a few multicasts between
// them (a mixed run), blocks of uneven sizes.
Schedule mixed_schedule(RankId p, std::uint32_t seed, bool multicast) {
  std::mt19937 rng(seed);
  Schedule s = empty_allgather(p, 1000, 777, 5);
  for (int i = 0; i < 6 * p; ++i) {
    const auto src = static_cast<RankId>(rng() % p);
    std::vector<RankId> dsts;
    const int ndst = multicast && i % 7 == 3 ? 3 : 1;
    while (static_cast<int>(dsts.size()) < ndst) {
      const auto d = static_cast<RankId>(rng() % p);
      bool dup = d == src;
      for (RankId x : dsts) dup = dup || x == d;
      if (!dup) dsts.push_back(d);
    }
    const auto b = static_cast<BlockId>(rng() % p);
    std::vector<TransferId> deps;
    if (i > 0 && rng() % 2 == 0) deps.push_back(static_cast<TransferId>(rng() % i));
    s.add_transfer(src, dsts, {BlockRange{b, b + 1}}, i % 3 == 0 ? Op::reduce : Op::copy, deps);
  }
  return s;
}

void expect_same(const SimResult& a, const SimResult& b, const std::string& what) {
  EXPECT_EQ(a.time_s, b.time_s) << what;
  EXPECT_EQ(a.rank_finish_s, b.rank_finish_s) << what;
  EXPECT_EQ(a.link_busy_s, b.link_busy_s) << what;
  EXPECT_EQ(a.link_bytes, b.link_bytes) << what;
  EXPECT_EQ(a.injection_busy_s, b.injection_busy_s) << what;
  EXPECT_EQ(a.ejection_busy_s, b.ejection_busy_s) << what;
  EXPECT_EQ(a.compute_busy_s, b.compute_busy_s) << what;
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.packets, b.packets) << what;
  EXPECT_EQ(a.transfer_ready_s, b.transfer_ready_s) << what;
  EXPECT_EQ(a.transfer_finish_s, b.transfer_finish_s) << what;
  EXPECT_EQ(a.timeline_t, b.timeline_t) << what;
  EXPECT_EQ(a.timeline_busy, b.timeline_busy) << what;
  EXPECT_EQ(a.trace_transfer, b.trace_transfer) << what;
  EXPECT_EQ(a.trace_packet, b.trace_packet) << what;
  EXPECT_EQ(a.trace_stage, b.trace_stage) << what;
  EXPECT_EQ(a.trace_start_s, b.trace_start_s) << what;
  EXPECT_EQ(a.trace_finish_s, b.trace_finish_s) << what;
}

// One of the simulator's testing switches (sim::force_*) set while in
// scope, and off again after, a failure included.
class Forced {
 public:
  explicit Forced(void (*set)(bool), bool on = true) : set_(set) { set_(on); }
  ~Forced() { set_(false); }
  Forced(const Forced&) = delete;
  Forced& operator=(const Forced&) = delete;

 private:
  void (*set_)(bool);
};

// Runs with routes computed and with every route in a trie.
std::pair<SimResult, SimResult> both_ways(const Schedule& s, const Topology& topo,
                                          const NetworkModel& net, const SimOptions& opt) {
  const SimResult computed = simulate(s, topo, net, opt);
  const Forced tries(sim::force_trie_routes);
  return {computed, simulate(s, topo, net, opt)};
}

}  // namespace

TEST(RouteSteps, ComputedRoutesSimulateAsTheTries) {
  const SimOptions opt = recording_everything();
  const std::vector<Topology> tops = {
      Topology::ring(7, 2e9, 1e-7),  Topology::torus(5, 3, 1e9, 5e-8),
      Topology::mesh(3, 5, 1e9, 0),  Topology::line(9, 1e9, 2e-8),
      Topology::star(6, 1e9, 1e-7),
      Topology::cluster(3, 4, 2, {}, {4e9, 2e9, 1e9, 0}, {1e-7, 2e-7, 5e-7, 0})};
  int variant = 0;
  for (const Topology& topo : tops) {
    for (const bool multicast : {false, true}) {
      const Schedule s = mixed_schedule(std::min<RankId>(topo.num_endpoints(), 12),
                                        static_cast<std::uint32_t>(variant), multicast);
      for (int m = 0; m < 6; ++m, ++variant) {
        NetworkModel net;
        net.alpha_s = 1e-6;
        net.hop_latency_s = m % 2 ? 3e-8 : 0.0;
        net.packet_bytes = m % 3 == 0 ? 0 : 512;
        vary_costs(net, m);
        const std::string what = topo.name() + " model " + std::to_string(m) +
                                 (multicast ? " with multicasts" : "");
        const auto [computed, tried] = both_ways(s, topo, net, opt);
        expect_same(computed, tried, what);
        EXPECT_EQ(simulation_events(s, topo, net), computed.events) << what;
      }
    }
  }
}

namespace {

// A dataflow schedule with dependencies of every kind (simulate.hpp,
// Dependencies) among ranks of `p`: transfers that forward an earlier
// transfer's block from its destination (stream edges), transfers sent to
// the destination of an earlier one they wait for, from elsewhere (order
// edges: they gate the stages both cross), others waiting for anything
// earlier; with `multicast`, a few go to three ranks (a mixed run).
Schedule dataflow_schedule(RankId p, std::uint32_t seed, bool multicast) {
  std::mt19937 rng(seed);
  Schedule s = empty_allgather(p, 3000, 577, 4);
  std::vector<RankId> first_dst;
  std::vector<BlockId> block;
  auto other = [&](RankId not_a, RankId not_b) {
    RankId x = static_cast<RankId>(rng() % p);
    while (x == not_a || x == not_b) x = static_cast<RankId>(rng() % p);
    return x;
  };
  for (int i = 0; i < 8 * p; ++i) {
    const int kind = i == 0 ? 3 : static_cast<int>(rng() % 4);
    const auto j = static_cast<TransferId>(i == 0 ? 0 : rng() % i);
    RankId src = 0, dst = 0;
    auto b = static_cast<BlockId>(rng() % p);
    std::vector<TransferId> deps;
    if (kind == 0) {  // forward j's block from where it went
      src = first_dst[j];
      dst = other(src, src);
      b = block[j];
      deps.push_back(j);
    } else if (kind == 1) {  // to j's destination, after j (an order edge)
      dst = first_dst[j];
      src = other(dst, s.src(j));
      deps.push_back(j);
      const auto j2 = static_cast<TransferId>(rng() % i);
      if (j2 != j && rng() % 2 == 0) deps.push_back(j2);
    } else {
      src = static_cast<RankId>(rng() % p);
      dst = other(src, src);
      if (i > 0 && kind == 2) deps.push_back(j);
    }
    std::vector<RankId> dsts{dst};
    while (multicast && i % 7 == 3 && dsts.size() < 3) {
      const RankId x = other(src, dst);
      if (std::find(dsts.begin(), dsts.end(), x) == dsts.end()) dsts.push_back(x);
    }
    s.add_transfer(src, dsts, {BlockRange{b, b + 1}}, i % 3 == 0 ? Op::reduce : Op::copy, deps);
    first_dst.push_back(dst);
    block.push_back(b);
  }
  return s;
}

}  // namespace

TEST(RouteSteps, DataflowGatesOnComputedRoutesSimulateAsTheTries) {
  // Order gates kept by (transfer, stage along its computed path) against
  // gates on trie nodes: bit for bit, on meshes, tori (odd sizes), a line
  // and a ring, a star, and with the wafer's model (one port per PE with its
  // ramps, a cycle per hop, adds and copies per wavelet).
  const SimOptions opt = recording_everything();
  const std::vector<Topology> tops = {
      Topology::mesh(3, 5, 1e9, 0),     Topology::mesh(4, 4, 1e9, 2e-8),
      Topology::mesh(1, 7, 1e9, 0),     Topology::mesh(5, 3, 4e9, 0),
      Topology::torus(5, 3, 1e9, 5e-8), Topology::torus(4, 6, 1e9, 0),
      Topology::torus(3, 3, 2e9, 0),    Topology::line(9, 1e9, 2e-8),
      Topology::ring(7, 2e9, 1e-7),     Topology::star(6, 1e9, 1e-7)};
  int variant = 0;
  for (const Topology& topo : tops) {
    for (const bool multicast : {false, true}) {
      const Schedule s = dataflow_schedule(std::min<RankId>(topo.num_endpoints(), 12),
                                           static_cast<std::uint32_t>(100 + variant), multicast);
      for (int m = 0; m < 7; ++m, ++variant) {
        NetworkModel net;
        net.dependencies = Dependencies::dataflow;
        net.alpha_s = m % 2 ? 1e-7 : 0.0;
        net.hop_latency_s = m % 2 ? 3e-8 : 1e-9;
        net.packet_bytes = m == 3 ? 0 : 256 + 128 * (m % 3);
        vary_costs(net, m);
        if (m == 6) {  // the wafer's (wafer.wse2_network): time unit one cycle
          net = NetworkModel{};
          net.dependencies = Dependencies::dataflow;
          net.bandwidth_Bps = 4.0 * 1.1e9;
          net.hop_latency_s = 1.0 / 1.1e9;
          net.packet_bytes = 4 * 25;
          net.ports = 1;
          net.port_latency_s = 2.0 / 1.1e9;
          net.gamma_s_per_byte = 0.25 / 1.1e9;
          net.copy_s_per_byte = 0.25 / 1.1e9;
        }
        const std::string what = topo.name() + " dataflow model " + std::to_string(m) +
                                 (multicast ? " with multicasts" : "");
        const auto [computed, tried] = both_ways(s, topo, net, opt);
        expect_same(computed, tried, what);
        EXPECT_EQ(simulation_events(s, topo, net), computed.events) << what;
      }
    }
  }
}

TEST(RouteSteps, LargeDataflowClassifiedOnTwoThreadsAsOnOne) {
  // 2^16 transfers or more: their dependency edges are classified in two
  // halves, one per thread (where the machine has two), with routes
  // computed (all of two hops on a star: their gates numbered by stride) and
  // in tries, unicasts only and with multicasts; against one thread, bit for
  // bit. Streams, data, complete and order edges all occur.
  const RankId p = 8192;
  const Topology topo = Topology::star(p, 1e9, 1e-7);
  SimOptions opt;
  opt.record_transfers = true;
  for (const bool multicast : {false, true}) {
    const Schedule s = dataflow_schedule(p, multicast ? 71u : 70u, multicast);
    ASSERT_GE(s.num_transfers(), TransferId{1} << 16);
    NetworkModel net;
    net.dependencies = Dependencies::dataflow;
    net.alpha_s = 1e-7;
    net.packet_bytes = 512;
    for (const bool tries : {false, true}) {
      const std::string what = std::string(tries ? "tries" : "computed routes") +
                               (multicast ? " with multicasts" : "");
      const Forced routes(sim::force_trie_routes, tries);
      const SimResult two = simulate(s, topo, net, opt);
      const Forced serial(sim::force_serial_dataflow);
      expect_same(two, simulate(s, topo, net, opt), what);
    }
  }
}

TEST(RouteSteps, EventQueuesAndRingAllreduceAgree) {
  const Schedule s = ring_allreduce(8, 8 * 4096);
  NetworkModel net;
  net.bandwidth_Bps = 25e9;
  net.packet_bytes = 1024;
  for (const EventQueueKind q : {EventQueueKind::heap, EventQueueKind::buckets}) {
    SimOptions opt;
    opt.queue = q;
    opt.record_transfers = true;
    const auto [computed, tried] = both_ways(s, Topology::torus(2, 4), net, opt);
    expect_same(computed, tried, "ring allreduce on torus(2x4)");
  }
}

TEST(RouteSteps, UnicastsHoldNoTrieNodes) {
  const Schedule uni = mixed_schedule(12, 1, false);
  const Schedule mixed = mixed_schedule(12, 1, true);
  const Topology topo = Topology::torus(3, 4);
  NetworkModel net;
  net.ports = 1;
  const sim::Prepared a = sim::prepare(uni, topo, net, {});
  EXPECT_EQ(a.tries.nodes.size(), 0u);
  for (const sim::TransferHot& h : a.hot) EXPECT_TRUE(h.computed());
  // Multicasts keep their tries, unicasts beside them none: each multicast
  // of 3 destinations has at least 3 ejection nodes.
  const sim::Prepared b = sim::prepare(mixed, topo, net, {});
  std::size_t multicasts = 0;
  for (TransferId t = 0; t < mixed.num_transfers(); ++t) {
    EXPECT_EQ(b.hot[t].computed(), mixed.num_dsts(t) == 1);
    multicasts += mixed.num_dsts(t) > 1;
  }
  EXPECT_GT(multicasts, 0u);
  EXPECT_GE(b.tries.nodes.size(), 3 * multicasts);
  // ECMP and spraying runs keep their tries; dataflow runs do not.
  NetworkModel ecmp = net;
  ecmp.ecmp = true;
  EXPECT_GT(sim::prepare(uni, topo, ecmp, {}).tries.nodes.size(), 0u);
  NetworkModel flow = net;
  flow.dependencies = Dependencies::dataflow;
  EXPECT_EQ(sim::prepare(uni, topo, flow, {}).tries.nodes.size(), 0u);
  const std::size_t forced = [&] {
    const Forced tries(sim::force_trie_routes);
    return sim::prepare(uni, topo, net, {}).tries.nodes.size();
  }();
  // One node per stage: each unicast's hops plus its two ports.
  std::size_t stages = 0;
  for (TransferId t = 0; t < uni.num_transfers(); ++t)
    stages += static_cast<std::size_t>(topo.hops(uni.src(t), *uni.dsts_begin(t)) + 2);
  EXPECT_EQ(forced, stages);
}
