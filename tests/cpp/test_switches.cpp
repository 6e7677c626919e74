// Switch ranks (in-network reduction): the schedule's checks, the verifier's
// rules for switch cells, and the simulator's closed forms (simulate.hpp):
//   k GPUs, links of bandwidth B and latency l to one switch, S bytes each
//   as one packet, reduction at R input bytes/s, multicast back:
//     T = 2 (alpha + l + S/B) + k S / R.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "wafercoll/analysis/verify.hpp"
#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/simulate.hpp"

using namespace wafercoll;

namespace {

// k GPUs reduce block 0 into switch rank k, which multicasts the sum back.
// twice >= 0: that GPU reduces a second time; drop >= 0: the multicast does
// not wait for that GPU's reduction.
Schedule star_allreduce(RankId k, Bytes size, RankId twice = -1, RankId drop = -1) {
  Collective c;
  c.kind = CollectiveKind::allreduce;
  c.switches.assign(k + 1, 0);
  c.switches[k] = 1;
  Schedule s(k + 1, {size}, c);
  std::vector<TransferId> red;
  std::vector<RankId> gpus;
  for (RankId i = 0; i < k; ++i) {
    const TransferId t = s.add(i, k, 0, 1, Op::reduce, {});
    if (i != drop) red.push_back(t);
    gpus.push_back(i);
  }
  if (twice >= 0) red.push_back(s.add(twice, k, 0, 1, Op::reduce, {}));
  s.add_transfer(k, gpus, {BlockRange{0, 1}}, Op::copy, red);
  return s;
}

std::string verify_error(const Schedule& s) {
  try {
    verify(s);
  } catch (const ScheduleError& e) {
    return e.kind();
  }
  return "";
}

}  // namespace

TEST(Switches, SwitchRanksNeitherHoldNorNeed) {
  const Schedule s = star_allreduce(3, 8);
  EXPECT_TRUE(s.is_switch(3));
  EXPECT_FALSE(s.participates(3));
  EXPECT_FALSE(s.holds_input(3, 0));
  EXPECT_TRUE(s.participates(0));
}

TEST(Switches, BadSwitchMasksAreRefused) {
  Collective c;
  c.switches = {1, 1};
  EXPECT_THROW(Schedule(2, {8}, c), std::invalid_argument);  // no ordinary rank
  c.switches = {0, 1, 0};
  EXPECT_THROW(Schedule(2, {8}, c), std::invalid_argument);  // wrong length
  c.switches = {0, 1};
  c.participants = {1, 1};
  EXPECT_THROW(Schedule(2, {8}, c), std::invalid_argument);  // a participant
  Collective r;
  r.kind = CollectiveKind::reduce;
  r.root = 1;
  r.switches = {0, 1};
  EXPECT_THROW(Schedule(2, {8}, r), std::invalid_argument);  // root must participate
  Collective u;
  u.kind = CollectiveKind::unknown;
  u.switches = {0, 0};  // no switch at all: the same as no mask
  EXPECT_FALSE(Schedule(2, {8}, u).has_switches());
  u.switches = {0, 1};
  EXPECT_THROW(Schedule(2, {8}, u), std::invalid_argument);
}

TEST(Switches, ConcurrentReductionsAreProvedDoubleCountsAndRacesRefuted) {
  EXPECT_EQ(verify_error(star_allreduce(5, 40)), "");
  EXPECT_EQ(verify_error(star_allreduce(4, 32, /*twice=*/2)), "double_count");
  EXPECT_EQ(verify_error(star_allreduce(4, 32, -1, /*drop=*/1)), "race");
}

TEST(Switches, ReduceAndMulticastClosedForm) {
  const double bw = 2e9, lat = 1.5e-6, alpha = 4e-7, rate = 3e9;
  for (RankId k : {1, 3, 7}) {
    for (Bytes size : {Bytes{1}, Bytes{999}, Bytes{4096}}) {
      const Topology t = Topology::star(k, bw, lat);
      NetworkModel net;
      net.alpha_s = alpha;
      net.switch_reduce_Bps = rate;
      const SimResult r = simulate(star_allreduce(k, size), t, net);
      const double want = 2 * (alpha + lat + size / bw) + k * size / rate;
      EXPECT_NEAR(r.time_s, want, 1e-12 * want) << "k=" << k << " S=" << size;
      ASSERT_EQ(r.switch_busy_s.size(), static_cast<std::size_t>(k + 1));
      EXPECT_NEAR(r.switch_busy_s[k], k * size / rate, 1e-12 * want);
    }
  }
}

