// Simulator tests on the C++ core: closed forms derived from the model in
// simulate.hpp, and the input checks.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/algorithms/wafer.hpp"
#include "wafercoll/simulate/simulate.hpp"

using namespace wafercoll;

namespace {

Schedule one_transfer(RankId p, RankId src, RankId dst, Bytes size) {
  Collective c;
  c.kind = CollectiveKind::allgather;
  c.owners = {src};
  Schedule s(p, {size}, c);
  s.add(src, dst, 0, 1, Op::copy, {});
  return s;
}

NetworkModel model(double bw, double lat, double alpha, Bytes packet, Switching sw) {
  NetworkModel n;
  n.bandwidth_Bps = bw;
  n.hop_latency_s = lat;
  n.alpha_s = alpha;
  n.packet_bytes = packet;
  n.switching = sw;
  return n;
}

}  // namespace

TEST(Simulate, SingleTransferCutThroughAndStoreAndForward) {
  const double bw = 1e9, lat = 1e-7, alpha = 1e-6;
  const Bytes m = 1000;
  for (int h : {1, 2, 7}) {
    for (Bytes S : {m, 5 * m, 32 * m}) {
      const Schedule s = one_transfer(h + 1, 0, h, S);
      const Topology t = Topology::line(h + 1);
      const SimResult ct = simulate(s, t, model(bw, lat, alpha, m, Switching::cut_through));
      EXPECT_NEAR(ct.time_s, alpha + h * lat + S / bw, 1e-12 * ct.time_s);
      const SimResult sf =
          simulate(s, t, model(bw, lat, alpha, m, Switching::store_and_forward));
      EXPECT_NEAR(sf.time_s, alpha + h * (lat + m / bw) + (S - m) / bw, 1e-12 * sf.time_s);
      EXPECT_EQ(sf.events, (S / m) * h);
    }
  }
}

TEST(Simulate, RingAllreduceOnARing) {
  const double bw = 1e9, lat = 5e-8, alpha = 2e-6;
  for (RankId p : {2, 3, 4, 7, 8, 16}) {
    const Bytes block = 2048;
    const Schedule s = ring_allreduce(p, p * block);
    const SimResult r =
        simulate(s, Topology::ring(p), model(bw, lat, alpha, 0, Switching::cut_through));
    EXPECT_NEAR(r.time_s, 2.0 * (p - 1) * (alpha + lat + block / bw), 1e-15) << p;
  }
}

TEST(Simulate, MulticastChargesEachLinkOnce) {
  Collective c;
  c.kind = CollectiveKind::broadcast;
  c.root = 0;
  Schedule s(5, {4000}, c);
  s.add_transfer(0, {1, 2, 3, 4}, {{0, 1}}, Op::copy, {});
  const SimResult r =
      simulate(s, Topology::line(5), model(1e9, 0.0, 0.0, 500, Switching::cut_through));
  EXPECT_NEAR(r.time_s, 4000 / 1e9, 1e-12 * r.time_s);
  Bytes total = 0;
  for (Bytes b : r.link_bytes) total += b;
  EXPECT_EQ(total, 4 * 4000);
}

TEST(Simulate, RejectsBadInput) {
  const Schedule s = one_transfer(4, 0, 3, 100);
  NetworkModel bad = model(-1.0, 0.0, 0.0, 0, Switching::cut_through);
  EXPECT_THROW(simulate(s, Topology::line(4), bad), std::invalid_argument);
  bad = model(1e9, -1.0, 0.0, 0, Switching::cut_through);
  EXPECT_THROW(simulate(s, Topology::line(4), bad), std::invalid_argument);
  const NetworkModel ok = model(1e9, 0.0, 0.0, 0, Switching::cut_through);
  EXPECT_THROW(simulate(s, Topology::line(3), ok), std::invalid_argument);  // 4 ranks
  SimOptions opt;
  opt.placement = {0, 1, 1, 2};
  EXPECT_THROW(simulate(s, Topology::line(4), ok, opt), std::invalid_argument);
  opt.placement = {};
  opt.max_events = 0;
  EXPECT_THROW(simulate(s, Topology::line(4), ok, opt), std::invalid_argument);
  // Unreachable destination in a custom topology.
  const Topology one_way = Topology::custom(4, 0, {{0, 1, 1e9, 0.0}, {1, 2, 1e9, 0.0},
                                                   {2, 3, 1e9, 0.0}});
  const Schedule back = one_transfer(4, 3, 0, 100);
  EXPECT_THROW(simulate(back, one_way, ok), std::invalid_argument);
}

