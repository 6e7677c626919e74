// The verifier on two threads (schedules of 2^16 transfers or more): the
// same verdicts and messages as one thread. Each small schedule (verified
// on one thread) is padded with transfers that change nothing about it (a
// chain of copies from its rank 0, after all its transfers, into two ranks
// that do not participate) past the threshold, and must fail with the same
// error as before, or pass.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/analysis/verify.hpp"
#include "wafercoll/errors.hpp"

using namespace wafercoll;

namespace {

constexpr TransferId kPadding = TransferId{1} << 16;

// A reduce to rank 0 over four ranks, two more that do not participate.
Collective reduce_to_0() {
  Collective c;
  c.kind = CollectiveKind::reduce;
  c.root = 0;
  c.participants = {1, 1, 1, 1, 0, 0};
  return c;
}

// `s` followed by kPadding copies from rank 0 into ranks 4 and 5 in turn,
// each after the one before, the first after every transfer of `s`.
Schedule padded(const Schedule& s) {
  Schedule out(s.num_ranks(), s.block_bytes(), s.collective());
  const TransferId n = s.num_transfers();
  for (TransferId t = 0; t < n; ++t) {
    std::vector<RankId> dsts(s.dsts_begin(t), s.dsts_end(t));
    std::vector<BlockRange> ranges(s.ranges_begin(t), s.ranges_end(t));
    std::vector<TransferId> deps(s.deps_begin(t), s.deps_end(t));
    out.add_transfer(s.src(t), dsts, ranges, s.op(t), deps);
  }
  std::vector<TransferId> all;
  for (TransferId t = 0; t < n; ++t) all.push_back(t);
  TransferId prev = out.add_transfer(0, {4}, {BlockRange{0, 1}}, Op::copy, all);
  for (TransferId k = 1; k < kPadding; ++k)
    prev = out.add_transfer(0, {4 + k % 2}, {BlockRange{0, 1}}, Op::copy, {prev});
  return out;
}

// "ok" or the error's kind, transfer, rank, block and message.
std::string outcome(const Schedule& s) {
  try {
    verify(s);
  } catch (const ScheduleError& e) {
    return e.kind() + " " + std::to_string(e.transfer()) + " " + std::to_string(e.rank()) +
           " " + std::to_string(e.block()) + ": " + e.what();
  }
  return "ok";
}

void expect_same_padded(const Schedule& s, const std::string& kind) {
  const std::string alone = outcome(s);
  ASSERT_EQ(alone.substr(0, kind.size()), kind) << alone;
  EXPECT_EQ(outcome(padded(s)), alone);
}

}  // namespace

TEST(VerifyParallel, ReadOverwrittenWithoutWaitingIsTheSameRace) {
  // t1 reads rank 1 after t0; t2 overwrites rank 1 and waits for neither:
  // the backward pass's race.
  Schedule s(6, {8}, reduce_to_0());
  s.add(3, 0, 0, 1, Op::copy, {});    // t0
  s.add(1, 2, 0, 1, Op::copy, {0});   // t1 reads rank 1
  s.add(0, 1, 0, 1, Op::reduce, {});  // t2 writes rank 1
  expect_same_padded(s, "race 1 1 0");
}

TEST(VerifyParallel, TheForwardPassesErrorWinsOverTheBackwardPasses) {
  // The race above, and t3 writing rank 0 beside t0: the forward pass
  // reports t3 (one thread runs it first; two threads keep its verdict).
  Schedule s(6, {8}, reduce_to_0());
  s.add(3, 0, 0, 1, Op::copy, {});    // t0 writes rank 0
  s.add(1, 2, 0, 1, Op::copy, {0});   // t1 reads rank 1
  s.add(0, 1, 0, 1, Op::reduce, {});  // t2 writes rank 1
  s.add(2, 0, 0, 1, Op::reduce, {});  // t3 writes rank 0, unordered with t0
  expect_same_padded(s, "race 3 0 0");
}

