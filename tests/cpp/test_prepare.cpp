// The simulator's preparation (simulation.hpp, prepare()): the canonical
// rank of every transfer against an independent stable sort of the key
// tuples, in the packed-key path (keys of up to 64 bits, and up to 80
// with a wider top digit), the field-wise path (keys wider still), on a
// schedule already in order, and on a schedule large enough to
// be prepared on two threads; the successor lists against the schedule's
// own; the dataflow stream edges in both of their forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include "wafercoll/simulate/simulation.hpp"

using namespace wafercoll;

namespace {

// Steele, Lea and Flood's SplitMix64 (OOPSLA 2014), for reproducible inputs.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t x = (state += 0x9E3779B97F4A7C15ULL);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// n transfers among p ranks over `blocks` blocks of random sizes below
// max_block_bytes, one to three destinations each, a random single range.
Schedule random_schedule(RankId p, std::int64_t n, BlockId blocks, Bytes max_block_bytes,
                         std::uint64_t seed) {
  std::vector<Bytes> sizes(static_cast<std::size_t>(blocks));
  for (Bytes& b : sizes) b = 1 + static_cast<Bytes>(splitmix64(seed) % max_block_bytes);
  Collective c;
  c.kind = CollectiveKind::allgather;
  c.owners.resize(static_cast<std::size_t>(blocks));
  for (BlockId b = 0; b < blocks; ++b) c.owners[b] = b % p;
  Schedule s(p, sizes, c);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto src = static_cast<RankId>(splitmix64(seed) % p);
    std::vector<RankId> dsts;
    const int nd = 1 + static_cast<int>(splitmix64(seed) % 3);
    while (static_cast<int>(dsts.size()) < nd) {
      const auto d = static_cast<RankId>(splitmix64(seed) % p);
      if (d != src && std::find(dsts.begin(), dsts.end(), d) == dsts.end()) dsts.push_back(d);
    }
    const auto lo = static_cast<BlockId>(splitmix64(seed) % blocks);
    const auto hi = lo + 1 + static_cast<BlockId>(splitmix64(seed) % (blocks - lo));
    const Op op = splitmix64(seed) % 2 ? Op::reduce : Op::copy;
    s.add_transfer(src, dsts, {{lo, hi}}, op, {});
  }
  return s;
}

// The canonical rank of every transfer, by a comparison sort of the tuples
// the simulator documents, ties by index.
std::vector<std::uint32_t> expected_ranks(const Schedule& s) {
  const TransferId T = s.num_transfers();
  auto key = [&](TransferId t) {
    return std::make_tuple(s.src(t), *s.dsts_begin(t), s.num_dsts(t), s.ranges_begin(t)->lo,
                           (s.ranges_end(t) - 1)->hi, static_cast<int>(s.op(t)),
                           s.transfer_bytes(t));
  };
  std::vector<TransferId> order(static_cast<std::size_t>(T));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](TransferId a, TransferId b) { return key(a) < key(b); });
  std::vector<std::uint32_t> rank(static_cast<std::size_t>(T));
  for (TransferId i = 0; i < T; ++i) rank[order[i]] = static_cast<std::uint32_t>(i);
  return rank;
}

std::vector<std::uint32_t> prepared_ranks(const Schedule& s) {
  const sim::Prepared p =
      sim::prepare(s, Topology::ring(s.num_ranks()), NetworkModel{}, SimOptions{});
  std::vector<std::uint32_t> rank;
  for (const sim::TransferHot& h : p.hot) rank.push_back(h.canon());
  return rank;
}

}  // namespace

TEST(Prepare, CanonicalRanksFromPackedKeys) {
  const Schedule s = random_schedule(24, 3000, 40, 1000, 1);
  EXPECT_EQ(prepared_ranks(s), expected_ranks(s));
}

TEST(Prepare, CanonicalRanksOfKeysWiderThan64Bits) {
  // Block sizes up to 2^50 bytes: the bytes field alone spans about 50 bits.
  const Schedule s = random_schedule(60, 2000, 50, Bytes{1} << 50, 2);
  EXPECT_EQ(prepared_ranks(s), expected_ranks(s));
}

