// Compact CSR offsets: the regular (identity), narrow and wide forms, and a schedule's
// destination / range / dependency lists read back the same through every
// form, whichever transfer first breaks the one-destination pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "wafercoll/errors.hpp"
#include "wafercoll/schedule/csr_offsets.hpp"
#include "wafercoll/schedule/schedule.hpp"

using namespace wafercoll;

namespace {

// Offsets of rows with the given item counts, written out by hand.
std::vector<std::int64_t> prefix(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> off{0};
  for (std::int64_t c : counts) off.push_back(off.back() + c);
  return off;
}

template <typename Narrow>
void expect_offsets(const BasicCsrOffsets<Narrow>& off, const std::vector<std::int64_t>& want) {
  ASSERT_EQ(off.rows() + 1, static_cast<std::int64_t>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(off[static_cast<std::int64_t>(i)], want[i]) << "offset " << i;
  std::vector<std::int64_t> copied(want.size(), -1);
  off.copy_to(copied.data());
  EXPECT_EQ(copied, want);
  EXPECT_EQ(off.total(), want.back());
}

template <typename Narrow>
void push_all(BasicCsrOffsets<Narrow>& off, const std::vector<std::int64_t>& want) {
  for (std::size_t i = 1; i < want.size(); ++i) off.push(want[i]);
}

using Small = BasicCsrOffsets<std::int8_t>;  // narrow up to 127: forms change early

}  // namespace

TEST(CsrOffsets, StaysIdentityWhileEveryRowHasOneItem) {
  Small off;
  EXPECT_EQ(off.form(), Small::Form::regular);
  EXPECT_TRUE(off.identity());
  expect_offsets(off, {0});
  const std::vector<std::int64_t> want = prefix(std::vector<std::int64_t>(300, 1));
  push_all(off, want);  // 300 rows, past the narrow limit: nothing stored at all
  EXPECT_EQ(off.form(), Small::Form::regular);
  EXPECT_TRUE(off.identity());
  EXPECT_EQ(off.stored_bytes(), 0);
  expect_offsets(off, want);
}

TEST(CsrOffsets, StaysRegularWithEmptyRowsFirstThenOneLength) {
  // Empty rows, then rows of `items` each (recursive doubling's
  // dependencies: none in the first step, 4 per transfer after): nothing is
  // stored, past the narrow limit too; only no empty rows and one item per
  // row is the identity.
  for (std::int64_t zeros : {0, 1, 7}) {
    for (std::int64_t items : {0, 1, 4}) {
      std::vector<std::int64_t> counts(static_cast<std::size_t>(zeros), 0);
      counts.resize(counts.size() + 60, items);
      const auto want = prefix(counts);
      Small off;
      push_all(off, want);
      EXPECT_EQ(off.form(), Small::Form::regular) << zeros << " empty, then " << items;
      EXPECT_EQ(off.stored_bytes(), 0);
      EXPECT_EQ(off.identity(), zeros == 0 && items == 1) << zeros << " empty, then " << items;
      EXPECT_EQ(off.zeros(), items == 0 ? zeros + 60 : zeros);
      EXPECT_EQ(off.stride(), items);
      expect_offsets(off, want);
    }
  }
}

TEST(CsrOffsets, LeavesRegularAtTheFirstOtherRow) {
  // After zero or three empty rows, rows of one item but one row of other
  // than one: at the first such row, in the middle and at the end; zero
  // items and several alike. A row of zero items after the first item, or
  // any other count, ends the regular form.
  for (std::size_t zeros : {0u, 3u}) {
    for (std::size_t at : {0u, 5u, 9u}) {
      for (std::int64_t items : {0, 3}) {
        std::vector<std::int64_t> counts(zeros, 0);
        counts.resize(zeros + 10, 1);
        counts[zeros + at] = items;
        const auto want = prefix(counts);
        // A first non-empty row of 3 sets the length; the row after breaks it.
        const std::size_t breaks_at = items == 3 && at == 0 ? zeros + 1 : zeros + at;
        const bool never = items == 0 && at == 0;  // one more empty row first
        Small off;
        for (std::size_t i = 1; i < want.size(); ++i) {
          off.push(want[i]);
          const bool broken = !never && i > breaks_at;
          EXPECT_EQ(off.form(), broken ? Small::Form::narrow : Small::Form::regular)
              << zeros << " empty, break at row " << zeros + at << ", after row " << i - 1;
        }
        expect_offsets(off, want);
        EXPECT_EQ(off.stored_bytes(), never ? 0 : static_cast<std::int64_t>(want.size()));
      }
    }
  }
}

TEST(CsrOffsets, WidensWhenTheItemCountPassesTheNarrowLimit) {
  // Rows of 1 and 3 items in turn (so not regular after the second row):
  // offsets up to 126 fit in int8_t, 128 does not.
  std::vector<std::int64_t> counts;
  for (int i = 0; i < 50; ++i) counts.insert(counts.end(), {1, 3});
  const auto want = prefix(counts);
  Small off;
  for (std::size_t i = 1; i < want.size(); ++i) {
    off.push(want[i]);
    const auto form = i < 2 ? Small::Form::regular
                            : (want[i] <= 127 ? Small::Form::narrow : Small::Form::wide);
    EXPECT_EQ(off.form(), form) << "offset " << want[i];
  }
  expect_offsets(off, want);
  EXPECT_EQ(off.stored_bytes(), static_cast<std::int64_t>(want.size() * 8));
}

TEST(CsrOffsets, RegularPastTheNarrowLimitGoesStraightToWide) {
  // 200 rows of one item (and, in the second list, 5 empty rows first and
  // rows of 2), then an empty row: offsets up to 200 need the wide form
  // from the start of the materialised array.
  for (std::int64_t items : {1, 2}) {
    std::vector<std::int64_t> counts(items == 1 ? 0 : 5, 0);
    counts.resize(counts.size() + 200, items);
    counts.push_back(0);
    counts.push_back(1);
    const auto want = prefix(counts);
    Small off;
    off.reserve(150);  // smaller than the final row count: growth still works
    push_all(off, want);
    EXPECT_EQ(off.form(), Small::Form::wide);
    expect_offsets(off, want);
  }
}

TEST(CsrOffsets, ScheduleWidthIsThirtyTwoBits) {
  EXPECT_EQ(CsrOffsets::kNarrowMax, (std::int64_t{1} << 31) - 1);
}

namespace {

// A ring-like schedule of n unicast transfers, one range each, except
// transfer `multi` (if >= 0), which gets two destinations and two ranges.
// Built through add_transfer, append_csr (one batch) and from_arrays, which
// must all agree with the lists they were given.
struct Lists {
  std::vector<RankId> src;
  std::vector<std::vector<RankId>> dsts;
  std::vector<std::vector<BlockRange>> ranges;
  std::vector<std::vector<TransferId>> deps;
};

Lists make_lists(int n, int multi, RankId p) {
  Lists l;
  for (int t = 0; t < n; ++t) {
    const RankId s = t % p;
    l.src.push_back(s);
    l.dsts.push_back({static_cast<RankId>((s + 1) % p)});
    l.ranges.push_back({BlockRange{t % 4, t % 4 + 1}});
    l.deps.push_back(t == 0 ? std::vector<TransferId>{} : std::vector<TransferId>{t - 1});
    if (t == multi) {
      l.dsts.back().push_back(static_cast<RankId>((s + 2) % p));
      l.ranges.back() = {BlockRange{0, 1}, BlockRange{2, 3}};
    }
  }
  return l;
}

void expect_lists(const Schedule& s, const Lists& l) {
  ASSERT_EQ(s.num_transfers(), static_cast<TransferId>(l.src.size()));
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    EXPECT_EQ(s.src(t), l.src[t]);
    EXPECT_EQ(std::vector<RankId>(s.dsts_begin(t), s.dsts_end(t)), l.dsts[t]) << t;
    EXPECT_EQ(s.num_dsts(t), static_cast<std::int64_t>(l.dsts[t].size()));
    ASSERT_EQ(s.ranges_end(t) - s.ranges_begin(t),
              static_cast<std::ptrdiff_t>(l.ranges[t].size())) << t;
    for (std::size_t i = 0; i < l.ranges[t].size(); ++i) {
      EXPECT_EQ(s.ranges_begin(t)[i].lo, l.ranges[t][i].lo);
      EXPECT_EQ(s.ranges_begin(t)[i].hi, l.ranges[t][i].hi);
    }
    EXPECT_EQ(std::vector<TransferId>(s.deps_begin(t), s.deps_end(t)), l.deps[t]) << t;
    EXPECT_EQ(s.num_deps(t), static_cast<std::int64_t>(l.deps[t].size()));
  }
}

Schedule by_add_transfer(const Lists& l) {
  Schedule s(5, std::vector<Bytes>(4, 8), Collective{});
  for (std::size_t t = 0; t < l.src.size(); ++t)
    s.add_transfer(l.src[t], l.dsts[t], l.ranges[t], Op::copy, l.deps[t]);
  return s;
}

struct Flat {
  std::vector<std::int64_t> dst_off{0}, rng_off{0}, dep_off{0};
  std::vector<RankId> dsts;
  std::vector<BlockId> lo, hi;
  std::vector<TransferId> deps;
  std::vector<std::uint8_t> op;
};

Flat flatten(const Lists& l) {
  Flat f;
  for (std::size_t t = 0; t < l.src.size(); ++t) {
    f.dsts.insert(f.dsts.end(), l.dsts[t].begin(), l.dsts[t].end());
    f.dst_off.push_back(static_cast<std::int64_t>(f.dsts.size()));
    for (const auto& r : l.ranges[t]) {
      f.lo.push_back(r.lo);
      f.hi.push_back(r.hi);
    }
    f.rng_off.push_back(static_cast<std::int64_t>(f.lo.size()));
    f.deps.insert(f.deps.end(), l.deps[t].begin(), l.deps[t].end());
    f.dep_off.push_back(static_cast<std::int64_t>(f.deps.size()));
    f.op.push_back(0);
  }
  return f;
}

}  // namespace