TEST(VerifyParallel, ForwardErrorsAndTheEndStateAreTheSame) {
  Schedule twice(6, {8}, reduce_to_0());
  twice.add(1, 0, 0, 1, Op::reduce, {});
  twice.add(1, 0, 0, 1, Op::reduce, {0});
  expect_same_padded(twice, "double_count 1 0 0");
  Schedule empty(6, {8}, reduce_to_0());
  empty.add(4, 0, 0, 1, Op::reduce, {});  // rank 4 holds nothing
  expect_same_padded(empty, "empty_read 0 4 0");
  Schedule miss(6, {8}, reduce_to_0());
  miss.add(1, 0, 0, 1, Op::reduce, {});
  miss.add(2, 0, 0, 1, Op::reduce, {0});
  expect_same_padded(miss, "missing");
  Schedule ok(6, {8}, reduce_to_0());
  ok.add(1, 0, 0, 1, Op::reduce, {});
  ok.add(2, 0, 0, 1, Op::reduce, {0});
  ok.add(3, 0, 0, 1, Op::reduce, {1});
  expect_same_padded(ok, "ok");
}

TEST(VerifyParallel, RingAllreduceStepsMatchTheClosedForm) {
  // 2 p (p - 1) = 71,820 transfers in 2 (p - 1) steps.
  const RankId p = 190;
  const VerifyReport rep = verify(ring_allreduce(p, 64 * p));
  EXPECT_EQ(rep.transfers, 2 * p * (p - 1));
  EXPECT_EQ(rep.steps, 2 * (p - 1));
}

TEST(VerifyParallel, BarrierPipelineSearchesOnBothThreads) {
  // An allreduce on a line of depth + 1 ranks, chunk by chunk: up the line
  // by reductions (each after the one into its source and the previous
  // chunk on its link), then, after the last chunk reached rank 0, down by
  // copies. Ordering a copy after the last reduction into its destination
  // needs a search through the barrier, in both passes. The longest chain:
  // chunks - 1 + depth up, then chunks - 1 + depth down.
  const RankId depth = 8;
  const std::int32_t chunks = 4096;  // 2 * depth * chunks = 2^16 transfers
  Schedule s(depth + 1, std::vector<Bytes>(static_cast<std::size_t>(chunks), 8), Collective{});
  std::vector<TransferId> up(static_cast<std::size_t>(chunks * depth));
  std::vector<TransferId> down(static_cast<std::size_t>(chunks * depth));
  const auto at = [&](std::vector<TransferId>& v, std::int32_t c, RankId i) -> TransferId& {
    return v[static_cast<std::size_t>(c * depth + i)];
  };
  for (std::int32_t c = 0; c < chunks; ++c)
    for (RankId i = depth - 1; i >= 0; --i) {
      std::vector<TransferId> deps;
      if (i + 1 < depth) deps.push_back(at(up, c, i + 1));
      if (c > 0) deps.push_back(at(up, c - 1, i));
      at(up, c, i) = s.add_transfer(i + 1, {i}, {BlockRange{c, c + 1}}, Op::reduce, deps);
    }
  for (std::int32_t c = 0; c < chunks; ++c)
    for (RankId i = 0; i < depth; ++i) {
      std::vector<TransferId> deps{i > 0 ? at(down, c, i - 1) : at(up, chunks - 1, 0)};
      if (c > 0) deps.push_back(at(down, c - 1, i));
      at(down, c, i) = s.add_transfer(i, {i + 1}, {BlockRange{c, c + 1}}, Op::copy, deps);
    }
  const VerifyReport rep = verify(s);
  EXPECT_EQ(rep.transfers, std::int64_t{1} << 16);
  EXPECT_EQ(rep.steps, 2 * (chunks - 1 + depth));
  EXPECT_GT(rep.reachability_queries, 0);
}

// ---------------------------------------------------------------------------
// The verification split by blocks (VerifySplit): each window of blocks is
// walked on its own thread. A split that fails is verified again on one
// thread, so the errors match by construction; what the tests below check
// is the verdict of the split itself: a defect in either window must fail
// it (a window that missed one would let a wrong schedule pass).

