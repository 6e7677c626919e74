// Topology: link counts, routes and hop counts checked against closed forms
// computed here, plus the tie rule, X-before-Y order and input validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "wafercoll/topology/topology.hpp"

using wafercoll::Link;
using wafercoll::LinkId;
using wafercoll::NodeId;
using wafercoll::Topology;

namespace {

// Directed neighbour links in one dimension of size n: a line has n-1 edges,
// a wrapped one of size >= 3 has n, and size 2 wraps onto its single edge.
long dim_edges(long n, bool wrap) {
  if (n <= 1) return 0;
  if (wrap && n >= 3) return n;
  return n - 1;
}

long expected_links(long rows, long cols, bool wrap) {
  return 2 * (rows * dim_edges(cols, wrap) + cols * dim_edges(rows, wrap));
}

long ring_dist(long a, long b, long n) {
  const long d = std::labs(a - b);
  return std::min(d, n - d);
}

// A route is valid when its links chain from src to dst.
void expect_chain(const Topology& t, NodeId src, NodeId dst,
                  const std::vector<LinkId>& r) {
  NodeId at = src;
  for (LinkId id : r) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, t.num_links());
    const Link l = t.link(id);
    ASSERT_EQ(l.src, at) << "route " << src << "->" << dst << " breaks at link " << id;
    at = l.dst;
  }
  EXPECT_EQ(at, dst);
}

// Every link is distinct and link_id inverts link().
void expect_consistent_links(const Topology& t) {
  std::set<std::pair<NodeId, NodeId>> seen;
  const std::vector<Link> all = t.links();
  ASSERT_EQ(static_cast<LinkId>(all.size()), t.num_links());
  for (LinkId i = 0; i < t.num_links(); ++i) {
    const Link& l = all[i];
    EXPECT_NE(l.src, l.dst);
    EXPECT_TRUE(seen.insert({l.src, l.dst}).second) << "duplicate link " << i;
    EXPECT_EQ(t.link_id(l.src, l.dst), i);
  }
}

struct Shape {
  NodeId rows, cols;
};

const Shape kShapes[] = {{1, 1}, {1, 2}, {1, 5}, {2, 1}, {2, 2}, {2, 3}, {3, 4},
                         {4, 3}, {5, 5}, {4, 6}, {6, 4}, {3, 3}};

}  // namespace

TEST(Topology, MeshLinksRoutesAndHops) {
  for (const Shape& s : kShapes) {
    const Topology t = Topology::mesh(s.rows, s.cols, 2e9, 1e-6);
    SCOPED_TRACE(t.name());
    EXPECT_EQ(t.kind(), "mesh");
    EXPECT_EQ(t.num_endpoints(), s.rows * s.cols);
    EXPECT_EQ(t.num_nodes(), s.rows * s.cols);
    EXPECT_EQ(t.num_links(),
              2 * (s.rows * (s.cols - 1) + s.cols * (s.rows - 1)));
    expect_consistent_links(t);
    for (NodeId a = 0; a < t.num_nodes(); ++a) {
      for (NodeId b = 0; b < t.num_nodes(); ++b) {
        const auto r = t.route(a, b);
        expect_chain(t, a, b, r);
        const long manhattan = std::labs(a / s.cols - b / s.cols) +
                               std::labs(a % s.cols - b % s.cols);
        EXPECT_EQ(static_cast<long>(r.size()), manhattan);
        EXPECT_EQ(t.hops(a, b), manhattan);
      }
    }
  }
}

TEST(Topology, TorusLinksRoutesAndHops) {
  for (const Shape& s : kShapes) {
    const Topology t = Topology::torus(s.rows, s.cols);
    SCOPED_TRACE(t.name());
    EXPECT_EQ(t.kind(), "torus");
    EXPECT_EQ(t.num_links(), expected_links(s.rows, s.cols, true));
    if (s.rows >= 3 && s.cols >= 3) EXPECT_EQ(t.num_links(), 4 * s.rows * s.cols);
    expect_consistent_links(t);
    for (NodeId a = 0; a < t.num_nodes(); ++a) {
      for (NodeId b = 0; b < t.num_nodes(); ++b) {
        const auto r = t.route(a, b);
        expect_chain(t, a, b, r);
        const long d = ring_dist(a / s.cols, b / s.cols, s.rows) +
                       ring_dist(a % s.cols, b % s.cols, s.cols);
        EXPECT_EQ(static_cast<long>(r.size()), d);
        EXPECT_EQ(t.hops(a, b), d);
      }
    }
  }
}

