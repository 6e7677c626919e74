// Route and trie preparation tests: the tries share the stages that a
// multicast's routes have in common, follow the topology's routes in order,
// and the placement and bounds are checked before anything is built.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <vector>

#include "wafercoll/simulate/routes.hpp"

using namespace wafercoll;
using namespace wafercoll::sim;

namespace {

// One multicast from rank 0 to ranks 2 and 3 of a line: routes 0->1->2 and
// 0->1->2->3 share their first two links.
Schedule line_multicast() {
  Collective c;
  c.kind = CollectiveKind::broadcast;
  c.root = 0;
  Schedule s(4, {64}, c);
  s.add_transfer(0, {2, 3}, {BlockRange{0, 1}}, Op::copy, {});
  return s;
}

// The stages of the trie path that ends destination slot `slot`, from the
// first stage on.
std::vector<std::int32_t> path_to(const StageTries& tries, std::int64_t slot) {
  std::int64_t end = -1;
  for (std::size_t n = 0; n < tries.nodes.size(); ++n)
    if (tries.nodes[n].term == slot) end = static_cast<std::int64_t>(n);
  // Parents are not stored: search from the top for the chain to `end`.
  std::vector<std::int32_t> path;
  std::vector<std::int32_t> stack;
  const std::function<bool(std::int32_t)> walk = [&](std::int32_t n) {
    for (; n >= 0; n = tries.nodes[n].next_sibling) {
      stack.push_back(tries.nodes[n].resource);
      if (n == end) return true;
      if (walk(tries.nodes[n].first_child)) return true;
      stack.pop_back();
    }
    return false;
  };
  if (walk(static_cast<std::int32_t>(tries.base[0]))) path = stack;
  return path;
}

TEST(Routes, MulticastSharesItsCommonPrefix) {
  const Schedule s = line_multicast();
  const Topology topo = Topology::line(4);
  const NetworkModel net;
  const std::vector<NodeId> place = resolve_placement(s, topo, {});
  const std::vector<std::uint32_t> one(1, 1);
  const PacketCounts packets{one.data(), 1};
  const std::int64_t bound = count_route_stages(s, topo, net, place, packets, computes_routes(topo, net));
  EXPECT_EQ(bound, 2 + 3);  // the two routes counted separately
  const StageTries tries = build_stage_tries(s, topo, net, place, packets, bound, computes_routes(topo, net));
  ASSERT_EQ(tries.base.size(), 2u);
  EXPECT_EQ(tries.base[1], 3);  // shared links 0->1, 1->2, then 2->3
  const std::vector<LinkId> r2 = topo.route(0, 2), r3 = topo.route(0, 3);
  EXPECT_EQ(path_to(tries, 0), std::vector<std::int32_t>(r2.begin(), r2.end()));
  EXPECT_EQ(path_to(tries, 1), std::vector<std::int32_t>(r3.begin(), r3.end()));
  EXPECT_TRUE(tries.nodes[0].top());
  EXPECT_EQ(tries.nodes[0].transfer(), 0);
}

TEST(Routes, PortStagesAreNeverShared) {
  const Schedule s = line_multicast();
  const Topology topo = Topology::line(4);
  NetworkModel net;
  net.ports = 1;
  const std::vector<NodeId> place = resolve_placement(s, topo, {});
  const std::vector<std::uint32_t> one(1, 1);
  const PacketCounts packets{one.data(), 1};
  const std::int64_t bound = count_route_stages(s, topo, net, place, packets, computes_routes(topo, net));
  EXPECT_EQ(bound, (2 + 2) + (3 + 2));
  const StageTries tries = build_stage_tries(s, topo, net, place, packets, bound, computes_routes(topo, net));
  // Injection and the three links shared; one ejection stage per destination.
  EXPECT_EQ(tries.base[1], 1 + 3 + 2);
  // With one channel per port the stages are known: L + src, L + E + dst.
  const auto L = topo.num_links();
  const auto E = topo.num_endpoints();
  EXPECT_EQ(tries.nodes[0].resource, L + 0);
  const std::vector<std::int32_t> p3 = path_to(tries, 1);
  EXPECT_EQ(p3.back(), L + E + 3);
}

TEST(Routes, PlacementIsChecked) {
  const Schedule s = line_multicast();
  const Topology topo = Topology::line(4);
  SimOptions opt;
  opt.placement = {3, 2, 1, 0};
  EXPECT_EQ(resolve_placement(s, topo, opt), opt.placement);
  opt.placement = {0, 0, 1, 2};
  EXPECT_THROW(resolve_placement(s, topo, opt), std::invalid_argument);
  opt.placement = {0, 1, 2};
  EXPECT_THROW(resolve_placement(s, topo, opt), std::invalid_argument);
  EXPECT_THROW(resolve_placement(s, Topology::line(3), {}), std::invalid_argument);
}

}  // namespace
