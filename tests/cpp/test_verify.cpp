// Verifier and builder tests on the C++ core. Expected values come from closed
// forms (step counts) or from hand-made schedules whose defect is known.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/analysis/execute.hpp"
#include "wafercoll/analysis/verify.hpp"
#include "wafercoll/errors.hpp"

using namespace wafercoll;

namespace {

int floor_log2(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}

int ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

std::string kind_of(const Schedule& s) {
  try {
    verify(s);
  } catch (const ScheduleError& e) {
    return e.kind();
  }
  return "ok";
}

Collective allreduce() { return Collective{}; }

}  // namespace

TEST(Verify, BuildersPassAndStepCountsMatchClosedForms) {
  for (int p = 1; p <= 40; ++p) {
    const int lg = floor_log2(p);
    const bool pow2 = (1 << lg) == p;
    const int fold = pow2 ? 0 : 2;
    auto ring = ring_allreduce(p, 1000);
    EXPECT_EQ(verify(ring).steps, p == 1 ? 0 : 2 * (p - 1)) << p;
    EXPECT_EQ(verify(recursive_doubling_allreduce(p, 64)).steps, lg + fold) << p;
    EXPECT_EQ(verify(rabenseifner_allreduce(p, 4096)).steps, 2 * lg + fold) << p;
    for (int root : {0, p / 2, p - 1}) {
      EXPECT_EQ(verify(binomial_reduce(p, 8, root)).steps, ceil_log2(p)) << p;
      EXPECT_EQ(verify(binomial_broadcast(p, 8, root)).steps, ceil_log2(p)) << p;
    }
  }
}

TEST(Verify, PairwiseExchangeInOneStepIsWellDefined) {
  Schedule s(2, {8}, allreduce());
  s.add(0, 1, 0, 1, Op::reduce, {});
  s.add(1, 0, 0, 1, Op::reduce, {});
  EXPECT_EQ(kind_of(s), "ok");
}

TEST(Verify, ExchangeWithUnequalDependenciesIsARace) {
  // 0 and 1 exchange after 2 reduced into 0.
  Collective c;
  c.kind = CollectiveKind::reduce;
  c.root = 0;
  Schedule s(3, {8}, c);
  s.add(2, 0, 0, 1, Op::reduce, {});           // t0: 2 -> 0
  s.add(0, 1, 0, 1, Op::reduce, {0});          // t1: 0 -> 1 (after t0)
  s.add(1, 0, 0, 1, Op::reduce, {0});          // t2: 1 -> 0: reads 1 while t1 writes it
  // t2's only dependency t0 happens before t1, so t1 cannot land before t2
  // reads rank 1: t2 sends {1}, and rank 0 ends with {0, 1, 2}.
  EXPECT_EQ(kind_of(s), "ok");
  // A reader without dependencies starts at time 0, before any write lands:
  // well defined (the rank-0 result then misses rank 1's contribution).
  Schedule r0(3, {8}, c);
  r0.add(2, 0, 0, 1, Op::reduce, {});          // t0
  r0.add(0, 1, 0, 1, Op::copy, {});            // t1 reads rank 0's initial value
  EXPECT_EQ(kind_of(r0), "missing");
  // A reader that waits for an unrelated transfer may start after t0 lands.
  Collective c4;
  c4.kind = CollectiveKind::reduce;
  c4.root = 0;
  Schedule r(4, {8}, c4);
  r.add(2, 0, 0, 1, Op::reduce, {});           // t0 writes rank 0
  r.add(3, 2, 0, 1, Op::copy, {});             // t1 unrelated to t0
  r.add(0, 1, 0, 1, Op::copy, {1});            // t2 reads rank 0 after t1: timing-dependent
  EXPECT_EQ(kind_of(r), "race");
}

TEST(Verify, DetectsWriteWriteRace) {
  Collective c;
  c.kind = CollectiveKind::reduce;
  c.root = 0;
  Schedule s(3, {8}, c);
  s.add(1, 0, 0, 1, Op::reduce, {});
  s.add(2, 0, 0, 1, Op::reduce, {});
  try {
    verify(s);
    FAIL() << "race not detected";
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.kind(), "race");
    EXPECT_EQ(e.transfer(), 1);
    EXPECT_EQ(e.rank(), 0);
    EXPECT_EQ(e.block(), 0);
  }
}