TEST(CsrOffsets, ScheduleReadsBackAfterAMulticastAtStartMiddleEnd) {
  const int n = 12;
  for (int multi : {-1, 0, 6, n - 1}) {
    SCOPED_TRACE("multicast at transfer " + std::to_string(multi));
    const Lists l = make_lists(n, multi, 5);
    const Flat f = flatten(l);
    Schedule a = by_add_transfer(l);
    Schedule b(5, std::vector<Bytes>(4, 8), Collective{});
    b.append_csr(n, l.src.data(), f.op.data(), f.dst_off.data(), f.dsts.data(),
                 f.rng_off.data(), f.lo.data(), f.hi.data(), f.dep_off.data(), f.deps.data());
    Schedule c = Schedule::from_arrays(5, std::vector<Bytes>(4, 8), Collective{}, l.src, f.op,
                                       f.dst_off, f.dsts, f.rng_off, f.lo, f.hi, f.dep_off,
                                       f.deps);
    const auto want_form = multi < 0 ? CsrOffsets::Form::regular : CsrOffsets::Form::narrow;
    for (const Schedule* s : {&a, &b, &c}) {
      expect_lists(*s, l);
      EXPECT_EQ(s->dst_offsets().form(), want_form);
      EXPECT_EQ(s->range_offsets().form(), want_form);
      EXPECT_EQ(s->dst_offsets().identity(), multi < 0);
      // Transfer 0 has no dependency, every later one has one: the
      // dependency offsets are regular, not stored.
      EXPECT_EQ(s->dep_offsets().form(), CsrOffsets::Form::regular);
      EXPECT_EQ(s->dep_offsets().zeros(), 1);
      EXPECT_EQ(s->dep_offsets().stride(), 1);
      std::vector<std::int64_t> off(n + 1);
      s->dst_offsets().copy_to(off.data());
      EXPECT_EQ(off, f.dst_off);
      s->range_offsets().copy_to(off.data());
      EXPECT_EQ(off, f.rng_off);
      s->dep_offsets().copy_to(off.data());
      EXPECT_EQ(off, f.dep_off);
    }
  }
}