TEST(Topology, LineAndRingMatchOneRowGrids) {
  for (NodeId n : {1, 2, 3, 6, 7}) {
    const Topology line = Topology::line(n), mesh = Topology::mesh(1, n);
    const Topology ring = Topology::ring(n), torus = Topology::torus(1, n);
    EXPECT_EQ(line.kind(), "line");
    EXPECT_EQ(ring.kind(), "ring");
    EXPECT_EQ(line.name(), "line(" + std::to_string(n) + ")");
    EXPECT_EQ(ring.name(), "ring(" + std::to_string(n) + ")");
    EXPECT_EQ(line.rows(), 1);
    EXPECT_EQ(ring.cols(), n);
    EXPECT_EQ(line.num_links(), 2 * (n - 1));
    EXPECT_EQ(ring.num_links(), n >= 3 ? 2 * n : 2 * (n - 1));
    for (NodeId a = 0; a < n; ++a) {
      for (NodeId b = 0; b < n; ++b) {
        EXPECT_EQ(line.route(a, b), mesh.route(a, b));
        EXPECT_EQ(ring.route(a, b), torus.route(a, b));
        EXPECT_EQ(line.hops(a, b), std::abs(a - b));
        EXPECT_EQ(ring.hops(a, b), ring_dist(a, b, n));
      }
    }
  }
}

TEST(Topology, SizeTwoDimensionHasOneLinkEachWay) {
  const Topology t = Topology::torus(2, 2);
  EXPECT_EQ(t.num_links(), 8);
  EXPECT_GE(t.link_id(0, 1), 0);
  EXPECT_GE(t.link_id(1, 0), 0);
  EXPECT_EQ(t.link_id(0, 3), -1);  // no diagonals
  EXPECT_EQ(t.link_id(0, 0), -1);
  EXPECT_EQ(Topology::ring(2).num_links(), 2);
  EXPECT_EQ(Topology::ring(1).num_links(), 0);
  EXPECT_TRUE(Topology::ring(1).route(0, 0).empty());
}

TEST(Topology, RoutesGoXBeforeY) {
  for (const Topology& t : {Topology::mesh(4, 5), Topology::torus(4, 5)}) {
    SCOPED_TRACE(t.name());
    for (NodeId a = 0; a < t.num_nodes(); ++a) {
      for (NodeId b = 0; b < t.num_nodes(); ++b) {
        bool in_y = false;
        NodeId at = a;
        for (LinkId id : t.route(a, b)) {
          const Link l = t.link(id);
          const bool y_step = l.src / 5 != l.dst / 5;
          if (y_step) {
            EXPECT_EQ(l.src % 5, b % 5);  // Y moves in the destination column
          } else {
            EXPECT_FALSE(in_y) << "X step after a Y step on " << a << "->" << b;
            EXPECT_EQ(l.src / 5, a / 5);  // X moves along the source row
          }
          in_y = in_y || y_step;
          at = l.dst;
        }
        EXPECT_EQ(at, b);
      }
    }
  }
}

TEST(Topology, TorusTieGoesPositive) {
  const Topology t = Topology::torus(4, 6);
  // (0,0) -> (0,3): 3 hops either way round the row of 6: take +x (0->1->2->3).
  const auto x = t.route(0, 3);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(t.link(x[0]).dst, 1);
  // (0,4) -> (0,1): forward 3 (4->5->0->1) ties with backward 3: forward wins.
  const auto xw = t.route(4, 1);
  ASSERT_EQ(xw.size(), 3u);
  EXPECT_EQ(t.link(xw[0]).dst, 5);
  EXPECT_EQ(t.link(xw[1]).dst, 0);
  // (3,0) -> (1,0): 2 hops either way round the column of 4: +y wraps 3->0->1.
  const auto y = t.route(3 * 6, 1 * 6);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(t.link(y[0]).dst, 0);
  // Not a tie: (0,0) -> (0,4) is 2 hops backwards (0->5->4).
  const auto back = t.route(0, 4);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(t.link(back[0]).dst, 5);
  // Ring tie: ring(6) 5 -> 2 goes 5 -> 0 -> 1 -> 2.
  const Topology ring = Topology::ring(6);
  const auto rr = ring.route(5, 2);
  ASSERT_EQ(rr.size(), 3u);
  EXPECT_EQ(ring.link(rr[0]).dst, 0);
}

