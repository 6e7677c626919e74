// Schedule container: construction checks, CSR import, derived views.
#include <gtest/gtest.h>

#include <numeric>

#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/errors.hpp"
#include "wafercoll/schedule/schedule.hpp"

using namespace wafercoll;

TEST(Schedule, EvenBlocksSumToTotalAndDifferByAtMostOne) {
  for (Bytes total : {0, 1, 7, 100, 1023}) {
    for (std::int64_t n : {1, 2, 3, 8, 13}) {
      const auto b = even_blocks(total, n);
      ASSERT_EQ(static_cast<std::int64_t>(b.size()), n);
      EXPECT_EQ(std::accumulate(b.begin(), b.end(), Bytes{0}), total);
      const auto [mn, mx] = std::minmax_element(b.begin(), b.end());
      EXPECT_LE(*mx - *mn, 1);
    }
  }
  EXPECT_THROW(even_blocks(-1, 2), std::invalid_argument);
}

TEST(Schedule, RejectsBadTransfers) {
  Schedule s(3, {4, 4}, Collective{});
  EXPECT_THROW(s.add(0, 3, 0, 1, Op::copy, {}), ScheduleError);   // dst out of range
  EXPECT_THROW(s.add(1, 1, 0, 1, Op::copy, {}), ScheduleError);   // dst == src
  EXPECT_THROW(s.add(0, 1, 1, 1, Op::copy, {}), ScheduleError);   // empty range
  EXPECT_THROW(s.add(0, 1, 0, 3, Op::copy, {}), ScheduleError);   // past the last block
  EXPECT_THROW(s.add_transfer(0, {1}, {{0, 1}}, Op::copy, {0}), ScheduleError);  // no such dep
  EXPECT_EQ(s.num_transfers(), 0);
  EXPECT_THROW(Schedule(0, {1}, Collective{}), std::invalid_argument);
  Collective bad_root;
  bad_root.kind = CollectiveKind::reduce;
  bad_root.root = 3;
  EXPECT_THROW(Schedule(3, {1}, bad_root), std::invalid_argument);
}

TEST(Schedule, FromArraysNamesTransferOfBadField) {
  try {
    Schedule::from_arrays(2, {4}, Collective{}, {0, 5}, {0, 0}, {0, 1, 2}, {1, 0}, {0, 1, 2},
                          {0, 0}, {1, 1}, {0, 0, 0}, {});
    FAIL();
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.transfer(), 1);
    EXPECT_NE(std::string(e.what()).find("field 'src'"), std::string::npos);
  }
}

TEST(Schedule, StatsOfRingMatchClosedForm) {
  for (RankId p : {2, 3, 5, 8}) {
    const Bytes size = 64 * p;
    const auto st = schedule_stats(ring_allreduce(p, size));
    EXPECT_EQ(st.num_steps, 2 * (p - 1));
    for (RankId r = 0; r < p; ++r) {
      EXPECT_EQ(st.messages_sent[r], 2 * (p - 1));
      EXPECT_EQ(st.bytes_received[r], 2 * (p - 1) * 64);
    }
  }
}

TEST(Schedule, TopologicalOrderHandlesForwardDependencies) {
  // t0 depends on t1: the order must put 1 first.
  auto s = Schedule::from_arrays(2, {4}, Collective{}, {0, 1}, {1, 1}, {0, 1, 2}, {1, 0},
                                 {0, 1, 2}, {0, 0}, {1, 1}, {0, 1, 1}, {1});
  const auto order = topological_order(s);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], 1);
  EXPECT_EQ(order[1], 0);
}

// append_tiled writes chunks >= 2 without per-transfer checks; the result
// must equal adding every copy with add_transfer (the checked path).
TEST(Schedule, AppendTiledEqualsEveryCopyAddedOneByOne) {
  const std::int64_t n = 3, stride = 2;
  const std::vector<std::int64_t> src{0, 1, 2}, dst{1, 2, 0}, lo{0, 1, 0}, hi{1, 2, 2};
  const std::vector<std::uint8_t> op{1, 0, 1};
  // copy 0: transfer 1 waits for 0; copy 1: each waits for its twin in copy 0
  const std::vector<std::int64_t> first_off{0, 0, 1, 1}, first{0};
  const std::vector<std::int64_t> later_off{0, 1, 3, 4}, later{0, 1, 3, 2};
  for (std::int64_t chunks : {0, 1, 2, 5}) {
    Schedule a(3, std::vector<Bytes>(static_cast<std::size_t>(stride * 5), 4), Collective{});
    Schedule b = a;
    a.append_tiled(n, chunks, stride, src.data(), op.data(), dst.data(), lo.data(), hi.data(),
                   first_off.data(), first.data(), later_off.data(), later.data());
    for (std::int64_t c = 0; c < chunks; ++c)
      for (std::int64_t i = 0; i < n; ++i) {
        const auto& off = c == 0 ? first_off : later_off;
        const auto& flat = c == 0 ? first : later;
        std::vector<TransferId> deps;
        for (std::int64_t k = off[i]; k < off[i + 1]; ++k)
          deps.push_back(static_cast<TransferId>(flat[k] + (c == 0 ? 0 : (c - 1) * n)));
        const auto l = static_cast<BlockId>(lo[i] + c * stride);
        const auto h = static_cast<BlockId>(hi[i] + c * stride);
        b.add_transfer(static_cast<RankId>(src[i]), {static_cast<RankId>(dst[i])}, {{l, h}},
                       static_cast<Op>(op[i]), deps);
      }
    ASSERT_EQ(a.num_transfers(), chunks * n);
    ASSERT_EQ(b.num_transfers(), chunks * n);
    for (TransferId t = 0; t < a.num_transfers(); ++t) {
      EXPECT_EQ(a.src_array()[t], b.src_array()[t]);
      EXPECT_EQ(a.op_array()[t], b.op_array()[t]);
      EXPECT_EQ(a.dst_array()[t], b.dst_array()[t]);
      EXPECT_EQ(a.range_list()[t], b.range_list()[t]);
      EXPECT_EQ(a.dep_offsets()[t + 1], b.dep_offsets()[t + 1]);
    }
    EXPECT_EQ(a.dep_array(), b.dep_array());
  }
}

TEST(Schedule, AppendTiledChecksTheLastCopyAndTheFirstTwo) {
  const std::vector<std::int64_t> src{0}, dst{1}, lo{0}, hi{1}, none_off{0, 0}, none;
  const std::vector<std::uint8_t> op{0};
  Schedule s(2, {4, 4, 4}, Collective{});
  // copy 3 would move block 3 of 3
  EXPECT_THROW(s.append_tiled(1, 4, 1, src.data(), op.data(), dst.data(), lo.data(), hi.data(),
                              none_off.data(), none.data(), none_off.data(), none.data()),
               ScheduleError);
  EXPECT_EQ(s.num_transfers(), 0);
  // copy 1 depending on itself
  const std::vector<std::int64_t> self_off{0, 1}, self{1};
  EXPECT_THROW(s.append_tiled(1, 3, 1, src.data(), op.data(), dst.data(), lo.data(), hi.data(),
                              none_off.data(), none.data(), self_off.data(), self.data()),
               ScheduleError);
  EXPECT_THROW(s.append_tiled(1, -1, 1, src.data(), op.data(), dst.data(), lo.data(),
                              hi.data(), none_off.data(), none.data(), none_off.data(),
                              none.data()),
               std::invalid_argument);
}