TEST(CsrOffsets, UnicastScheduleStoresNoDestinationOrRangeOffsets) {
  const int n = 100;
  Schedule s = by_add_transfer(make_lists(n, -1, 5));
  // src 4 + op 1 + dst 4 + range 4 bytes (one block each: its lo) per
  // transfer and 99 dependencies of 4 bytes; no offsets (the dependencies:
  // none for transfer 0, one for each later transfer).
  EXPECT_EQ(s.range_list().form(), BlockRangeList::Form::unit);
  EXPECT_EQ(s.transfer_array_bytes(), n * (4 + 1 + 4 + 4) + (n - 1) * 4);
  // With a second dependency on transfer 50 the offsets are stored: n + 1
  // of 4 bytes.
  Lists l = make_lists(n, -1, 5);
  l.deps[50].push_back(0);
  Schedule u = by_add_transfer(l);
  EXPECT_EQ(u.dep_offsets().form(), CsrOffsets::Form::narrow);
  EXPECT_EQ(u.transfer_array_bytes(), n * (4 + 1 + 4 + 4) + n * 4 + (n + 1) * 4);
}

// The three forms of the block ranges, each move after items of the earlier
// form: every item reads back as pushed, and the bytes are the form's.
TEST(BlockRanges, FormsMoveForwardAndKeepEveryRange) {
  std::vector<BlockRange> pushed;
  BlockRangeList l;
  auto push = [&](BlockRange r) {
    l.push_back(r);
    pushed.push_back(r);
    ASSERT_EQ(l.size(), static_cast<std::int64_t>(pushed.size()));
    for (std::size_t i = 0; i < pushed.size(); ++i) {
      EXPECT_EQ(l[static_cast<std::int64_t>(i)].lo, pushed[i].lo);
      EXPECT_EQ(l[static_cast<std::int64_t>(i)].hi, pushed[i].hi);
    }
  };
  l.grow(8);
  for (int i = 0; i < 3; ++i) push({2, 3});
  EXPECT_EQ(l.form(), BlockRangeList::Form::constant);
  EXPECT_EQ(l.stored_bytes(), 0);
  push({5, 6});
  EXPECT_EQ(l.form(), BlockRangeList::Form::unit);
  EXPECT_EQ(l.stored_bytes(), 4 * 4);
  push({0, 4});
  EXPECT_EQ(l.form(), BlockRangeList::Form::full);
  EXPECT_EQ(l.stored_bytes(), 5 * 8);
  push({7, 8});
  EXPECT_EQ(l.form(), BlockRangeList::Form::full);

  // A repeated range of several blocks goes from constant to full at once.
  BlockRangeList whole;
  for (int i = 0; i < 4; ++i) whole.push_back({0, 8});
  EXPECT_EQ(whole.form(), BlockRangeList::Form::constant);
  whole.push_back({1, 2});
  EXPECT_EQ(whole.form(), BlockRangeList::Form::full);
  EXPECT_EQ(whole[3].hi, 8);
  EXPECT_EQ(whole[4].lo, 1);

  // A schedule reads its rows through RangeIter as through a pointer.
  Schedule s(2, std::vector<Bytes>(4, 8), Collective{});
  s.add_transfer(0, {1}, {{0, 1}, {2, 4}}, Op::copy, {});
  s.add_transfer(1, {0}, {{1, 2}}, Op::copy, {});
  ASSERT_EQ(s.ranges_end(0) - s.ranges_begin(0), 2);
  EXPECT_EQ((s.ranges_end(0) - 1)->hi, 4);
  EXPECT_EQ(s.ranges_begin(0)[1].lo, 2);
  const std::vector<BlockRange> row(s.ranges_begin(1), s.ranges_end(1));
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0].lo, 1);
  EXPECT_EQ(s.transfer_bytes(0), 3 * 8);
}