TEST(Topology, GridLinkAttributesAndCoords) {
  const Topology t = Topology::torus(3, 4, 5e9, 2e-7);
  for (const Link& l : t.links()) {
    EXPECT_EQ(l.bandwidth_Bps, 5e9);
    EXPECT_EQ(l.latency_s, 2e-7);
  }
  EXPECT_EQ(t.coords(7), std::make_pair(1, 3));
  EXPECT_EQ(t.node_at(2, 1), 9);
  EXPECT_EQ(t.name(), "torus(3x4)");
  // The wrap links of the drawing in the header.
  EXPECT_GE(t.link_id(3, 0), 0);
  EXPECT_GE(t.link_id(8, 0), 0);
  // The numbering example of the header.
  const Topology m23 = Topology::mesh(2, 3);
  EXPECT_EQ(m23.link_id(0, 1), 0);
  EXPECT_EQ(m23.link_id(1, 0), 4);
  EXPECT_EQ(m23.link_id(0, 3), 8);
  EXPECT_EQ(m23.link_id(3, 0), 11);
  EXPECT_EQ(Topology::mesh(3, 4).link_id(3, 0), -1);
  EXPECT_EQ(Topology::mesh(3, 4).link_id(3, 4), -1);  // row ends do not connect
}

TEST(Topology, LargeTorusIsCheap) {
  const Topology t = Topology::torus(1024, 1024);
  EXPECT_EQ(t.num_links(), 4 * 1024 * 1024);
  const NodeId a = t.node_at(1, 1000), b = t.node_at(700, 3);
  const auto r = t.route(a, b);
  expect_chain(t, a, b, r);
  EXPECT_EQ(static_cast<long>(r.size()),
            ring_dist(1, 700, 1024) + ring_dist(1000, 3, 1024));
}

namespace {

// Hand graph: endpoints 0..3, router 4.
//
//   0 -> 1 -> 3      links: 0: 0->1   1: 1->3   2: 0->4   3: 4->3
//   0 -> 4 -> 3             4: 3->2   5: 2->0   6: 0->2   7: 2->3
//   3 -> 2 -> 0
//   0 -> 2 -> 3
//
// 0 -> 3 has three 2-hop paths: via 1 (links 0,1), via 4 (2,3), via 2 (6,7);
// the lexicographically smallest id sequence is (0, 1).
Topology hand_graph() {
  std::vector<Link> links;
  for (auto [s, d] : std::vector<std::pair<NodeId, NodeId>>{
           {0, 1}, {1, 3}, {0, 4}, {4, 3}, {3, 2}, {2, 0}, {0, 2}, {2, 3}}) {
    links.push_back(Link{s, d, 1e9, 1e-6});
  }
  return Topology::custom(4, 1, links);
}

}  // namespace

TEST(Topology, CustomBfsOnHandGraph) {
  const Topology t = hand_graph();
  EXPECT_EQ(t.kind(), "custom");
  EXPECT_EQ(t.num_endpoints(), 4);
  EXPECT_EQ(t.num_nodes(), 5);
  EXPECT_EQ(t.num_links(), 8);
  EXPECT_EQ(t.rows(), 0);
  EXPECT_EQ(t.name(), "custom(4 endpoints, 1 router, 8 links)");
  EXPECT_EQ(Topology::custom(1, 0, {}).name(), "custom(1 endpoint, 0 links)");
  EXPECT_EQ(t.route(0, 3), (std::vector<LinkId>{0, 1}));
  EXPECT_EQ(t.route(0, 2), (std::vector<LinkId>{6}));
  EXPECT_EQ(t.route(3, 0), (std::vector<LinkId>{4, 5}));
  EXPECT_EQ(t.route(1, 0), (std::vector<LinkId>{1, 4, 5}));
  EXPECT_EQ(t.hops(1, 2), 2);
  EXPECT_EQ(t.link_id(4, 3), 3);
  EXPECT_EQ(t.link_id(3, 4), -1);
  EXPECT_TRUE(t.route(2, 2).empty());
  // Endpoint 1 has no in-link but 0->1: 3 -> 1 goes 3->2->0->1.
  EXPECT_EQ(t.route(3, 1), (std::vector<LinkId>{4, 5, 0}));
  EXPECT_EQ(t.hops_to(1), (std::vector<std::int32_t>{1, 0, 2, 3}));
  EXPECT_THROW(t.coords(0), std::invalid_argument);
}