TEST(Verify, DetectsMissingAndDoubleCount) {
  Collective c;
  c.kind = CollectiveKind::reduce;
  c.root = 0;
  Schedule miss(3, {8}, c);
  miss.add(1, 0, 0, 1, Op::reduce, {});
  EXPECT_EQ(kind_of(miss), "missing");
  Schedule twice(2, {8}, c);
  twice.add(1, 0, 0, 1, Op::reduce, {});
  twice.add(1, 0, 0, 1, Op::reduce, {0});
  EXPECT_EQ(kind_of(twice), "double_count");
}

TEST(Verify, DetectsSendBeforeArrival) {
  Collective c;
  c.kind = CollectiveKind::broadcast;
  c.root = 0;
  Schedule s(3, {8}, c);
  s.add(1, 2, 0, 1, Op::copy, {});   // 1 forwards before it received anything
  s.add(0, 1, 0, 1, Op::copy, {0});
  EXPECT_EQ(kind_of(s), "empty_read");
}

TEST(Verify, DetectsCycles) {
  Schedule s = Schedule::from_arrays(2, {8}, allreduce(), {0, 1}, {1, 1}, {0, 1, 2}, {1, 0},
                                     {0, 1, 2}, {0, 0}, {1, 1}, {0, 1, 2}, {1, 0});
  EXPECT_EQ(kind_of(s), "cycle");
}

TEST(Verify, UnknownCollectiveChecksItsDependenciesOnly) {
  Collective c;
  c.kind = CollectiveKind::unknown;
  Schedule s(3, {8, 8}, c);
  s.add(0, 1, 0, 1, Op::copy, {});
  s.add(1, 2, 1, 2, Op::reduce, {0});
  EXPECT_EQ(kind_of(s), "unverifiable");
  EXPECT_STREQ(to_string(s.collective().kind), "unknown");
  EXPECT_EQ(collective_from_string("unknown"), CollectiveKind::unknown);
  // A cycle is still reported as such: it is checkable without a collective.
  Schedule cyc = Schedule::from_arrays(2, {8}, c, {0, 1}, {1, 1}, {0, 1, 2}, {1, 0},
                                       {0, 1, 2}, {0, 0}, {1, 1}, {0, 1, 2}, {1, 0});
  EXPECT_EQ(kind_of(cyc), "cycle");
}

TEST(Execute, UnknownCollectiveMovesDataFromEveryRanksInput) {
  // Every rank starts with its own input; the transfers move it as written.
  Collective c;
  c.kind = CollectiveKind::unknown;
  Schedule s(3, {8}, c);
  s.add(0, 1, 0, 1, Op::reduce, {});
  s.add(1, 2, 0, 1, Op::copy, {0});
  const std::vector<std::int64_t> in{1, 10, 100};
  std::vector<std::int64_t> out(3);
  execute<std::int64_t>(s, in.data(), out.data(), 1);
  EXPECT_EQ(out, (std::vector<std::int64_t>{1, 11, 11}));
}

TEST(Verify, EveryRemovedTransferIsCaught) {
  for (int p : {3, 5, 8}) {
    for (int variant = 0; variant < 3; ++variant) {
      Schedule full = variant == 0   ? ring_allreduce(p, 100)
                      : variant == 1 ? rabenseifner_allreduce(p, 100)
                                     : recursive_doubling_allreduce(p, 100);
      for (TransferId drop = 0; drop < full.num_transfers(); ++drop) {
        Schedule s(p, full.block_bytes(), full.collective());
        std::vector<TransferId> remap(full.num_transfers(), -1);
        for (TransferId t = 0; t < full.num_transfers(); ++t) {
          if (t == drop) continue;
          std::vector<TransferId> deps;
          for (auto d = full.deps_begin(t); d != full.deps_end(t); ++d)
            if (remap[*d] >= 0) deps.push_back(remap[*d]);
          std::vector<BlockRange> ranges(full.ranges_begin(t), full.ranges_end(t));
          std::vector<RankId> dsts(full.dsts_begin(t), full.dsts_end(t));
          remap[t] = s.add_transfer(full.src(t), dsts, ranges, full.op(t), deps);
        }
        EXPECT_NE(kind_of(s), "ok") << "p=" << p << " variant=" << variant << " drop=" << drop;
      }
    }
  }
}