// r's transfers renumbered in their canonical order.
Schedule in_canonical_order(const Schedule& r) {
  const std::vector<std::uint32_t> rank = expected_ranks(r);
  std::vector<TransferId> order(rank.size());
  for (std::size_t t = 0; t < rank.size(); ++t) order[rank[t]] = static_cast<TransferId>(t);
  Schedule s(r.num_ranks(), r.block_bytes(), r.collective());
  for (const TransferId t : order)
    s.add_transfer(r.src(t), std::vector<RankId>(r.dsts_begin(t), r.dsts_end(t)),
                   std::vector<BlockRange>(r.ranges_begin(t), r.ranges_end(t)), r.op(t), {});
  return s;
}

std::vector<std::uint32_t> identity_ranks(const Schedule& s) {
  std::vector<std::uint32_t> identity(static_cast<std::size_t>(s.num_transfers()));
  std::iota(identity.begin(), identity.end(), 0u);
  return identity;
}

TEST(Prepare, CanonicalRanksOfTransfersAlreadyInOrder) {
  const Schedule s = in_canonical_order(random_schedule(16, 500, 20, 100, 3));
  EXPECT_EQ(expected_ranks(s), identity_ranks(s));
  EXPECT_EQ(prepared_ranks(s), identity_ranks(s));
}

// Unicast transfers with one range each (the simulator's simple keys) over
// many blocks and ranks: the first and last block alone would need 2 x 17
// bits and the ranks 2 x 12, beyond one 64-bit key with the index; the last
// block read as its span from the first fits (spans of one block: no bits;
// up to `max_span` blocks: a few). The order is the tuples' all the same.
TEST(Prepare, CanonicalRanksOfManyBlocksThroughTheirSpans) {
  for (const BlockId max_span : {BlockId{1}, BlockId{6}}) {
    SCOPED_TRACE("ranges of up to " + std::to_string(max_span) + " blocks");
    const RankId p = 4096;
    const BlockId blocks = BlockId{1} << 17;
    std::uint64_t seed = 7 + static_cast<std::uint64_t>(max_span);
    Collective c;
    c.kind = CollectiveKind::allgather;
    c.owners.resize(static_cast<std::size_t>(blocks));
    for (BlockId b = 0; b < blocks; ++b) c.owners[b] = b % p;
    Schedule s(p, std::vector<Bytes>(static_cast<std::size_t>(blocks), 8), c);
    // Few distinct sources, destinations and first blocks, at the ends of
    // their ranges (so their fields keep their full width), so that most
    // transfers tie up to the span and the op.
    const RankId srcs[] = {0, 1, p - 1};
    const RankId dsts[] = {2, p - 2};
    const BlockId los[] = {0, blocks / 2, blocks - 8};
    for (int i = 0; i < 3000; ++i) {
      const RankId src = srcs[splitmix64(seed) % 3];
      const RankId dst = dsts[splitmix64(seed) % 2];
      const BlockId lo = los[splitmix64(seed) % 3];
      const auto hi = lo + 1 + static_cast<BlockId>(splitmix64(seed) % max_span);
      const Op op = splitmix64(seed) % 2 ? Op::reduce : Op::copy;
      // a few exact duplicates of the previous transfer: ties by index
      if (i > 0 && splitmix64(seed) % 8 == 0) {
        const TransferId t = s.num_transfers() - 1;
        s.add_transfer(s.src(t), {*s.dsts_begin(t)}, {*s.ranges_begin(t)}, s.op(t), {});
        continue;
      }
      s.add_transfer(src, {dst}, {{lo, hi}}, op, {});
    }
    ASSERT_TRUE(s.dst_offsets().identity());
    ASSERT_TRUE(s.range_offsets().identity());
    EXPECT_EQ(prepared_ranks(s), expected_ranks(s));
  }
}