TEST(Simulate, DataflowForwardsChainStreamsLikeTheWafer) {
  // One wavelet (4 B) per cycle per link, one cycle per hop, one ramp each
  // way of T_R cycles, one cycle to add or store; time unit: one cycle.
  const double T_R = 2.0;
  NetworkModel n;
  n.bandwidth_Bps = 4.0;
  n.hop_latency_s = 1.0;
  n.packet_bytes = 4;
  n.ports = 1;
  n.port_latency_s = T_R;
  n.gamma_s_per_byte = 0.25;
  n.copy_s_per_byte = 0.25;
  n.dependencies = Dependencies::dataflow;
  for (std::int32_t P : {2, 3, 9}) {
    for (Bytes B : {1, 5, 40}) {
      std::vector<std::int32_t> chain(P);
      for (std::int32_t v = 0; v < P; ++v) chain[v] = v - 1;
      const Schedule s = tree_reduce(chain, 4 * B, 4 * B);  // one transfer per edge
      const SimResult r = simulate(s, Topology::line(P), n);
      // Per PE: T_R up, 1 hop, 1 through the receiving ramp, T_R down; the
      // last wavelet B - 1 cycles after the first; one cycle to add it.
      EXPECT_NEAR(r.time_s, (P - 1) * (2 * T_R + 2) + (B - 1) + 1, 1e-9) << P << " " << B;
      n.dependencies = Dependencies::complete;  // whole messages: no pipelining
      EXPECT_GT(simulate(s, Topology::line(P), n).time_s, r.time_s - 1e-9);
      n.dependencies = Dependencies::dataflow;
    }
  }
}

TEST(Simulate, DataflowStreamFollowsItsLatestOfOneTwoOrThreeDependencies) {
  // mesh(3, 3), rank r*3 + c, 1 GB/s, store-and-forward, 1000 B packets (1
  // us a link), alpha. A (1 -> 4), B (3 -> 4) and C (5 -> 4) send block 0
  // (P packets) to the centre over links of their own; D (4 -> 7) forwards
  // it (a stream of one, two or three stream dependencies: the pool of
  // singles, of pairs, and the queues of more). C first waits for all of X
  // (2 -> 5, block 1 of Q packets, a data edge), done at alpha + Q us, so
  // its packet k arrives at 2 alpha + (Q + k + 1) us, after A's and B's
  // (alpha + (k + 1) us). D's packet k goes then and takes 1 us: D ends at
  // 2 alpha + (Q + P + 1) us whichever of A and B it also waits for.
  const double us = 1e-6;
  for (const Bytes P : {2, 3, 7}) {
    for (const int others : {0, 1, 2}) {
      const double alpha = 3 * us;
      const Bytes Q = 4;
      Collective c;
      c.kind = CollectiveKind::allgather;
      for (RankId r = 0; r < 9; ++r) c.owners.push_back(r);
      std::vector<Bytes> blocks(9, 1000);
      blocks[0] = 1000 * P;
      blocks[1] = 1000 * Q;
      Schedule s(9, blocks, c);
      const TransferId x = s.add_transfer(2, {5}, {BlockRange{1, 2}}, Op::copy, {});
      const TransferId cc = s.add_transfer(5, {4}, {BlockRange{0, 1}}, Op::copy, {x});
      std::vector<TransferId> deps{cc};
      if (others >= 1) deps.push_back(s.add_transfer(1, {4}, {BlockRange{0, 1}}, Op::copy, {}));
      if (others >= 2) deps.push_back(s.add_transfer(3, {4}, {BlockRange{0, 1}}, Op::copy, {}));
      const TransferId d = s.add_transfer(4, {7}, {BlockRange{0, 1}}, Op::copy, deps);
      NetworkModel n = model(1e9, 0.0, alpha, 1000, Switching::store_and_forward);
      n.dependencies = Dependencies::dataflow;
      SimOptions opt;
      opt.record_transfers = true;
      const SimResult r = simulate(s, Topology::mesh(3, 3), n, opt);
      const double end = 2 * alpha + static_cast<double>(Q + P + 1) * us;
      EXPECT_NEAR(r.transfer_finish_s[d], end, 1e-15) << P << " " << others;
      EXPECT_NEAR(r.time_s, end, 1e-15);
      n.dependencies = Dependencies::complete;  // D waits for all of C
      EXPECT_GT(simulate(s, Topology::mesh(3, 3), n).time_s, end + 0.5 * us);
    }
  }
}