TEST(Topology, CustomTieBreakPrefersLowestLinkId) {
  // Same graph, but the path via 2 is listed first: it must now win.
  std::vector<Link> links = {{0, 2, 1, 0}, {2, 3, 1, 0}, {0, 1, 1, 0}, {1, 3, 1, 0}};
  const Topology t = Topology::custom(4, 0, links);
  EXPECT_EQ(t.route(0, 3), (std::vector<LinkId>{0, 1}));
  std::swap(links[0], links[2]);  // 0->1 is now link 0
  EXPECT_EQ(Topology::custom(4, 0, links).route(0, 3), (std::vector<LinkId>{0, 3}));
}

TEST(Topology, CustomAgreesWithGridDistances) {
  const Topology grid = Topology::torus(5, 4);
  const Topology copy = Topology::custom(grid.num_endpoints(), 0, grid.links());
  for (NodeId a = 0; a < grid.num_nodes(); ++a) {
    for (NodeId b = 0; b < grid.num_nodes(); ++b) {
      EXPECT_EQ(copy.hops(a, b), grid.hops(a, b));
      expect_chain(copy, a, b, copy.route(a, b));
    }
  }
}

TEST(Topology, CustomUnreachableThrows) {
  const Topology t = Topology::custom(3, 0, {{0, 1, 1, 0}});
  EXPECT_EQ(t.route(0, 1).size(), 1u);
  EXPECT_THROW(t.route(1, 0), std::invalid_argument);
  EXPECT_THROW(t.hops(0, 2), std::invalid_argument);
  EXPECT_EQ(t.hops_to(0), (std::vector<std::int32_t>{0, -1, -1}));
  try {
    t.route(2, 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no route from 2 to 1");
  }
}

TEST(Topology, StarRoutesAreComputed) {
  const Topology t = Topology::star(5, 2e9, 1e-7);
  EXPECT_EQ(t.kind(), "star");
  EXPECT_EQ(t.name(), "star(5)");
  EXPECT_EQ(t.num_nodes(), 6);
  EXPECT_EQ(t.num_links(), 10);
  EXPECT_EQ(t.link(4).src, 2);
  EXPECT_EQ(t.link(4).dst, 5);
  EXPECT_EQ(t.link(5).dst, 2);
  for (NodeId a = 0; a < 5; ++a) {
    for (NodeId b = 0; b < 5; ++b) {
      const std::vector<LinkId> want =
          a == b ? std::vector<LinkId>{} : std::vector<LinkId>{2 * a, 2 * b + 1};
      EXPECT_EQ(t.route(a, b), want);
      EXPECT_EQ(t.search_route(a, b), want);  // what the search used to give
      EXPECT_EQ(t.hops(a, b), a == b ? 0 : 2);
    }
  }
  EXPECT_EQ(t.hops_to(3), (std::vector<std::int32_t>{2, 2, 2, 0, 2}));
  // Beyond the custom node limit: computed routes, no tables.
  const Topology big = Topology::star(50000);
  EXPECT_EQ(big.route(49999, 0), (std::vector<LinkId>{99998, 1}));
  EXPECT_THROW(big.next_hops(), std::invalid_argument);
  EXPECT_THROW(big.search_route(0, 1), std::invalid_argument);
  EXPECT_THROW(Topology::star(0), std::invalid_argument);
  EXPECT_THROW(Topology::star(Topology::kMaxStarEndpoints + 1), std::invalid_argument);
}

TEST(Topology, NextHopTableMatchesTheSearch) {
  // Two leaves of three endpoints under two spines, the second leaf listing
  // its spines backwards: every cross-leaf pair has two shortest paths.
  std::vector<Link> links;
  auto both = [&](NodeId u, NodeId v) {
    links.push_back({u, v, 1e9, 0});
    links.push_back({v, u, 1e9, 0});
  };
  for (NodeId i = 0; i < 6; ++i) both(i, 6 + i / 3);
  both(6, 8);
  both(6, 9);
  both(7, 9);
  both(7, 8);
  const Topology t = Topology::custom(6, 4, links);
  const std::vector<LinkId> table = t.next_hops();
  ASSERT_EQ(table.size(), 10u * 6u);
  for (NodeId a = 0; a < 6; ++a) {
    for (NodeId b = 0; b < 6; ++b) {
      const std::vector<LinkId> r = t.route(a, b);
      EXPECT_EQ(r, t.search_route(a, b));
      expect_chain(t, a, b, r);
      if (a != b) EXPECT_EQ(table[a * 6 + b], r.front());
    }
  }
  // 0 -> 3: up to leaf 6, then the lowest-id link to a spine (6 -> 8, id 12),
  // down to leaf 7 (8 -> 7, id 19), then to 3 (id 7).
  EXPECT_EQ(t.route(0, 3), (std::vector<LinkId>{0, 12, 19, 7}));
  // 3 -> 0 leaves leaf 7 by its lowest-id spine link (7 -> 9, id 16).
  EXPECT_EQ(t.route(3, 0), (std::vector<LinkId>{6, 16, 15, 1}));
  EXPECT_THROW(Topology::mesh(2, 2).next_hops(), std::invalid_argument);
}

namespace {

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(Topology, InvalidArgumentsNameTheParameter) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(Topology::line(0), std::invalid_argument);
  EXPECT_TRUE(contains(error_of([] { Topology::line(0); }), "n must be >= 1"));
  EXPECT_TRUE(contains(error_of([] { Topology::mesh(0, 3); }), "rows must be >= 1"));
  EXPECT_TRUE(contains(error_of([] { Topology::torus(3, -1); }), "cols must be >= 1"));
  EXPECT_TRUE(contains(error_of([] { Topology::ring(4, 0.0); }), "bandwidth_Bps"));
  EXPECT_TRUE(contains(error_of([&] { Topology::ring(4, inf); }), "bandwidth_Bps"));
  EXPECT_TRUE(contains(error_of([&] { Topology::ring(4, nan); }), "bandwidth_Bps"));
  EXPECT_TRUE(contains(error_of([] { Topology::mesh(2, 2, 1e9, -1.0); }), "latency_s"));
  EXPECT_TRUE(contains(error_of([&] { Topology::mesh(2, 2, 1e9, inf); }), "latency_s"));
  EXPECT_TRUE(
      contains(error_of([] { Topology::torus(4096, 4096); }), "exceeds the limit"));
  EXPECT_NO_THROW(Topology::torus(2048, 2048));  // exactly 2^22 nodes
  EXPECT_THROW(Topology::line(Topology::kMaxGridNodes + 1), std::invalid_argument);

  EXPECT_TRUE(contains(error_of([] { Topology::custom(0, 0, {}); }), "num_endpoints"));
  EXPECT_TRUE(
      contains(error_of([] { Topology::custom(2, -1, {}); }), "num_hidden_routers"));
  EXPECT_TRUE(contains(error_of([] { Topology::custom(20000, 1, {}); }), "20000"));
  EXPECT_TRUE(contains(error_of([] { Topology::custom(2, 0, {{0, 2, 1, 0}}); }),
                       "links[0].dst = 2 is out of range [0, 2)"));
  EXPECT_TRUE(contains(error_of([] { Topology::custom(2, 0, {{-1, 1, 1, 0}}); }),
                       "links[0].src"));
  EXPECT_TRUE(contains(error_of([] { Topology::custom(2, 0, {{1, 1, 1, 0}}); }),
                       "self-loop"));
  const std::vector<Link> dup = {{0, 1, 1, 0}, {1, 0, 1, 0}, {0, 1, 2, 0}};
  EXPECT_TRUE(contains(error_of([&] { Topology::custom(2, 0, dup); }),
                       "links[2] duplicates links[0]"));
  EXPECT_TRUE(contains(error_of([] { Topology::custom(2, 0, {{0, 1, 0, 0}}); }),
                       "links[0].bandwidth_Bps"));
  EXPECT_TRUE(contains(error_of([] { Topology::custom(2, 0, {{0, 1, 1, -2}}); }),
                       "links[0].latency_s"));
}

TEST(Topology, OutOfRangeIdsThrow) {
  const Topology t = Topology::mesh(2, 3);
  EXPECT_THROW(t.route(6, 0), std::out_of_range);
  EXPECT_THROW(t.route(0, -1), std::out_of_range);
  EXPECT_TRUE(contains(error_of([&] { t.route(0, 6); }), "dst = 6"));
  EXPECT_TRUE(contains(error_of([&] { t.hops(7, 0); }), "src = 7"));
  EXPECT_THROW(t.coords(6), std::out_of_range);
  EXPECT_THROW(t.link(t.num_links()), std::out_of_range);
  EXPECT_THROW(t.link_id(0, 6), std::out_of_range);
  EXPECT_THROW(t.node_at(2, 0), std::out_of_range);
  // Hidden routers are nodes but not endpoints: they cannot be route ends.
  const Topology c = hand_graph();
  EXPECT_THROW(c.route(4, 3), std::out_of_range);
  EXPECT_EQ(c.link_id(4, 3), 3);
}

TEST(Topology, RoutedCustomFollowsItsTable) {
  // 0 -> 1 -> 2 -> 0 and 1 -> 0; the table sends 1 -> 0 the long way.
  std::vector<Link> links = {{0, 1, 1e9, 0}, {1, 2, 1e9, 0}, {2, 0, 1e9, 0}, {1, 0, 1e9, 0}};
  // Pairs in row-major order: (0,0) (0,1) (0,2) (1,0) (1,1) (1,2) (2,0) (2,1) (2,2).
  std::vector<std::int64_t> off = {0, 0, 1, 3, 5, 5, 6, 7, 9, 9};
  std::vector<LinkId> ids = {0, 0, 1, 1, 2, 1, 2, 2, 0};
  Topology t = Topology::custom_routed(3, 0, links, off, ids).with_labels("tri", "tri(3)");
  EXPECT_EQ(t.kind(), "tri");
  EXPECT_EQ(t.name(), "tri(3)");
  EXPECT_EQ(t.route(1, 0), (std::vector<LinkId>{1, 2}));
  EXPECT_EQ(t.hops(2, 1), 2);
  EXPECT_EQ(t.hops_to(0), (std::vector<std::int32_t>{0, 2, 1}));
  ids[0] = 1;  // route 0 -> 1 no longer leaves node 0
  EXPECT_THROW(Topology::custom_routed(3, 0, links, off, ids), std::invalid_argument);
}

TEST(Topology, ClusterRoutesByLocality) {
  const Topology c = Topology::cluster(3, 4, 2, {}, {1e9, 2e9, 3e9}, {0, 0, 0});
  EXPECT_EQ(c.kind(), "cluster");
  EXPECT_EQ(c.num_endpoints(), 12);
  EXPECT_EQ(c.num_nodes(), 12 + 6 + 3 + 1);
  EXPECT_EQ(c.num_links(), 2 * (12 + 6 + 3));
  EXPECT_EQ(c.locality(0, 1), 0);
  EXPECT_EQ(c.locality(0, 2), 1);
  EXPECT_EQ(c.locality(0, 4), 2);
  for (NodeId a = 0; a < 12; ++a) {
    for (NodeId b = 0; b < 12; ++b) {
      const auto r = c.route(a, b);
      ASSERT_EQ(static_cast<std::int32_t>(r.size()), c.hops(a, b));
      if (a == b) continue;
      EXPECT_EQ(c.link(r.front()).src, a);
      EXPECT_EQ(c.link(r.back()).dst, b);
      for (std::size_t k = 1; k < r.size(); ++k) {
        EXPECT_EQ(c.link(r[k - 1]).dst, c.link(r[k]).src);
      }
    }
  }
  EXPECT_EQ(c.link(c.route(0, 4)[2]).bandwidth_Bps, 3e9);  // the NIC
  // Lanes: off-node routes bypass the process and socket links.
  const Topology l = Topology::cluster(3, 4, 2, {}, {1e9, 2e9, 3e9, 4e9}, {0, 0, 0, 1e-6});
  EXPECT_EQ(l.num_links(), 2 * (12 + 6 + 3) + 2 * 12);
  for (NodeId a = 0; a < 12; ++a) {
    for (NodeId b = 0; b < 12; ++b) {
      const auto r = l.route(a, b);
      ASSERT_EQ(static_cast<std::int32_t>(r.size()), l.hops(a, b));
      EXPECT_EQ(r, a / 4 == b / 4 ? c.route(a, b) : r);  // on-node: unchanged
      if (a / 4 == b / 4) continue;
      ASSERT_EQ(r.size(), 4u);
      EXPECT_EQ(l.link(r.front()).src, a);
      EXPECT_EQ(l.link(r.back()).dst, b);
      EXPECT_EQ(l.link(r.front()).bandwidth_Bps, 4e9);
      EXPECT_EQ(l.link(r[1]).bandwidth_Bps, 3e9);
      for (std::size_t k = 1; k < r.size(); ++k) {
        EXPECT_EQ(l.link(r[k - 1]).dst, l.link(r[k]).src);
      }
    }
  }
  EXPECT_THROW(Topology::cluster(2, 4, 2, {}, {1, 1, 1, -1}, {0, 0, 0, 0}),
               std::invalid_argument);
  EXPECT_THROW(Topology::cluster(2, 4, 3, {}, {1, 1, 1}, {0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(Topology::cluster(2, 2, 1, {0, 0, 0, 1}, {1, 1, 1}, {0, 0, 0}),
               std::invalid_argument);
}