TEST(CsrOffsets, RejectedTransferInABatchLeavesNoRangeBehind) {
  // Transfer 1 of the batch names block 1 twice ([0, 2) and [1, 3)): the
  // batch stops there with transfer 0 added, and the next transfer reads
  // back its own range only.
  Schedule s(3, std::vector<Bytes>(4, 8), Collective{});
  const std::vector<RankId> src{0, 1}, dsts{1, 2};
  const std::vector<std::uint8_t> op{0, 0};
  const std::vector<std::int64_t> rng_off{0, 1, 3};
  const std::vector<BlockId> lo{0, 0, 1}, hi{1, 2, 3};
  const std::vector<std::int64_t> dep_off{0, 0, 0};
  EXPECT_THROW(s.append_csr(2, src.data(), op.data(), nullptr, dsts.data(), rng_off.data(),
                            lo.data(), hi.data(), dep_off.data(), nullptr),
               ScheduleError);
  ASSERT_EQ(s.num_transfers(), 1);
  s.add(2, 0, 3, 4, Op::copy, {0});
  ASSERT_EQ(s.num_transfers(), 2);
  ASSERT_EQ(s.ranges_end(1) - s.ranges_begin(1), 1);
  EXPECT_EQ(s.ranges_begin(1)->lo, 3);
  EXPECT_EQ(s.ranges_begin(1)->hi, 4);
  EXPECT_EQ(s.range_list().size(), 2);
  EXPECT_TRUE(s.range_offsets().identity());
}

