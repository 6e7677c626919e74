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