namespace {

std::string outcome_split(const Schedule& s, VerifySplit split) {
  try {
    const VerifyReport rep = verify(s, kVerifyDenseAfter, split);
    return "ok " + std::to_string(rep.transfers) + " " + std::to_string(rep.steps);
  } catch (const ScheduleError& e) {
    return e.kind() + " " + std::to_string(e.transfer()) + " " + std::to_string(e.rank()) +
           " " + std::to_string(e.block()) + ": " + e.what();
  }
}

// `s` with transfer t changed: 0 drops its first dependency, 1 flips its op,
// 2 moves its first range one block up (wrapping), 3 sends it to the next rank.
Schedule mutated(const Schedule& s, TransferId t, int kind) {
  Schedule out(s.num_ranks(), s.block_bytes(), s.collective());
  const BlockId nb = s.num_blocks();
  for (TransferId u = 0; u < s.num_transfers(); ++u) {
    std::vector<RankId> dsts(s.dsts_begin(u), s.dsts_end(u));
    std::vector<BlockRange> ranges(s.ranges_begin(u), s.ranges_end(u));
    std::vector<TransferId> deps(s.deps_begin(u), s.deps_end(u));
    Op op = s.op(u);
    if (u == t) {
      if (kind == 0 && !deps.empty()) deps.erase(deps.begin());
      if (kind == 1) op = op == Op::copy ? Op::reduce : Op::copy;
      if (kind == 2) ranges = {BlockRange{(ranges[0].lo + 1) % nb, (ranges[0].lo + 1) % nb + 1}};
      if (kind == 3) {
        dsts = {(dsts[0] + 1) % s.num_ranks()};
        if (dsts[0] == s.src(u)) dsts[0] = (dsts[0] + 1) % s.num_ranks();
      }
    }
    out.add_transfer(s.src(u), dsts, ranges, op, deps);
  }
  return out;
}

}  // namespace

TEST(VerifySplit, EveryMutantHasTheSameOutcomeSplitOrNot) {
  // Rings (one block a transfer) and Rabenseifner (halving ranges), odd and
  // even p; every transfer of each, each mutation. The split windows must
  // reject what one walk rejects.
  const std::vector<Schedule> schedules = {ring_allreduce(5, 5 * 8), ring_allreduce(8, 8 * 8),
                                           rabenseifner_allreduce(6, 6 * 8),
                                           rabenseifner_allreduce(7, 7 * 8)};
  int failed = 0;
  for (const Schedule& s : schedules) {
    ASSERT_EQ(verify(s, kVerifyDenseAfter, VerifySplit::always).windows, 2);
    for (TransferId t = 0; t < s.num_transfers(); ++t)
      for (int kind = 0; kind < 4; ++kind) {
        const Schedule m = mutated(s, t, kind);
        const std::string one = outcome_split(m, VerifySplit::never);
        EXPECT_EQ(outcome_split(m, VerifySplit::always), one) << t << " " << kind;
        failed += one.substr(0, 2) != "ok";
      }
  }
  EXPECT_GT(failed, 100);  // the mutations were defects
}

TEST(VerifySplit, TheErrorIsTheOneOfTheSingleWalk) {
  // A ring on 6 ranks with two defects, one in each half of the blocks:
  // the one walk reports the earlier; the split finds both and must report
  // that one too.
  const Schedule s = ring_allreduce(6, 6 * 8);
  const BlockId nb = s.num_blocks();
  TransferId low = -1;
  TransferId high = -1;
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    const BlockId b = s.ranges_begin(t)->lo;
    if (s.num_deps(t) == 0) continue;
    if (b >= nb / 2 && high < 0) high = t;
    if (b < nb / 2 && high >= 0 && low < 0) low = t;
  }
  ASSERT_GE(low, 0);
  ASSERT_GE(high, 0);
  ASSERT_LT(high, low);
  const Schedule m = mutated(mutated(s, high, 0), low, 0);
  const std::string one = outcome_split(m, VerifySplit::never);
  ASSERT_EQ(one.substr(0, 4), "race");
  EXPECT_NE(one.find("transfer " + std::to_string(high)), std::string::npos) << one;
  EXPECT_EQ(outcome_split(m, VerifySplit::always), one);
}

TEST(VerifySplit, AutomaticSplitsRingsNotWholeVectorExchanges) {
  // 71,820 ring transfers of one block each: split on two threads. Recursive
  // doubling's transfers carry every block: never split, whatever the size.
  const VerifyReport ring = verify(ring_allreduce(190, 64 * 190));
  EXPECT_EQ(ring.windows, std::thread::hardware_concurrency() > 1 ? 2 : 1);
  const VerifyReport rd = verify(recursive_doubling_allreduce(16384, 16384 * 8));
  EXPECT_EQ(rd.transfers, std::int64_t{16384} * 14);
  EXPECT_EQ(rd.windows, 1);
  // One block: nothing to split, even when asked.
  EXPECT_EQ(verify(ring_allreduce(1, 8), kVerifyDenseAfter, VerifySplit::always).windows, 1);
  EXPECT_EQ(verify(binomial_reduce(9, 8, 0), kVerifyDenseAfter, VerifySplit::always).windows, 1);
}