TEST(Simulate, SwitchOverheadSerializesOnlyLaterStreams) {
  // Star reduce of m messages into rank 0 on a line: one ejection channel,
  // each message after the first waits the switch overhead once the channel
  // is free. The chain (one stream per rank) is unchanged.
  const double bw = 1e9, o = 5e-6;
  const Bytes S = 1000;
  NetworkModel n = model(bw, 0.0, 0.0, 0, Switching::cut_through);
  n.ports = 1;
  n.switch_overhead_s = o;
  const std::int32_t P = 5;
  std::vector<std::int32_t> star(P, 0), chain(P);
  star[0] = -1;
  for (std::int32_t v = 0; v < P; ++v) chain[v] = v - 1;
  const SimResult a = simulate(tree_reduce(star, S, S), Topology::line(P), n);
  EXPECT_NEAR(a.time_s, (P - 1) * S / bw + (P - 2) * o, 1e-12);
  const SimResult c = simulate(tree_reduce(chain, S, S), Topology::line(P), n);
  n.switch_overhead_s = 0.0;
  EXPECT_NEAR(c.time_s, simulate(tree_reduce(chain, S, S), Topology::line(P), n).time_s, 1e-15);
  n.ports = 0;
  n.switch_overhead_s = o;
  EXPECT_THROW(n.validate(), std::invalid_argument);
}

// Task graph (simulate.hpp, TaskGraph): a transfer between two compute
// tasks, compute tasks queueing on one compute unit, gates, and the checks.
TEST(SimulateTasks, ComputeTransferComputeChain) {
  const Bytes S = 1000000;
  const double bw = 1e9;
  const Schedule s = one_transfer(2, 0, 1, S);
  const Topology topo = Topology::line(2);
  const NetworkModel net = model(bw, 0.0, 0.0, 0, Switching::cut_through);
  TaskGraph g;
  g.rank = {0, 1, 1};
  g.duration_s = {1e-3, 2e-3, 5e-4};
  // Ids: transfer 0, tasks 1..3. Task 0 (id 1) before the transfer, which
  // is before task 1 (id 2); task 2 (id 3) has no dependencies, so it runs
  // first on rank 1's unit.
  g.before = {1, 0};
  g.after = {0, 2};
  const SimResult r = simulate(s, topo, net, {}, g);
  ASSERT_EQ(r.task_finish_s.size(), 3u);
  EXPECT_DOUBLE_EQ(r.task_finish_s[0], 1e-3);
  EXPECT_DOUBLE_EQ(r.task_start_s[2], 0.0);
  EXPECT_DOUBLE_EQ(r.task_finish_s[2], 5e-4);
  const double arrive = 1e-3 + static_cast<double>(S) / bw;
  EXPECT_DOUBLE_EQ(r.task_start_s[1], arrive);
  EXPECT_DOUBLE_EQ(r.task_finish_s[1], arrive + 2e-3);
  EXPECT_DOUBLE_EQ(r.time_s, arrive + 2e-3);
  EXPECT_DOUBLE_EQ(r.compute_busy_s[1], 2.5e-3);
}

TEST(SimulateTasks, ComputeUnitServesTasksInReadyOrder) {
  const Schedule s = one_transfer(2, 0, 1, 8);
  const Topology topo = Topology::line(2);
  const NetworkModel net = model(1e9, 0.0, 0.0, 0, Switching::cut_through);
  TaskGraph g;
  // Three tasks on rank 0 ready at 0: they run back to back; a gate after
  // all of them completes at the sum.
  g.rank = {0, 0, 0, -1};
  g.duration_s = {1.0, 2.0, 3.0, 0.0};
  g.before = {1, 2, 3};
  g.after = {4, 4, 4};
  const SimResult r = simulate(s, topo, net, {}, g);
  EXPECT_DOUBLE_EQ(r.task_finish_s[3], 6.0);
  EXPECT_DOUBLE_EQ(r.task_start_s[3], 6.0);
  EXPECT_DOUBLE_EQ(r.time_s, 6.0);
}

