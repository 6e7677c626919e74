// The verifier's records of cell writes (cpp/src/analysis/records.hpp): the
// writer of a record is not stored but follows from its id. Expected writers
// come from a plain list kept beside the records, one entry per record.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "analysis/records.hpp"

using wafercoll::TransferId;
using wafercoll::verify_detail::Records;

namespace {

// `counts[k]`: how many records the transfer at walk position k makes
// (0 included); `order`: the walk (empty: index order). Checks every
// record's writer, set and prev, and the writers again after all are made.
void check_writers(const std::vector<int>& counts, const std::vector<TransferId>& order) {
  Records rec(order.empty() ? nullptr : order.data());
  std::vector<TransferId> writer;
  std::vector<std::int32_t> set;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rec.initial(100 + i), i);
    writer.push_back(-1);
    set.push_back(100 + i);
  }
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const TransferId t = order.empty() ? static_cast<TransferId>(k) : order[k];
    for (int j = 0; j < counts[k]; ++j) {
      const auto m = rec.add(static_cast<std::int32_t>(k), 7 * static_cast<std::int32_t>(k) + j,
                             static_cast<std::int32_t>(writer.size()) - 1);
      ASSERT_EQ(m, static_cast<std::int32_t>(writer.size()));
      writer.push_back(t);
      set.push_back(7 * static_cast<std::int32_t>(k) + j);
      // Also asked while the transfer's records are being made.
      for (std::int32_t x = 0; x <= m; ++x) ASSERT_EQ(rec.writer(x), writer[x]) << k << " " << x;
    }
  }
  ASSERT_EQ(rec.size(), writer.size());
  for (std::size_t m = 0; m < writer.size(); ++m) {
    const auto id = static_cast<std::int32_t>(m);
    EXPECT_EQ(rec.writer(id), writer[m]) << m;
    EXPECT_EQ(rec[id].set, set[m]) << m;
    EXPECT_EQ(rec[id].prev, m < 3 ? -1 : id - 1) << m;
  }
}

}  // namespace

TEST(Records, OneRecordPerTransferIsOneRun) {
  check_writers(std::vector<int>(50, 1), {});
}

TEST(Records, SeveralOrNoRecordsPerTransfer) {
  check_writers({2, 1, 1, 3, 0, 1, 1, 0, 0, 2, 2, 1, 4, 1}, {});
  check_writers({0, 0, 1, 2}, {});
  check_writers({3}, {});
}

TEST(Records, RandomCountsAndAWalkThatIsNotTheIndexOrder) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<int> counts(60);
    for (int& c : counts) c = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                                  ? std::uniform_int_distribution<int>(0, 3)(rng)
                                  : 1;
    std::vector<TransferId> order(counts.size());
    for (std::size_t k = 0; k < order.size(); ++k)
      order[k] = static_cast<TransferId>(order.size() - 1 - k);
    check_writers(counts, round % 2 == 0 ? std::vector<TransferId>{} : order);
  }
}