// Keys of 65 to 80 bits (fields and index) are sorted packed, with a top
// digit of the bits above 64 (at least 8): transfers with up to three
// destinations over 4096 ranks, where the bytes field grows with the block
// sizes (keys of about 69 and 79 bits), and single-destination,
// single-range transfers over 2^14 ranks and 2^16 blocks, whose widths come
// from the schedule's sizes (74 bits). The order is the tuples' all the
// same, and a schedule already in that order keeps its indices as ranks.
TEST(Prepare, CanonicalRanksOfKeysWiderThan64BitsPacked) {
  std::vector<Schedule> cases;
  cases.push_back(random_schedule(4096, 3000, 40, Bytes{1} << 10, 11));
  cases.push_back(random_schedule(4096, 3000, 40, Bytes{1} << 20, 12));
  {
    const RankId p = RankId{1} << 14;
    const BlockId blocks = BlockId{1} << 16;
    Collective c;
    c.kind = CollectiveKind::allgather;
    c.owners.resize(static_cast<std::size_t>(blocks));
    for (BlockId b = 0; b < blocks; ++b) c.owners[b] = b % p;
    Schedule s(p, std::vector<Bytes>(static_cast<std::size_t>(blocks), 8), c);
    std::uint64_t seed = 13;
    for (int i = 0; i < 3000; ++i) {
      const auto src = static_cast<RankId>(splitmix64(seed) % p);
      const auto dst = static_cast<RankId>((src + 1 + splitmix64(seed) % (p - 1)) % p);
      const auto lo = static_cast<BlockId>(splitmix64(seed) % (blocks - 8));
      const auto hi = lo + 1 + static_cast<BlockId>(splitmix64(seed) % 8);
      s.add_transfer(src, {dst}, {{lo, hi}}, splitmix64(seed) % 2 ? Op::reduce : Op::copy, {});
    }
    ASSERT_TRUE(s.dst_offsets().identity());
    ASSERT_TRUE(s.range_offsets().identity());
    cases.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(prepared_ranks(cases[i]), expected_ranks(cases[i]));
    const Schedule s = in_canonical_order(cases[i]);
    EXPECT_EQ(prepared_ranks(s), identity_ranks(s));
  }
}

// The offsets of successor lists over n transfers, whatever their form.
std::vector<std::int64_t> offsets_of(const sim::SuccessorLists& l, std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t t = 0; t <= n; ++t) out.push_back(l.offset(t));
  return out;
}

// Their entries, transfer by transfer, checking that range() agrees with
// the offsets.
std::vector<TransferId> entries_of(const sim::SuccessorLists& l, std::int64_t n) {
  std::vector<TransferId> out;
  for (std::int64_t t = 0; t < n; ++t) {
    const auto [first, end] = l.range(t);
    EXPECT_EQ(first, l.offset(t));
    EXPECT_EQ(end, l.offset(t + 1));
    for (std::int64_t i = first; i < end; ++i)
      out.push_back(static_cast<TransferId>(l.entry(i, t)));
  }
  return out;
}

TEST(Prepare, LargerScheduleOnTwoThreads) {
  // 2^16 transfers and more: prepared on two threads, indices of 17 bits,
  // ranks grouped by index in more than one group; with dependencies, so
  // that the successor lists are computed on the second thread too.
  Schedule s = random_schedule(32, 70000, 64, 4096, 4);
  for (TransferId t = 0; t < 1000; ++t) s.add(0, 1, 0, 1, Op::copy, {t, t + 5000});
  EXPECT_EQ(prepared_ranks(s), expected_ranks(s));
  const sim::Prepared p =
      sim::prepare(s, Topology::ring(s.num_ranks()), NetworkModel{}, SimOptions{}, true);
  const Successors expected = successors(s);
  EXPECT_EQ(offsets_of(p.successors, s.num_transfers()), expected.offsets);
  EXPECT_EQ(entries_of(p.successors, s.num_transfers()), expected.list);
}

