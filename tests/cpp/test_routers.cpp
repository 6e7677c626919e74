// Router model (simulate/routers.hpp): closed forms of one flow alone, turns
// among input ports, back-pressure, deadlock and malformed input.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <vector>

#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/pyset.hpp"
#include "wafercoll/simulate/routers.hpp"

using namespace wafercoll;

namespace {

// A line 0 -> 1 -> ... -> n of equal links.
RouterNetwork line(int n, double bw, double lat, std::int64_t buffer) {
  RouterNetwork net;
  for (int i = 0; i < n; ++i) {
    net.link_src.push_back(i);
    net.link_dst.push_back(i + 1);
    net.inv_bw.push_back(1.0 / bw);
    net.latency_s.push_back(lat);
  }
  net.num_nodes = n + 1;
  net.buffer_packets = buffer;
  return net;
}

// One transfer per (route, packets), packets of M bytes, no dependencies.
RouterFlows flows(const std::vector<std::vector<std::int32_t>>& routes,
                  const std::vector<std::int64_t>& packets, std::int64_t M) {
  RouterFlows f;
  f.packet_bytes = M;
  f.route_off.push_back(0);
  f.dep_off.push_back(0);
  for (std::size_t t = 0; t < routes.size(); ++t) {
    f.bytes.push_back(packets[t] * M);
    f.route_links.insert(f.route_links.end(), routes[t].begin(), routes[t].end());
    f.route_off.push_back(static_cast<std::int64_t>(f.route_links.size()));
    f.dep_off.push_back(0);
  }
  return f;
}

constexpr std::int64_t kNoLimit = std::int64_t{1} << 62;

}  // namespace

TEST(Routers, OneFlowAloneIsThePipelinedClosedForm) {
  // Cut-through without flits: alpha + h lat + n M / bw over h equal links.
  const double bw = 1e9, lat = 1e-7, alpha = 2e-7;
  const std::int64_t n = 10, M = 1000;
  for (int h : {1, 2, 5}) {
    RouterNetwork net = line(h, bw, lat, 64);
    std::vector<std::int32_t> r;
    for (int i = 0; i < h; ++i) r.push_back(i);
    RouterFlows f = flows({r}, {n}, M);
    f.alpha_s = alpha;
    const RouterResult res = simulate_routers(f, net, kNoLimit);
    EXPECT_NEAR(res.finish_s[0], alpha + h * lat + n * M / bw, 1e-15);
    EXPECT_EQ(res.link_bytes[0], n * M);
    EXPECT_EQ(res.events, n * h);
  }
}

TEST(Routers, StoreAndForwardWithOnePacketPerBuffer) {
  // Store-and-forward over 2 links of latency L = tau = M / bw, buffer 1:
  // packet k enters link 0 only when packet k - 1 has left link 0's buffer
  // for link 1 (tau + L after it entered), and link 1's credit comes back at
  // delivery, so a packet enters every tau + L and the last is delivered
  // 2 (tau + L) after it entered: (n + 1) (tau + L).
  const double bw = 1e9;
  const std::int64_t n = 6, M = 1000;
  const double tau = static_cast<double>(M) / bw, L = tau;
  RouterNetwork net = line(2, bw, L, 1);
  net.store_and_forward = true;
  EXPECT_NEAR(simulate_routers(flows({{0, 1}}, {n}, M), net, kNoLimit).finish_s[0],
              static_cast<double>(n + 1) * (tau + L), 1e-15);
  // With room for every packet link 0 never waits: (n + 1) tau + 2 L.
  net.buffer_packets = n;
  EXPECT_NEAR(simulate_routers(flows({{0, 1}}, {n}, M), net, kNoLimit).finish_s[0],
              static_cast<double>(n + 1) * tau + 2 * L, 1e-15);
}

TEST(Routers, DependenciesStartAlphaAfterTheLastOneFinished) {
  RouterNetwork net = line(1, 1e9, 0.0, 4);
  RouterFlows f = flows({{0}, {0}}, {3, 2}, 1000);
  f.alpha_s = 1e-6;
  f.deps = {0};
  f.dep_off = {0, 0, 1};
  const RouterResult res = simulate_routers(f, net, kNoLimit);
  EXPECT_NEAR(res.ready_s[1], res.finish_s[0], 0.0);
  EXPECT_NEAR(res.finish_s[1], res.finish_s[0] + 1e-6 + 2e-6, 1e-15);
}

