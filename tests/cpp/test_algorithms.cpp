// Tests of the compiled builders (generic and the wafer tree reduce), the
// Auto-Gen dynamic program, the spatial metrics and the executor. Expected
// values come from closed forms or from an independent, slower method
// written here (the O(P^2) recurrences of reduce1d.hpp as the header states
// them, sums computed directly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <random>
#include <vector>

#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/algorithms/wafer.hpp"
#include "wafercoll/analysis/execute.hpp"
#include "wafercoll/analysis/metrics.hpp"
#include "wafercoll/analysis/verify.hpp"
#include "wafercoll/wafer/reduce1d.hpp"
#include "wafercoll/units.hpp"

using namespace wafercoll;

namespace {

// Run s on random integer inputs (elements per rank) and return the outputs.
std::vector<std::int64_t> run(const Schedule& s, std::int64_t elements,
                              std::vector<std::int64_t>& in, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> dist(-1000, 1000);
  const std::int64_t n = static_cast<std::int64_t>(s.num_ranks()) * elements;
  in.resize(n);
  for (auto& x : in) x = dist(rng);
  std::vector<std::int64_t> out(n, 0);
  execute<std::int64_t>(s, in.data(), out.data(), elements);
  return out;
}

std::vector<std::int64_t> column_sums(const std::vector<std::int64_t>& in, RankId p,
                                      std::int64_t elements) {
  std::vector<std::int64_t> sum(elements, 0);
  for (RankId r = 0; r < p; ++r)
    for (std::int64_t e = 0; e < elements; ++e) sum[e] += in[r * elements + e];
  return sum;
}

// E(n, d, c) of reduce1d.hpp by its recurrence, O(P^2) per layer.
constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max() / 4;

double autogen_brute(std::int32_t P, std::int64_t B, double T_R) {
  if (P == 1) return 0.0;
  const double k = 2 * T_R + 1;
  double best = std::numeric_limits<double>::infinity();
  // E[d][c][n]
  const int D = P - 1, C = P - 1;
  std::vector<std::vector<std::vector<std::int64_t>>> E(
      D + 1, std::vector<std::vector<std::int64_t>>(C + 1, std::vector<std::int64_t>(P + 1, kInf)));
  for (int d = 0; d <= D; ++d)
    for (int c = 0; c <= C; ++c) {
      E[d][c][1] = 0;
      if (d == 0 || c == 0) continue;
      for (int n = 2; n <= P; ++n) {
        std::int64_t v = kInf;
        for (int i = 1; i < n; ++i) {
          const std::int64_t a = E[d][c - 1][i], b = E[d - 1][c][n - i];
          if (a < kInf && b < kInf) v = std::min(v, a + b + i);
        }
        E[d][c][n] = v;
      }
    }
  for (int d = 1; d <= D; ++d)
    for (int c = 1; c <= C; ++c)
      if (E[d][c][P] < kInf) {
        const double t = std::max(double(B) * c, double(B) * E[d][c][P] / (P - 1) + P - 1) +
                         k * d;
        best = std::min(best, t);
      }
  return best;
}

}  // namespace

TEST(GenericBuilders, VerifyAndComputeTheirCollective) {
  for (RankId p = 1; p <= 33; ++p) {
    const std::int64_t elements = 3 * p + 1;
    const Bytes size = elements * 8;
    for (int which = 0; which < 3; ++which) {
      const Schedule s = which == 0   ? ring_allreduce(p, size)
                         : which == 1 ? recursive_doubling_allreduce(p, size)
                                      : rabenseifner_allreduce(p, size);
      EXPECT_NO_THROW(verify(s)) << "p=" << p << " builder " << which;
      std::vector<std::int64_t> in;
      const auto out = run(s, elements, in, 17u * p + which);
      const auto sum = column_sums(in, p, elements);
      for (RankId r = 0; r < p; ++r)
        for (std::int64_t e = 0; e < elements; ++e)
          ASSERT_EQ(out[r * elements + e], sum[e]) << "p=" << p << " builder " << which;
    }
    for (RankId root : {RankId{0}, RankId(p / 2), RankId(p - 1)}) {
      const Schedule red = binomial_reduce(p, size, root);
      EXPECT_NO_THROW(verify(red));
      std::vector<std::int64_t> in;
      const auto out = run(red, elements, in, 5u * p + root);
      const auto sum = column_sums(in, p, elements);
      for (std::int64_t e = 0; e < elements; ++e) ASSERT_EQ(out[root * elements + e], sum[e]);
      const Schedule bc = binomial_broadcast(p, size, root);
      EXPECT_NO_THROW(verify(bc));
      const auto got = run(bc, elements, in, 7u * p + root);
      for (RankId r = 0; r < p; ++r)
        for (std::int64_t e = 0; e < elements; ++e)
          ASSERT_EQ(got[r * elements + e], in[root * elements + e]);
      // ceil(log2 p) rounds (a binomial tree's height).
      int rounds = 0;
      while ((1 << rounds) < p) ++rounds;
      EXPECT_EQ(verify(red).steps, rounds);
    }
  }
}

