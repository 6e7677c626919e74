// The verifier on two threads (schedules of 2^16 transfers or more): the
// same verdicts and messages as one thread. Each small schedule (verified
// on one thread) is padded with transfers that change nothing about it (a
// chain of copies from its rank 0, after all its transfers, into two ranks
// that do not participate) past the threshold, and must fail with the same
// error as before, or pass.
#include <gtest/gtest.h>

#include <string>
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