TEST(Routers, ACycleOfFullBuffersIsADeadlock) {
  // Four nodes on a unidirectional ring, each sending two hops on.
  RouterNetwork net;
  for (int i = 0; i < 4; ++i) {
    net.link_src.push_back(i);
    net.link_dst.push_back((i + 1) % 4);
    net.inv_bw.push_back(1e-9);
    net.latency_s.push_back(0.0);
  }
  net.num_nodes = 4;
  net.buffer_packets = 1;
  const RouterFlows f = flows({{0, 1}, {1, 2}, {2, 3}, {3, 0}}, {8, 8, 8, 8}, 1000);
  EXPECT_THROW(simulate_routers(f, net, kNoLimit), std::runtime_error);
  net.buffer_packets = 16;
  EXPECT_NO_THROW(simulate_routers(f, net, kNoLimit));
}

TEST(Routers, MalformedInputIsRefused) {
  RouterNetwork net = line(2, 1e9, 0.0, 4);
  auto refused = [&](const RouterFlows& f) {
    EXPECT_THROW(simulate_routers(f, net, kNoLimit), std::invalid_argument);
  };
  refused(flows({{1, 0}}, {1}, 8));  // not a path
  refused(flows({{0, 7}}, {1}, 8));  // a link out of range
  RouterFlows negative = flows({{0}}, {1}, 8);
  negative.bytes[0] = -1;
  refused(negative);
  RouterFlows cyc = flows({{0}, {0}}, {1, 1}, 8);
  cyc.deps = {1, 0};
  cyc.dep_off = {0, 1, 2};
  refused(cyc);
  net.buffer_packets = 0;
  refused(flows({{0}}, {1}, 8));
}

TEST(Routers, InfiniteOrNegativeCostsAreRefused) {
  // Event times must stay finite and >= 0: the event heap orders their bits.
  const RouterFlows f = flows({{0, 1}}, {2}, 8);
  auto refused = [&](const RouterNetwork& net, const RouterFlows& fl) {
    EXPECT_THROW(simulate_routers(fl, net, kNoLimit), std::invalid_argument);
  };
  RouterNetwork net = line(2, 1e9, 0.0, 4);
  EXPECT_NO_THROW(simulate_routers(f, net, kNoLimit));
  net.inv_bw[1] = std::numeric_limits<double>::infinity();
  refused(net, f);
  net = line(2, 1e9, 0.0, 4);
  net.latency_s[0] = std::numeric_limits<double>::quiet_NaN();
  refused(net, f);
  RouterFlows late = f;
  late.alpha_s = std::numeric_limits<double>::infinity();
  refused(line(2, 1e9, 0.0, 4), late);
  late.alpha_s = -1e-9;
  refused(line(2, 1e9, 0.0, 4), late);
}

TEST(Routers, RunsOverMaxEventsAreRefusedWithTheirCount) {
  // 10 packets over 2 links and 3 over 1: 23 admissions.
  const RouterNetwork net = line(2, 1e9, 0.0, 4);
  const RouterFlows f = flows({{0, 1}, {1}}, {10, 3}, 1000);
  EXPECT_EQ(simulate_routers(f, net, 23).events, 23);
  try {
    simulate_routers(f, net, 22);
    FAIL() << "not refused";
  } catch (const TooManyEvents& e) {
    EXPECT_EQ(e.events(), 23);
    EXPECT_EQ(e.max_events(), 22);
  }
}

TEST(Routers, DriverInterfacesTakeTransfersInTurn) {
  // Node 0 of a star sends 4 packets to each of 3 leaves; an interface is
  // busy 4 handovers of 1 s per transfer, so with k interfaces transfer i
  // starts at (i / k) * 4 s and takes 4 packets of 1 s on its own link.
  RouterNetwork net;
  for (int leaf = 1; leaf <= 3; ++leaf) {
    net.link_src.push_back(0);
    net.link_dst.push_back(leaf);
    net.inv_bw.push_back(1.0);
    net.latency_s.push_back(0.0);
  }
  net.num_nodes = 4;
  net.buffer_packets = 64;
  for (std::int32_t k : {1, 2, 3}) {
    RouterFlows f = flows({{0}, {1}, {2}}, {4, 4, 4}, 1);
    f.interfaces = k;
    f.handover_s = 1.0;
    const RouterResult r = simulate_routers(f, net, kNoLimit);
    for (int t = 0; t < 3; ++t) EXPECT_DOUBLE_EQ(r.finish_s[t], (t / k) * 4.0 + 4.0) << k;
  }
}

TEST(Routers, DriverAggregatesOneReductionAtATime) {
  // Two 4-packet reductions reach node 1 of a line at 4 s; aggregating one
  // takes 8 bytes x 0.5 s.
  RouterNetwork net;
  net.link_src = {0, 2};
  net.link_dst = {1, 1};
  net.inv_bw = {1.0, 1.0};
  net.latency_s = {0.0, 0.0};
  net.num_nodes = 3;
  net.buffer_packets = 64;
  RouterFlows f = flows({{0}, {1}}, {4, 4}, 2);
  f.interfaces = 1;
  f.aggregate_s_per_byte = 0.5;
  f.reduces = {1, 1};
  const RouterResult r = simulate_routers(f, net, kNoLimit);
  EXPECT_DOUBLE_EQ(r.finish_s[0], 12.0);
  EXPECT_DOUBLE_EQ(r.finish_s[1], 16.0);
}