TEST(Switches, PipelinedReductionClosedForm) {
  const RankId k = 4;
  const Bytes m = 500;
  const std::int64_t n = 6;
  const double bw = 2e9, lat = 1e-6, alpha = 2e-7;
  for (double rate : {1e9, 8e9, 64e9}) {
    NetworkModel net;
    net.alpha_s = alpha;
    net.packet_bytes = m;
    net.switch_reduce_Bps = rate;
    const SimResult r = simulate(star_allreduce(k, n * m), Topology::star(k, bw, lat), net);
    const double reduced = alpha + lat + m / bw + k * m / rate +
                           (n - 1) * std::max(m / bw, k * m / rate);
    const double want = reduced + alpha + lat + n * m / bw;
    EXPECT_NEAR(r.time_s, want, 1e-12 * want) << "rate=" << rate;
  }
}

TEST(Switches, PlacementAndBufferAreChecked) {
  const Schedule s = star_allreduce(3, 2000);
  const Topology t = Topology::star(3, 1e9, 0.0);
  NetworkModel net;
  SimOptions opt;
  opt.placement = {0, 1, 2, 2};  // the switch rank on an endpoint
  EXPECT_THROW(simulate(s, t, net, opt), std::invalid_argument);
  opt.placement = {3, 1, 2, 0};  // an ordinary rank on the router
  EXPECT_THROW(simulate(s, t, net, opt), std::invalid_argument);
  net.switch_buffer_bytes = 1999;
  EXPECT_THROW(simulate(s, t, net), std::invalid_argument);
  net.switch_buffer_bytes = 2000;
  EXPECT_GT(simulate(s, t, net).time_s, 0.0);
  net.switch_reduce_Bps = -1.0;
  EXPECT_THROW(net.validate(), std::invalid_argument);
}

// Routes to and from a switch more than one hop away: GPU 0 - router 2 -
// router 3 - GPU 1, the reducing switch on router 3 (rank 3; rank 2, also
// a router, is a switch rank that idles). Cut-through, bandwidth B and
// latency l per link, free reduction: GPU 0's data arrives at 2l + S/B, the
// multicast back to GPU 0 crosses two links: T = 4l + 2S/B.
TEST(Switches, MultiHopRoutesToASwitch) {
  const double bw = 1e9, lat = 1e-6;
  std::vector<Link> links;
  for (auto [a, b] : std::vector<std::pair<NodeId, NodeId>>{{0, 2}, {2, 3}, {3, 1}}) {
    links.push_back({a, b, bw, lat});
    links.push_back({b, a, bw, lat});
  }
  const Topology t = Topology::custom(2, 2, links);
  Collective c;
  c.switches = {0, 0, 1, 1};
  Schedule s(4, {1000}, c);
  const TransferId a = s.add(0, 3, 0, 1, Op::reduce, {});
  const TransferId b = s.add(1, 3, 0, 1, Op::reduce, {});
  s.add_transfer(3, {0, 1}, {BlockRange{0, 1}}, Op::copy, {a, b});
  EXPECT_NO_THROW(verify(s));
  const SimResult r = simulate(s, t, NetworkModel{});
  EXPECT_NEAR(r.time_s, 4 * lat + 2 * 1000 / bw, 1e-15);
  // link 2 -> 3 (id 2) carries GPU 0's data up, link 3 -> 2 (id 3) the sum down
  EXPECT_EQ(r.link_bytes[2], 1000);
  EXPECT_EQ(r.link_bytes[3], 1000);
}