TEST(CsrOffsets, Int64BatchMatchesInt32AndChecksBeforeNarrowing) {
  // A chain 0 -> 1 -> 2 with padded dependency rows (-1: none, repeats),
  // appended once from 32-bit and once from 64-bit arrays: same schedule.
  const std::vector<std::uint8_t> op{0, 1, 0};
  Schedule a(3, std::vector<Bytes>(2, 8), Collective{});
  const std::vector<RankId> src{0, 1, 2}, dsts{1, 2, 0};
  const std::vector<BlockId> lo{0, 1, 0}, hi{1, 2, 2};
  const std::vector<TransferId> deps{-1, -1, 0, 0, 1, -1};
  a.append_csr(3, src.data(), op.data(), nullptr, dsts.data(), nullptr, lo.data(), hi.data(),
               nullptr, deps.data(), 2);
  Schedule b(3, std::vector<Bytes>(2, 8), Collective{});
  const std::vector<std::int64_t> src64{0, 1, 2}, dsts64{1, 2, 0};
  const std::vector<std::int64_t> lo64{0, 1, 0}, hi64{1, 2, 2};
  const std::vector<std::int64_t> deps64{-1, -1, 0, 0, 1, -1};
  b.append_csr(3, src64.data(), op.data(), nullptr, dsts64.data(), nullptr, lo64.data(),
               hi64.data(), nullptr, deps64.data(), 2);
  EXPECT_EQ(a.src_array(), b.src_array());
  EXPECT_EQ(a.op_array(), b.op_array());
  EXPECT_EQ(a.dst_array(), b.dst_array());
  EXPECT_EQ(a.dep_array(), b.dep_array());
  ASSERT_EQ(a.range_list().size(), b.range_list().size());
  for (std::int64_t i = 0; i < a.range_list().size(); ++i) {
    EXPECT_EQ(a.range_list()[i].lo, b.range_list()[i].lo);
    EXPECT_EQ(a.range_list()[i].hi, b.range_list()[i].hi);
  }
  for (TransferId t = 0; t < 3; ++t) EXPECT_EQ(a.num_deps(t), b.num_deps(t));
  ASSERT_EQ(b.num_deps(2), 1);
  EXPECT_EQ(*b.deps_begin(2), 1);
  // 2^32 + 1 would narrow to 1, a valid rank, block and transfer: each is
  // rejected as the value it is, and nothing of the bad transfer stays.
  const std::int64_t wide = (std::int64_t{1} << 32) + 1;
  const std::vector<std::int64_t> one{0}, bad{wide}, zero{0}, two{2}, none{-1};
  const std::vector<std::uint8_t> op1{0};
  for (int field = 0; field < 4; ++field) {
    Schedule c = b;
    const std::vector<std::int64_t>& s = field == 0 ? bad : one;
    const std::vector<std::int64_t>& d = field == 1 ? bad : two;
    const std::vector<std::int64_t>& h = field == 2 ? bad : two;
    const std::vector<std::int64_t>& dep = field == 3 ? bad : none;
    EXPECT_THROW(c.append_csr(1, s.data(), op1.data(), nullptr, d.data(), nullptr,
                              zero.data(), h.data(), nullptr, dep.data(), 1),
                 ScheduleError)
        << "field " << field;
    EXPECT_EQ(c.num_transfers(), 3);
  }
}