TEST(Routers, PythonSetOrderReusesTheLastDummy) {
  // CPython 3.11: {0, 1, 2, 3} less 0 and 1, then 1 and 0 back: slots 1, 0
  // are reused, so the order is again 0, 1, 2, 3; a larger set, once
  // resized, iterates in its new slots' order.
  PySetSlots s(4);
  s.remove(0);
  s.remove(1);
  EXPECT_EQ(s.first(), 2);
  s.add(1);
  EXPECT_EQ(s.first(), 1);
  s.add(0);
  EXPECT_EQ(s.order(), (std::vector<std::int32_t>{0, 1, 2, 3}));
  PySetSlots big(9);
  EXPECT_EQ(big.order(), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(Routers, MergedEventRunsKeepTheOrderOfOneHeap) {
  // Random flows on a 3 x 3 mesh of links of random speeds and latencies
  // (cut-through arrivals then leave a link out of time order, and join no
  // run), with and without a driver: every result of the merged queue equals
  // that of one heap of all events.
  std::uint64_t seed = 12345;
  auto rnd = [&seed](std::uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>((seed >> 33) % n);
  };
  const int side = 3;
  RouterNetwork net;
  std::vector<std::vector<std::int32_t>> link(side * side, std::vector<std::int32_t>(side * side, -1));
  for (int v = 0; v < side * side; ++v)
    for (int w : {v + 1, v - 1, v + side, v - side}) {
      if (w < 0 || w >= side * side || (std::abs(w - v) == 1 && w / side != v / side)) continue;
      link[v][w] = static_cast<std::int32_t>(net.link_src.size());
      net.link_src.push_back(v);
      net.link_dst.push_back(w);
      net.inv_bw.push_back(1.0 / static_cast<double>(1 + rnd(4)));
      net.latency_s.push_back(static_cast<double>(rnd(3)));
    }
  net.num_nodes = side * side;
  auto xy = [&](int a, int b) {  // X then Y
    std::vector<std::int32_t> r;
    while (a % side != b % side) {
      const int n = a + (b % side > a % side ? 1 : -1);
      r.push_back(link[a][n]);
      a = n;
    }
    while (a != b) {
      const int n = a + (b > a ? side : -side);
      r.push_back(link[a][n]);
      a = n;
    }
    return r;
  };
  for (int trial = 0; trial < 24; ++trial) {
    std::vector<std::vector<std::int32_t>> routes;
    std::vector<std::int64_t> packets;
    const int T = 6 + static_cast<int>(rnd(20));
    for (int t = 0; t < T; ++t) {
      const int a = static_cast<int>(rnd(side * side));
      int b = static_cast<int>(rnd(side * side - 1));
      b += b >= a;
      routes.push_back(xy(a, b));
      packets.push_back(1 + rnd(12));
    }
    RouterFlows f = flows(routes, packets, 4);
    for (int t = 1; t < T; ++t)  // a few dependencies on earlier transfers
      if (rnd(3) == 0) {
        f.deps.push_back(static_cast<std::int32_t>(rnd(t)));
        for (int u = t; u < T; ++u) ++f.dep_off[u + 1];
      }
    f.bytes.back() -= 3;  // a short last packet
    net.flit_bytes = trial % 3 == 0 ? 0 : 2;
    net.store_and_forward = trial % 4 == 1;
    net.buffer_packets = 1 + rnd(4);
    if (trial % 2 == 1) {
      f.interfaces = 1 + static_cast<std::int32_t>(rnd(3));
      f.handover_s = 0.5;
      f.channel_s_per_byte = 0.25 * static_cast<double>(rnd(3));
      f.interface_queue_packets = rnd(4);
      f.interface_buffer_packets = 1 + rnd(3);
      f.python_set_order = trial % 4 == 3;
    }
    RouterNetwork one = net;
    one.merge_event_runs = false;
    const RouterResult a = simulate_routers(f, net, kNoLimit);
    const RouterResult b = simulate_routers(f, one, kNoLimit);
    EXPECT_EQ(a.finish_s, b.finish_s) << trial;
    EXPECT_EQ(a.ready_s, b.ready_s) << trial;
    EXPECT_EQ(a.link_busy_s, b.link_busy_s) << trial;
    EXPECT_EQ(a.link_bytes, b.link_bytes) << trial;
    EXPECT_EQ(a.events, b.events) << trial;
  }
}