TEST(TreeReduce, ChainAndStarPipelineBlocks) {
  for (std::int32_t P : {1, 2, 5, 16, 33}) {
    std::vector<std::int32_t> chain(P), star(P);
    for (std::int32_t v = 0; v < P; ++v) {
      chain[v] = v - 1;
      star[v] = v == 0 ? -1 : 0;
    }
    for (Bytes block : {Bytes{4}, Bytes{12}, Bytes{64}}) {
      const Bytes size = 64;
      const std::int64_t nb = (size + block - 1) / block;
      for (const auto* par : {&chain, &star}) {
        const Schedule s = tree_reduce(*par, size, block);
        EXPECT_EQ(s.num_transfers(), (P - 1) * nb);
        EXPECT_NO_THROW(verify(s));
        std::vector<std::int64_t> in;
        const auto out = run(s, size / 8, in, P + static_cast<unsigned>(block));
        const auto sum = column_sums(in, P, size / 8);
        for (std::int64_t e = 0; e < size / 8; ++e) ASSERT_EQ(out[e], sum[e]);
      }
    }
  }
  EXPECT_THROW(tree_reduce({-1, 0, 5}, 8, 4), std::exception);
}

TEST(AutogenDP, MatchesTheRecurrenceByBruteForce) {
  for (std::int32_t P : {1, 2, 3, 5, 8, 13, 21}) {
    for (std::int64_t B : {1, 4, 64}) {
      for (double T_R : {0.0, 2.0}) {
        const wafer::AutogenTree t = wafer::autogen(P, B, T_R);
        EXPECT_NEAR(t.cycles, autogen_brute(P, B, T_R), 1e-9)
            << "P=" << P << " B=" << B << " T_R=" << T_R;
        ASSERT_EQ(static_cast<std::int32_t>(t.parent.size()), P);
        if (P > 0) EXPECT_EQ(t.parent[0], -1);
        for (std::int32_t v = 1; v < P; ++v) EXPECT_LT(t.parent[v], v);
        const auto all = wafer::autogen_cycles(P, B, T_R);
        ASSERT_EQ(static_cast<std::int32_t>(all.size()), P);
        EXPECT_NEAR(all[P - 1], t.cycles, 1e-9);
        // The lower bound lies below, the fixed patterns above.
        EXPECT_LE(wafer::lower_bound_cycles(P, B, T_R)[P - 1], t.cycles + 1e-9);
        EXPECT_GE(wafer::best_fixed_pattern_cycles(P, B, T_R)[P - 1], t.cycles - 1e-9);
      }
    }
  }
}