TEST(Prepare, SuccessorListsAsTheSchedulesOwn) {
  // Dependencies of random fan-in, and transfers nobody waits for.
  Schedule s = random_schedule(16, 400, 20, 100, 5);
  std::uint64_t seed = 6;
  for (TransferId t = 0; t < 600; ++t) {
    const TransferId n = s.num_transfers();
    const auto a = static_cast<TransferId>(splitmix64(seed) % n);
    const auto b = static_cast<TransferId>(splitmix64(seed) % n);
    s.add(0, 1, 0, 1, Op::copy, {a, b});
  }
  const Successors expected = successors(s);
  const TransferId n = s.num_transfers();
  // Compact: one-byte counts with sampled offsets, 16-bit differences.
  const sim::SuccessorLists got = sim::successor_lists(s);
  EXPECT_FALSE(got.counted.empty());
  EXPECT_FALSE(got.delta.empty());
  EXPECT_EQ(offsets_of(got, n), expected.offsets);
  EXPECT_EQ(entries_of(got, n), expected.list);
  // Not compact: 32-bit offsets and ids.
  const sim::SuccessorLists plain = sim::successor_lists(s, sim::kNarrowSuccessors, false);
  EXPECT_TRUE(plain.counted.empty());
  EXPECT_TRUE(plain.delta.empty());
  EXPECT_FALSE(plain.narrow.empty());
  EXPECT_EQ(offsets_of(plain, n), expected.offsets);
  EXPECT_EQ(entries_of(plain, n), expected.list);
  // The same lists with 64-bit offsets, as a list of 2^32 entries or more
  // would have them.
  const auto edges = static_cast<std::int64_t>(expected.list.size());
  const sim::SuccessorLists wide = sim::successor_lists(s, edges);
  EXPECT_TRUE(wide.narrow.empty());
  EXPECT_TRUE(wide.counted.empty());
  EXPECT_EQ(offsets_of(wide, n), expected.offsets);
  EXPECT_EQ(entries_of(wide, n), expected.list);
  EXPECT_EQ(offsets_of(sim::successor_lists(s, edges + 1), n), expected.offsets);
  const Schedule empty = random_schedule(2, 0, 1, 1, 7);
  EXPECT_EQ(offsets_of(sim::successor_lists(empty), 0), std::vector<std::int64_t>{0});
}

TEST(Prepare, SuccessorListsTooFarOrTooManyForTheCompactForm) {
  // A dependency 2^15 transfers back: 24-bit differences instead of 16-bit
  // ones; beyond the far limit (2^23, lowered here to 2^15 + 1), ids.
  Schedule far = random_schedule(8, 40000, 8, 64, 8);
  far.add(0, 1, 0, 1, Op::copy, {0, 39999});
  const Successors fe = successors(far);
  const sim::SuccessorLists f = sim::successor_lists(far);
  EXPECT_TRUE(f.delta.empty());
  EXPECT_FALSE(f.delta24.empty());
  EXPECT_TRUE(f.list.empty());
  EXPECT_FALSE(f.counted.empty());
  EXPECT_EQ(offsets_of(f, far.num_transfers()), fe.offsets);
  EXPECT_EQ(entries_of(f, far.num_transfers()), fe.list);
  const sim::SuccessorLists ids =
      sim::successor_lists(far, sim::kNarrowSuccessors, true, (1 << 15) + 1);
  EXPECT_TRUE(ids.delta24.empty());
  EXPECT_FALSE(ids.list.empty());
  EXPECT_EQ(entries_of(ids, far.num_transfers()), fe.list);
  // Every 24-bit difference reads back with its sign, to the limits of the
  // form: a schedule whose dependencies point forward (imported) by up to
  // 2^23 - 1 and back by as much.
  const TransferId span = (TransferId{1} << 23) - 1;
  std::vector<RankId> src(static_cast<std::size_t>(span) + 1, 0), dst(src.size(), 1);
  std::vector<std::uint8_t> op(src.size(), 0);
  std::vector<std::int64_t> one(src.size() + 1);
  for (std::size_t i = 0; i < one.size(); ++i) one[i] = static_cast<std::int64_t>(i);
  std::vector<BlockId> lo(src.size(), 0), hi(src.size(), 1);
  std::vector<std::int64_t> dep_off(src.size() + 1, 1);
  dep_off[0] = 0;
  dep_off[1] = 1;  // 0 waits for span; span waits for 1 (ids 0 .. span)
  dep_off.back() = 2;
  const std::vector<TransferId> deps{span, 1};
  const Schedule edge = Schedule::from_arrays(2, {8}, Collective{}, src, op, one, dst, one, lo,
                                              hi, dep_off, deps);
  const sim::SuccessorLists e = sim::successor_lists(edge);
  EXPECT_FALSE(e.delta24.empty());
  const Successors ee = successors(edge);
  EXPECT_EQ(entries_of(e, edge.num_transfers()), ee.list);
  // 256 transfers waiting for one: 32-bit offsets instead of counts.
  Schedule many = random_schedule(8, 300, 8, 64, 9);
  for (int i = 0; i < 256; ++i) many.add(0, 1, 0, 1, Op::copy, {5});
  const Successors me = successors(many);
  const sim::SuccessorLists m = sim::successor_lists(many);
  EXPECT_TRUE(m.counted.empty());
  EXPECT_FALSE(m.narrow.empty());
  EXPECT_FALSE(m.delta.empty());
  EXPECT_EQ(offsets_of(m, many.num_transfers()), me.offsets);
  EXPECT_EQ(entries_of(m, many.num_transfers()), me.list);
}