// append_csr's inline path for one destination and one range against
// add_transfer, transfer by transfer, on random batches with faults: the
// same transfers are kept, in the same form, and a fault is reported at the
// same transfer (padded rows of up to 10 candidates, with -1s, repeats and
// any order; CSR lists in any order).
TEST(CsrOffsets, InlineBatchPathMatchesAddTransfer) {
  std::mt19937 rng(7);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::int64_t ranks = 5, blocks = 6;
  for (int round = 0; round < 300; ++round) {
    const std::int64_t n = pick(1, 12), width = pick(0, 10);
    const bool csr = round % 3 == 0;
    std::vector<std::int64_t> src(n), dst(n), lo(n), hi(n), deps, dep_off{0};
    std::vector<std::uint8_t> op(n);
    for (std::int64_t i = 0; i < n; ++i) {
      const bool bad = pick(0, 40) == 0;  // now and then a fault of some kind
      src[i] = pick(0, ranks - 1);
      dst[i] = (src[i] + pick(1, ranks - 1)) % ranks;
      lo[i] = pick(0, blocks - 1);
      hi[i] = pick(lo[i] + 1, blocks);
      op[i] = static_cast<std::uint8_t>(pick(0, 1));
      if (bad) {
        switch (pick(0, 3)) {
          case 0: dst[i] = src[i]; break;
          case 1: hi[i] = lo[i]; break;
          case 2: op[i] = 2; break;
          default: src[i] = ranks; break;
        }
      }
      if (csr) {  // up to 3 distinct earlier ids in any order, now and then a bad one
        std::vector<std::int64_t> row;
        for (std::int64_t v = 0; v < i; ++v)
          if (pick(0, 2) == 0) row.push_back(v);
        if (row.size() > 3) row.resize(3);
        std::shuffle(row.begin(), row.end(), rng);
        if (pick(0, 30) == 0) row.push_back(pick(0, 1) ? -1 : i);
        deps.insert(deps.end(), row.begin(), row.end());
        dep_off.push_back(static_cast<std::int64_t>(deps.size()));
      } else {  // candidates: -1 (none), repeats, any order; now and then itself
        for (std::int64_t a = 0; a < width; ++a) deps.push_back(pick(-1, i - 1));
        if (width > 0 && pick(0, 60) == 0) deps.back() = i;
      }
    }
    Schedule fast(static_cast<RankId>(ranks), std::vector<Bytes>(blocks, 8), Collective{});
    if (round % 2 == 1) {  // a multicast first: destinations run ahead of transfers
      fast.add_transfer(0, {1, 2, 3}, {BlockRange{0, 2}}, Op::copy, {});
      fast.add_transfer(4, {1}, {BlockRange{1, 2}}, Op::copy, {0});
    }
    Schedule slow = fast;
    std::string fast_error, slow_error;
    try {
      fast.append_csr(n, src.data(), op.data(), nullptr, dst.data(), nullptr, lo.data(),
                      hi.data(), csr ? dep_off.data() : nullptr, deps.data(),
                      csr ? 0 : width);
    } catch (const std::exception& e) {
      fast_error = e.what();
    }
    try {
      for (std::int64_t i = 0; i < n; ++i) {
        std::vector<TransferId> d;
        if (csr) {
          for (std::int64_t a = dep_off[i]; a < dep_off[i + 1]; ++a)
            d.push_back(static_cast<TransferId>(deps[a]));
        } else {
          for (std::int64_t a = i * width; a < (i + 1) * width; ++a)
            if (deps[a] >= 0 &&
                std::find(d.begin(), d.end(), static_cast<TransferId>(deps[a])) == d.end())
              d.push_back(static_cast<TransferId>(deps[a]));
          std::sort(d.begin(), d.end());
        }
        if (src[i] < 0 || src[i] >= ranks || dst[i] < 0 || dst[i] >= ranks)
          throw ScheduleError("field", "rank out of range", i);
        slow.add_transfer(static_cast<RankId>(src[i]), {static_cast<RankId>(dst[i])},
                          {BlockRange{static_cast<BlockId>(lo[i]), static_cast<BlockId>(hi[i])}},
                          op[i] > 1 ? static_cast<Op>(7) : static_cast<Op>(op[i]), d);
      }
    } catch (const std::exception& e) {
      slow_error = e.what();
    }
    ASSERT_EQ(fast.num_transfers(), slow.num_transfers()) << "round " << round;
    EXPECT_EQ(fast_error.empty(), slow_error.empty()) << "round " << round << ": " << fast_error;
    EXPECT_EQ(fast.src_array(), slow.src_array());
    EXPECT_EQ(fast.op_array(), slow.op_array());
    EXPECT_EQ(fast.dst_array(), slow.dst_array());
    EXPECT_EQ(fast.dep_array(), slow.dep_array());
    for (TransferId t = 0; t < fast.num_transfers(); ++t) {
      EXPECT_EQ(fast.range_list()[t], slow.range_list()[t]);
      EXPECT_EQ(fast.dep_offsets()[t + 1], slow.dep_offsets()[t + 1]);
      EXPECT_EQ(fast.dst_offsets()[t + 1], slow.dst_offsets()[t + 1]);
    }
  }
}