TEST(SimulateTasks, RejectsBadGraphs) {
  const Schedule s = one_transfer(2, 0, 1, 8);
  const Topology topo = Topology::line(2);
  const NetworkModel net = model(1e9, 0.0, 0.0, 0, Switching::cut_through);
  TaskGraph bad_rank;
  bad_rank.rank = {2};
  bad_rank.duration_s = {1.0};
  EXPECT_THROW(simulate(s, topo, net, {}, bad_rank), std::invalid_argument);
  TaskGraph cycle;
  cycle.rank = {-1, -1};
  cycle.duration_s = {0.0, 0.0};
  cycle.before = {1, 2};
  cycle.after = {2, 1};
  EXPECT_THROW(simulate(s, topo, net, {}, cycle), std::invalid_argument);
  TaskGraph edge;
  edge.rank = {0};
  edge.duration_s = {1.0};
  edge.before = {0};
  edge.after = {5};
  EXPECT_THROW(simulate(s, topo, net, {}, edge), std::invalid_argument);
  TaskGraph gate_time;
  gate_time.rank = {-1};
  gate_time.duration_s = {1.0};
  EXPECT_THROW(simulate(s, topo, net, {}, gate_time), std::invalid_argument);
}

TEST(SimulateTasks, GatesReleasedDuringTheFirstScanStartOnce) {
  // Gate 0 (id 1) has no predecessors and releases gate 1 (id 2), which
  // releases the transfer (id 0): each must start exactly once.
  const Schedule s = one_transfer(2, 0, 1, 1000);
  const Topology topo = Topology::line(2);
  const NetworkModel net = model(1e9, 0.0, 0.0, 0, Switching::cut_through);
  TaskGraph g;
  g.rank = {-1, -1};
  g.duration_s = {0.0, 0.0};
  g.before = {1, 2};
  g.after = {2, 0};
  const SimResult r = simulate(s, topo, net, {}, g);
  EXPECT_DOUBLE_EQ(r.time_s, 1e-6);
  EXPECT_EQ(r.packets, 1);
}

TEST(Simulate, DataflowStreamStartedBeforeItsDataPacesFromItsStart) {
  // line(5), 1 GB/s, store-and-forward, 1000 B packets (1 us a link), alpha.
  // X (3 -> 4, one packet) completes at alpha + 1 us. A (0 -> 2, two
  // packets, two hops) delivers its packets at alpha + 2 and alpha + 3 us.
  // B (2 -> 3) forwards A's block (a stream) and also waits for X (a
  // complete edge): it starts at alpha + 1 us, so its first packet may go
  // at 2 alpha + 1 us, after A's first delivery when alpha > 1 us; then
  // both of its packets follow back to back, done at 2 alpha + 3 us.
  const double us = 1e-6;
  for (const double alpha : {5 * us, 20 * us}) {
    Collective c;
    c.kind = CollectiveKind::allgather;
    for (RankId r = 0; r < 5; ++r) c.owners.push_back(r);
    Schedule s(5, {2000, 1000, 1000, 1000, 1000}, c);
    const TransferId x = s.add_transfer(3, {4}, {BlockRange{3, 4}}, Op::copy, {});
    const TransferId a = s.add_transfer(0, {2}, {BlockRange{0, 1}}, Op::copy, {});
    const TransferId b = s.add_transfer(2, {3}, {BlockRange{0, 1}}, Op::copy, {a, x});
    NetworkModel n = model(1e9, 0.0, alpha, 1000, Switching::store_and_forward);
    n.dependencies = Dependencies::dataflow;
    SimOptions opt;
    opt.record_transfers = true;
    const SimResult r = simulate(s, Topology::line(5), n, opt);
    EXPECT_NEAR(r.transfer_finish_s[x], alpha + 1 * us, 1e-15);
    EXPECT_NEAR(r.transfer_finish_s[a], alpha + 3 * us, 1e-15);
    EXPECT_NEAR(r.transfer_ready_s[b], alpha + 1 * us, 1e-15);
    EXPECT_NEAR(r.transfer_finish_s[b], 2 * alpha + 3 * us, 1e-15) << alpha;
    EXPECT_NEAR(r.time_s, 2 * alpha + 3 * us, 1e-15);
  }
}