TEST(Execute, RingAllreduceSumsIntegers) {
  for (int p : {1, 2, 3, 6, 7, 16}) {
    const std::int64_t n = 37;
    auto s = ring_allreduce(p, n * 8);
    std::vector<std::int64_t> in(p * n), out(p * n);
    for (std::int64_t i = 0; i < p * n; ++i) in[i] = (i * 7919) % 1000 - 500;
    execute<std::int64_t>(s, in.data(), out.data(), n);
    for (std::int64_t e = 0; e < n; ++e) {
      std::int64_t sum = 0;
      for (int r = 0; r < p; ++r) sum += in[r * n + e];
      for (int r = 0; r < p; ++r) EXPECT_EQ(out[r * n + e], sum);
    }
  }
}

namespace {

// The direct alltoall: every rank sends each of its blocks straight to its
// target, all at once (block i*p + j from rank i to rank j).
Schedule direct_alltoall(int p) {
  Collective c;
  c.kind = CollectiveKind::alltoall;
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) {
      c.owners.push_back(i);
      c.targets.push_back(j);
    }
  Schedule s(p, std::vector<Bytes>(static_cast<std::size_t>(p) * p, 8), c);
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j)
      if (i != j) s.add(i, j, i * p + j, i * p + j + 1, Op::copy, {});
  return s;
}

}  // namespace

TEST(Verify, MovingKindsNeedOneTargetPerBlock) {
  Collective c;
  c.kind = CollectiveKind::alltoall;
  c.owners = {0, 0, 1, 1};
  EXPECT_THROW(Schedule(2, {1, 1, 1, 1}, c), std::invalid_argument);  // no targets
  c.targets = {0, 1, 0, 5};
  EXPECT_THROW(Schedule(2, {1, 1, 1, 1}, c), std::invalid_argument);  // out of range
  Collective g;
  g.kind = CollectiveKind::gather;
  g.root = 1;
  g.owners = {0, 1};
  g.targets = {1, 0};  // a gather's blocks all end at the root
  EXPECT_THROW(Schedule(2, {1, 1}, g), std::invalid_argument);
}

TEST(Verify, AlltoallDeliversEachBlockOnce) {
  for (int p : {1, 2, 3, 5}) EXPECT_EQ(kind_of(direct_alltoall(p)), "ok") << p;
  // A block sent twice to its target arrives twice.
  Schedule twice = direct_alltoall(3);
  twice.add(0, 1, 1, 2, Op::copy, {0});
  EXPECT_EQ(kind_of(twice), "duplicate");
  // A block left out never arrives.
  Collective c = direct_alltoall(3).collective();
  Schedule missing(3, std::vector<Bytes>(9, 8), c);
  missing.add(0, 1, 1, 2, Op::copy, {});
  EXPECT_EQ(kind_of(missing), "missing");
  // Nothing is reduced in an alltoall.
  Schedule reduced(3, std::vector<Bytes>(9, 8), c);
  reduced.add(0, 1, 1, 2, Op::reduce, {});
  EXPECT_EQ(kind_of(reduced), "unexpected");
}

TEST(Execute, AlltoallMovesEveryBlockToItsTarget) {
  const int p = 4;
  const std::int64_t n = p * p * 3;  // three elements per block
  auto s = direct_alltoall(p);
  std::vector<std::int64_t> in(p * n), out(p * n);
  for (std::int64_t i = 0; i < p * n; ++i) in[i] = 1000 + i;
  execute<std::int64_t>(s, in.data(), out.data(), n);
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j)
      for (int e = 0; e < 3; ++e) {
        const std::int64_t at = (i * p + j) * 3 + e;
        EXPECT_EQ(out[j * n + at], in[i * n + at]) << i << "->" << j;
      }
}