// Batches longer than the inline path's sub-batches (2^16 transfers), with
// CSR and padded dependencies, and a fault near the end: the same as
// add_transfer, the fault reported at its transfer.
TEST(CsrOffsets, InlineBatchPathAcrossSubBatches) {
  const std::int64_t n = 150000, bad = 140001;
  std::vector<std::int64_t> src(n), dst(n), lo(n), hi(n), csr, off{0}, padded;
  const std::vector<std::uint8_t> op(n, 1);
  for (std::int64_t i = 0; i < n; ++i) {
    src[i] = i % 3;
    dst[i] = i == bad ? src[i] : (i + 1) % 3;
    lo[i] = i % 4;
    hi[i] = lo[i] + 1;
    if (i >= 2) csr.push_back(i - 2);
    if (i >= 1) csr.push_back(i - 1);
    off.push_back(static_cast<std::int64_t>(csr.size()));
    padded.insert(padded.end(), {i - 1, -1, i - 2 >= 0 ? i - 2 : -1});
  }
  for (const bool use_csr : {true, false}) {
    Schedule fast(3, std::vector<Bytes>(4, 8), Collective{});
    EXPECT_THROW(fast.append_csr(n, src.data(), op.data(), nullptr, dst.data(), nullptr,
                                 lo.data(), hi.data(), use_csr ? off.data() : nullptr,
                                 use_csr ? csr.data() : padded.data(), use_csr ? 0 : 3),
                 ScheduleError);
    Schedule slow(3, std::vector<Bytes>(4, 8), Collective{});
    for (std::int64_t i = 0; i < bad; ++i) {
      std::vector<TransferId> d;
      for (std::int64_t a = off[i]; a < off[i + 1]; ++a)
        d.push_back(static_cast<TransferId>(csr[a]));
      slow.add_transfer(static_cast<RankId>(src[i]), {static_cast<RankId>(dst[i])},
                        {BlockRange{static_cast<BlockId>(lo[i]), static_cast<BlockId>(hi[i])}},
                        Op::reduce, d);
    }
    ASSERT_EQ(fast.num_transfers(), bad);
    EXPECT_EQ(fast.src_array(), slow.src_array());
    EXPECT_EQ(fast.dst_array(), slow.dst_array());
    EXPECT_EQ(fast.dep_array(), slow.dep_array());
    for (TransferId t = 0; t < bad; t += 997) {
      EXPECT_EQ(fast.range_list()[t], slow.range_list()[t]);
      EXPECT_EQ(fast.dep_offsets()[t + 1], slow.dep_offsets()[t + 1]);
    }
  }
}