TEST(SpatialMetrics, ChainAndStarOnALineHaveTheirClosedForms) {
  for (std::int32_t P : {2, 3, 8, 17}) {
    const Topology line = Topology::line(P);
    const std::int64_t B = 6;  // words of 4 bytes
    std::vector<std::int32_t> chain(P), star(P);
    for (std::int32_t v = 0; v < P; ++v) {
      chain[v] = v - 1;
      star[v] = v == 0 ? -1 : 0;
    }
    const SpatialMetrics c = spatial_metrics(tree_reduce(chain, 4 * B, 4 * B), line, 4);
    EXPECT_EQ(c.energy, (P - 1) * B);
    EXPECT_EQ(c.distance, P - 1);
    EXPECT_EQ(c.depth, P - 1);
    EXPECT_EQ(c.contention, B);
    EXPECT_EQ(c.links, P - 1);
    const SpatialMetrics s = spatial_metrics(tree_reduce(star, 4 * B, 4 * B), line, 4);
    EXPECT_EQ(s.energy, B * std::int64_t{P} * (P - 1) / 2);  // sum of 1..P-1 hops
    EXPECT_EQ(s.distance, P - 1);
    EXPECT_EQ(s.depth, 1);
    EXPECT_EQ(s.contention, (P - 1) * B);  // P - 1 streams into PE 0
    EXPECT_EQ(s.links, P - 1);
  }
}

TEST(Loads, StarOnALineCountsEveryHopAndEndpoint) {
  // A star reduce into PE 0 on a line: the stream from v crosses links
  // v -> v-1 .. 1 -> 0, so the link into u from u + 1 carries (P - 1 - u) B.
  for (std::int32_t P : {2, 3, 8, 17}) {
    const Topology line = Topology::line(P);
    const std::int64_t B = 24;
    std::vector<std::int32_t> star(P);
    for (std::int32_t v = 0; v < P; ++v) star[v] = v == 0 ? -1 : 0;
    const Loads l = loads(tree_reduce(star, B, B), line);
    for (std::int32_t u = 0; u + 1 < P; ++u) {
      const LinkId back = line.link_id(u + 1, u);
      EXPECT_EQ(l.link_bytes[back], (P - 1 - u) * B);
      EXPECT_EQ(l.link_bytes[line.link_id(u, u + 1)], 0);
    }
    EXPECT_EQ(l.received_bytes[0], (P - 1) * B);
    EXPECT_EQ(l.reduced_bytes[0], (P - 1) * B);
    for (std::int32_t v = 1; v < P; ++v) {
      EXPECT_EQ(l.sent_bytes[v], B);
      EXPECT_EQ(l.received_bytes[v], 0);
    }
  }
}

TEST(Execute, BlockOffsetsAndACopyAfterAReduce) {
  // Two blocks of 8 and 16 bytes over 24 elements: offsets in proportion.
  Collective c;
  c.kind = CollectiveKind::allreduce;
  Schedule s(2, {8, 16}, c);
  const auto off = block_element_offsets(s, 3);
  ASSERT_EQ(off.size(), 3u);
  EXPECT_EQ(off[0], 0);
  EXPECT_EQ(off[2], 3);
  // 0 -> 1 reduce both blocks, then 1 -> 0 copy both: an allreduce of two.
  const TransferId a = s.add(0, 1, 0, 2, Op::reduce, {});
  s.add(1, 0, 0, 2, Op::copy, {a});
  EXPECT_NO_THROW(verify(s));
  const std::vector<double> in = {1.5, -2.0, 4.0, 0.25, 8.0, -1.0};
  std::vector<double> out(6, 0.0);
  execute<double>(s, in.data(), out.data(), 3);
  for (int e = 0; e < 3; ++e) {
    EXPECT_DOUBLE_EQ(out[e], in[e] + in[3 + e]);
    EXPECT_DOUBLE_EQ(out[3 + e], in[e] + in[3 + e]);
  }
}

TEST(Hardening, CeilDivDoesNotOverflow) {
  using wafercoll::ceil_div;
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(ceil_div(big, big), 1);
  EXPECT_EQ(ceil_div(big, 2), big / 2 + 1);
  EXPECT_EQ(ceil_div(big - 1, 2), (big - 1) / 2);
  EXPECT_EQ(ceil_div(0, 7), 0);
  EXPECT_EQ(ceil_div(7, 7), 1);
  EXPECT_EQ(ceil_div(8, 7), 2);
}

TEST(Hardening, AutogenRefusesRampLatenciesBeyondDoublePrecision) {
  // T_R = 1e17 once sent the reconstruction out of its table.
  EXPECT_THROW(wafercoll::wafer::autogen(3, 1, 1e17), std::invalid_argument);
  EXPECT_NO_THROW(wafercoll::wafer::autogen(3, 1, wafercoll::wafer::kMaxRampLatency));
}