// Dataflow stream edges (set_stream_edges): every slot's (t, queue) pairs
// come back in the order given, whether t and its queue share 32 bits or,
// when they would not fit (here: fewer bits allowed), the queues are kept
// apart; and whether the slots' offsets are one-byte counts or, with a slot
// of more than 255 edges, 32-bit offsets.
TEST(Prepare, StreamEdgesPackedOrApart) {
  const std::int64_t slots = 50;
  const TransferId transfers = 3000;
  for (const int crowded : {0, 300}) {  // edges of slot 7 beyond the random ones
    std::uint64_t seed = 11;
    std::vector<std::tuple<std::int32_t, TransferId, std::int32_t>> edges;
    std::vector<std::vector<std::pair<TransferId, std::int32_t>>> expected(slots);
    for (int i = 0; i < 4000 + crowded; ++i) {
      const auto slot =
          i < 4000 ? static_cast<std::int32_t>(splitmix64(seed) % slots) : std::int32_t{7};
      const auto t = static_cast<TransferId>(splitmix64(seed) % transfers);
      const auto q = static_cast<std::int32_t>(splitmix64(seed) % 5);
      edges.emplace_back(slot, t, q);
      expected[slot].emplace_back(t, q);
    }
    auto replay = [&edges](auto&& emit) {
      for (const auto& [slot, t, q] : edges) emit(slot, t, q);
    };
    for (const int bits : {32, 12 + 2}) {  // t takes 12 bits, queues 3
      sim::DataflowEdges df;
      sim::set_stream_edges(replay, slots, transfers, 4, static_cast<std::int64_t>(edges.size()),
                            df, bits);
      EXPECT_EQ(df.stream_queue.empty(), bits == 32);
      EXPECT_EQ(df.stream.list.size(), edges.size());
      EXPECT_EQ(df.stream.counted.empty(), crowded > 0);
      for (std::int64_t x = 0; x < slots; ++x) {
        std::vector<std::pair<TransferId, std::int32_t>> got;
        const auto [first, end] = df.stream.range(x);
        for (std::int64_t i = first; i < end; ++i) got.push_back(sim::stream_edge(df, i));
        EXPECT_EQ(got, expected[static_cast<std::size_t>(x)])
            << "slot " << x << ", bits " << bits << ", crowded " << crowded;
      }
    }
  }
}