// Equal-cost multipath (NetworkModel::ecmp). Endpoints 0 and 1 joined by two
// routers, 2 and 3, in parallel: 0 -> 2 -> 1 and 0 -> 3 -> 1, both 2 hops.
// Without ECMP every message takes the topology's route (the lower link ids,
// via 2); with it, flows split over both, each on a shortest path, and the
// same schedule gives the same split every time.
TEST(Switches, EcmpSplitsFlowsOverEqualPaths) {
  std::vector<Link> links;
  for (auto [a, b] :
       std::vector<std::pair<NodeId, NodeId>>{{0, 2}, {2, 1}, {0, 3}, {3, 1}}) {
    links.push_back(Link{a, b, 1e9, 0.0});
  }
  const Topology t = Topology::custom(2, 2, links);
  Collective c;
  c.kind = CollectiveKind::unknown;
  Schedule s(2, std::vector<Bytes>(64, 1000), c);
  for (BlockId b = 0; b < 64; ++b) s.add(0, 1, b, b + 1, Op::copy, {});
  NetworkModel net;
  net.bandwidth_Bps = 1e9;
  const SimResult single = simulate(s, t, net);
  EXPECT_EQ(single.link_bytes[0], 64000);
  EXPECT_EQ(single.link_bytes[2], 0);
  net.ecmp = true;
  const SimResult a = simulate(s, t, net);
  const SimResult b = simulate(s, t, net);
  EXPECT_EQ(a.link_bytes, b.link_bytes);
  EXPECT_GT(a.link_bytes[0], 0);
  EXPECT_GT(a.link_bytes[2], 0);
  EXPECT_EQ(a.link_bytes[0], a.link_bytes[1]);  // each flow crosses a whole path
  EXPECT_EQ(a.link_bytes[2], a.link_bytes[3]);
  EXPECT_EQ(a.link_bytes[0] + a.link_bytes[2], 64000);
  // Cut-through, no latency: a message holds both links of its path for
  // 1000 / B at once, so the busier path sets the time.
  const Bytes most = std::max(a.link_bytes[0], a.link_bytes[2]);
  EXPECT_NEAR(a.time_s, static_cast<double>(most) / 1e9, 1e-12);
  EXPECT_LT(a.time_s, single.time_s);
}

// Packet spraying (NetworkModel::spray) on a two-level fat tree: two leaves,
// s spines, a host link as fast as the s uplinks together (s B). One flow of
// n packets of M bytes puts every s-th packet on each spine; each spine
// serves one in M / B while the host sends the next s, so nothing queues:
//   T = (n - 1) M / (s B) + M / B,  against n M / B on one path.
TEST(Switches, SprayDealsPacketsOverEveryPath) {
  constexpr double B = 1e9;
  constexpr Bytes M = 4096;
  for (const std::int32_t spines : {2, 3}) {
    for (const std::int64_t n : {1, 7, 24}) {
      // Hosts 0 (leaf 2) and 1 (leaf 3); spines 4 ...
      std::vector<Link> links{{0, 2, spines * B, 0.0}, {2, 0, spines * B, 0.0},
                              {1, 3, spines * B, 0.0}, {3, 1, spines * B, 0.0}};
      for (NodeId sp = 4; sp < 4 + spines; ++sp) {
        for (NodeId leaf : {2, 3}) {
          links.push_back(Link{leaf, sp, B, 0.0});
          links.push_back(Link{sp, leaf, B, 0.0});
        }
      }
      const Topology t = Topology::custom(2, 2 + spines, links);
      Collective c;
      c.kind = CollectiveKind::unknown;
      Schedule s(2, {n * M}, c);
      s.add(0, 1, 0, 1, Op::copy, {});
      NetworkModel net;
      net.packet_bytes = M;
      const SimResult single = simulate(s, t, net);
      EXPECT_NEAR(single.time_s, static_cast<double>(n * M) / B, 1e-15);
      net.spray = true;
      const SimResult sprayed = simulate(s, t, net);
      const double want = static_cast<double>(n - 1) * M / (spines * B) + M / B;
      EXPECT_NEAR(sprayed.time_s, want, 1e-15);
      // Leaf 2's uplinks (links 4, 8, ...): floor(n / s) or ceil(n / s) packets.
      Bytes sum = 0;
      for (std::int32_t i = 0; i < spines; ++i) {
        const Bytes up = sprayed.link_bytes[4 + 4 * i];
        EXPECT_GE(up, n / spines * M);
        EXPECT_LE(up, (n + spines - 1) / spines * M);
        sum += up;
      }
      EXPECT_EQ(sum, n * M);
    }
  }
}

TEST(Switches, SprayNeedsCompleteDependenciesAndNoEcmp) {
  NetworkModel net;
  net.spray = true;
  net.ecmp = true;
  EXPECT_THROW(net.validate(), std::invalid_argument);
  net.ecmp = false;
  net.dependencies = Dependencies::dataflow;
  EXPECT_THROW(net.validate(), std::invalid_argument);
  net.dependencies = Dependencies::complete;
  EXPECT_NO_THROW(net.validate());
}
