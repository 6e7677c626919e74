// The verifier's set index and set pool (cpp/src/analysis/contribution_sets.hpp).
// Expected ids come from std::map / std::unordered_map fed the same items in
// the same order (ids are handed out 1, 2, ... in order of first appearance),
// and expected set operations from std::set arithmetic on the ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/contribution_sets.hpp"

using wafercoll::RankId;
using wafercoll::verify_detail::Interval;
using wafercoll::verify_detail::SetIndex;
using wafercoll::verify_detail::SetPool;

namespace {

// splitmix64 (Steele, Lea and Flood 2014): well-spread test hashes.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Feeds `items` (with hashes from `hash_of`) to a SetIndex and to an
// unordered_map; every returned id must be the map's.
template <class HashOf>
void check_against_map(const std::vector<int>& items, HashOf hash_of, SetIndex& index) {
  std::unordered_map<int, std::uint32_t> expected;
  std::vector<int> item_of{-1};  // id -> item; id 0 is never handed out
  for (int item : items) {
    const auto fresh = static_cast<std::uint32_t>(item_of.size());
    const std::uint32_t got = index.find_or_insert(
        hash_of(item), fresh, [&](std::uint32_t id) { return item_of.at(id) == item; });
    const auto [it, inserted] = expected.emplace(item, fresh);
    ASSERT_EQ(got, it->second) << "item " << item;
    if (inserted) item_of.push_back(item);
  }
  EXPECT_EQ(index.size(), expected.size());
}

// The index is at most three quarters full: the smallest power of two of
// at least 16 slots with 4 entries <= 3 slots.
std::size_t smallest_capacity(std::size_t entries) {
  std::size_t cap = 16;
  while (3 * cap < 4 * entries) cap *= 2;
  return cap;
}

// A random set of ranks below `p` as a std::set and as intervals.
std::set<RankId> random_set(std::mt19937& rng, RankId p) {
  std::set<RankId> s;
  const int n = std::uniform_int_distribution<int>(1, 6)(rng);
  for (int i = 0; i < n; ++i) {
    const RankId lo = std::uniform_int_distribution<RankId>(0, p - 1)(rng);
    const RankId len = std::uniform_int_distribution<RankId>(1, 4)(rng);
    for (RankId r = lo; r < lo + len && r < p; ++r) s.insert(r);
  }
  return s;
}

std::vector<Interval> intervals(const std::set<RankId>& s) {
  std::vector<Interval> out;
  for (RankId r : s) {
    if (!out.empty() && out.back().hi == r) {
      ++out.back().hi;
    } else {
      out.push_back(Interval{r, r + 1});
    }
  }
  return out;
}

}  // namespace

TEST(SetIndex, DistinctHashesGetFirstSeenIdsAcrossGrowth) {
  std::mt19937 rng(7);
  std::vector<int> items;
  std::uniform_int_distribution<int> item(0, 30000);
  for (int i = 0; i < 60000; ++i) items.push_back(item(rng));
  SetIndex index;
  EXPECT_EQ(index.capacity(), 16u);
  check_against_map(items, [](int x) { return mix(static_cast<std::uint64_t>(x)); }, index);
  EXPECT_EQ(index.capacity(), smallest_capacity(index.size()));
}

TEST(SetIndex, EqualHashesAreToldApartBySame) {
  // Every item has one hash (same home, same fingerprint): only the
  // callback separates them, along one long probe run.
  std::vector<int> items;
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 300; ++i) items.push_back((i * 37 + round) % 300);
  SetIndex index;
  check_against_map(items, [](int) { return 0x0123456789ABCDEFull; }, index);
  EXPECT_EQ(index.size(), 300u);
}

TEST(SetIndex, SharedHomesAndFingerprintsWithDistinctLowBits) {
  // Hashes equal in their top 32 bits (home and fingerprint) and different
  // below; plus a few homes shared by many items, with wrap-around at the
  // last slot (top bits all ones).
  std::vector<int> items;
  for (int i = 0; i < 5000; ++i) items.push_back(i % 2000);
  SetIndex index;
  check_against_map(
      items,
      [](int x) {
        const std::uint64_t top = x % 3 == 0 ? 0xFFFFFFFFull : static_cast<std::uint64_t>(x % 5);
        return (top << 32) | static_cast<std::uint32_t>(x);
      },
      index);
  EXPECT_EQ(index.size(), 2000u);
  EXPECT_EQ(index.capacity(), smallest_capacity(2000));
}

TEST(SetIndex, DoublesWhenAnEntryWouldFillMoreThanThreeQuarters) {
  SetIndex index;
  std::vector<std::uint32_t> caps;
  for (std::uint32_t id = 1; id <= 100; ++id) {
    index.find_or_insert(mix(id), id, [](std::uint32_t) { return false; });
    caps.push_back(static_cast<std::uint32_t>(index.capacity()));
  }
  // 12 of 16 slots, 24 of 32, 48 of 64, 96 of 128
  for (std::uint32_t n = 1; n <= 100; ++n) {
    const std::uint32_t want = n <= 12 ? 16 : n <= 24 ? 32 : n <= 48 ? 64 : n <= 96 ? 128 : 256;
    ASSERT_EQ(caps[n - 1], want) << n;
  }
  // Presized for 1500 entries: 2048 slots (1536 fit), not 4096.
  EXPECT_EQ(SetIndex(1500).capacity(), 2048u);
  EXPECT_EQ(SetIndex(1537).capacity(), 4096u);
}

TEST(SetIndex, PresizedDoesNotGrow) {
  SetIndex index(1000);
  const std::size_t cap = index.capacity();
  EXPECT_EQ(cap, 2048u);
  std::vector<int> items;
  for (int i = 0; i < 1000; ++i) items.push_back(i);
  check_against_map(items, [](int x) { return mix(static_cast<std::uint64_t>(x) + 99); }, index);
  EXPECT_EQ(index.capacity(), cap);
}

// With address space reserved for many entries, the table doubles in place
// (its reservation stays the same), and lookups still find every entry:
// well-spread hashes, one hash for all (a single probe run, longer than its
// home's index), and runs that wrap around the last slot. Beyond the
// reservation it grows by copying, again with every entry found.
TEST(SetIndex, GrowsInPlaceWithinItsReservation) {
  const std::size_t limit = 200000;  // 2^18 slots: 2 MiB, mapped
  std::mt19937 rng(3);
  std::vector<int> spread;
  std::uniform_int_distribution<int> spread_item(0, 90000);
  for (int i = 0; i < 150000; ++i) spread.push_back(spread_item(rng));
  std::vector<int> one_run;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 400; ++i) one_run.push_back((i * 37 + round) % 400);
  std::vector<int> wrapping;
  for (int i = 0; i < 6000; ++i) wrapping.push_back(i % 3000);
  auto spread_hash = [](int x) { return mix(static_cast<std::uint64_t>(x)); };
  auto one_hash = [](int) { return 0x0123456789ABCDEFull; };
  auto wrap_hash = [](int x) {
    const std::uint64_t top = x % 3 == 0 ? 0xFFFFFFFFull : static_cast<std::uint64_t>(x % 5);
    return (top << 32) | static_cast<std::uint32_t>(x);
  };
  {
    SetIndex index(0, limit);
    EXPECT_EQ(index.capacity(), 16u);
    EXPECT_EQ(index.reserved(), smallest_capacity(limit));
    check_against_map(spread, spread_hash, index);
    EXPECT_EQ(index.capacity(), smallest_capacity(index.size()));
    EXPECT_GT(index.capacity(), std::size_t{1} << 16);
    EXPECT_EQ(index.reserved(), smallest_capacity(limit));
  }
  {
    SetIndex index(0, limit);
    check_against_map(one_run, one_hash, index);
    EXPECT_EQ(index.size(), 400u);
    EXPECT_EQ(index.capacity(), smallest_capacity(400));
    EXPECT_EQ(index.reserved(), smallest_capacity(limit));
  }
  {
    SetIndex index(0, limit);
    check_against_map(wrapping, wrap_hash, index);
    EXPECT_EQ(index.size(), 3000u);
    EXPECT_EQ(index.reserved(), smallest_capacity(limit));
  }
  {
    // The run that wraps around the end covers homes of other entries near
    // the first slot, which move when the table doubles.
    auto wrap_over_homes = [](int x) {
      const std::uint64_t top =
          x % 3 == 0 ? 0xFFFFFFFFull : static_cast<std::uint64_t>(x % 5) << 27;
      return (top << 32) | static_cast<std::uint32_t>(x);
    };
    SetIndex index(0, limit);
    check_against_map(wrapping, wrap_over_homes, index);
    EXPECT_EQ(index.size(), 3000u);
  }
  {
    // Hashes crowded into the first 64th of the table, most of them into a
    // few homes: long probe runs that start near the first slot and reach
    // far past their homes' doubled indexes.
    std::vector<int> crowded;
    std::uniform_int_distribution<int> crowded_item(0, 20000);
    for (int i = 0; i < 40000; ++i) crowded.push_back(crowded_item(rng));
    auto crowded_hash = [](int x) {
      const std::uint64_t h = mix(static_cast<std::uint64_t>(x));
      const std::uint64_t top = x % 4 == 0 ? (h >> 58) : (h >> 63);  // 64 homes, or 2
      return (top << 58) | (h & ((std::uint64_t{1} << 58) - 1));
    };
    SetIndex index(0, limit);
    check_against_map(crowded, crowded_hash, index);
    EXPECT_EQ(index.reserved(), smallest_capacity(limit));
  }
  {
    // Reserved for 100,000 entries (2^17 slots, 1 MiB, mapped), then 150,000
    // distinct ones: in place up to 2^17 slots, copied to 2^18.
    SetIndex index(0, 100000);
    std::vector<int> many;
    for (int i = 0; i < 150000; ++i) many.push_back(i);
    check_against_map(many, spread_hash, index);
    EXPECT_EQ(index.capacity(), smallest_capacity(150000));
    EXPECT_EQ(index.reserved(), index.capacity());
  }
}

// The doubling in place when a run wraps around the end over an entry with
// a home of its own: in a table of 16 slots, four entries of home 15 sit at
// slots 15, 0, 2 and 3 around one of home 1 at slot 1, with fillers at
// homes 5 to 12; the 13th entry doubles the table. Entries of home 15 go
// to homes 30 and 31 and would wrap around to slot 0, where slot 1 empties
// when its entry moves to its new home: such an entry must be placed after
// the others, or it is lost.
TEST(SetIndex, InPlaceGrowthKeepsEntriesWhoseProbeWrapsAround) {
  auto top = [](std::uint64_t nibble_and_bit) { return nibble_and_bit << 59; };  // 5 top bits
  std::vector<std::uint64_t> hashes;
  const auto w = [&](int k) { return top(0x1E) | static_cast<std::uint64_t>(k); };
  for (int k = 0; k < 2; ++k) hashes.push_back(w(k));  // W0, W1
  hashes.push_back(top(0x02) | 7);                                                        // home 1
  for (int k = 2; k < 4; ++k) hashes.push_back(w(k));  // W2, W3
  for (std::uint64_t home = 5; home <= 12; ++home) hashes.push_back(top(2 * home) | 9);
  std::vector<int> items;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < static_cast<int>(hashes.size()); ++i) items.push_back(i);
  SetIndex index(0, 200000);
  check_against_map(items, [&](int x) { return hashes.at(static_cast<std::size_t>(x)); }, index);
  EXPECT_EQ(index.capacity(), 32u);
}

// A pool against std::map ids and std::set arithmetic: interning, unions,
// differences and sizes.
static void check_pool_against_std(SetPool& pool) {
  std::mt19937 rng(11);
  const RankId p = 300;
  std::map<std::set<RankId>, std::int32_t> ids{{{}, 0}};
  std::vector<std::set<RankId>> set_of{{}};
  EXPECT_EQ(pool.intern(std::vector<Interval>{}), 0);
  for (int i = 0; i < 40000; ++i) {
    std::set<RankId> s = random_set(rng, p);
    // Every fourth set repeats one seen before.
    if (i % 4 == 3)
      s = set_of[std::uniform_int_distribution<std::size_t>(0, set_of.size() - 1)(rng)];
    const std::int32_t got = pool.intern(intervals(s));
    const auto [it, inserted] = ids.emplace(s, static_cast<std::int32_t>(set_of.size()));
    ASSERT_EQ(got, it->second) << "set " << i;
    if (inserted) set_of.push_back(s);
  }
  EXPECT_EQ(pool.sets(), set_of.size());
  EXPECT_EQ(pool.index_capacity(), smallest_capacity(set_of.size() - 1));
  for (RankId r = 0; r < p; r += 17) {
    const auto it = ids.find(std::set<RankId>{r});
    if (it != ids.end()) EXPECT_EQ(pool.singleton(r), it->second);
  }

  // Unions, differences and sizes against std::set arithmetic.
  for (int i = 0; i < 3000; ++i) {
    const auto pick = [&] {
      return static_cast<std::int32_t>(
          std::uniform_int_distribution<std::size_t>(0, set_of.size() - 1)(rng));
    };
    const std::int32_t a = pick();
    const std::int32_t b = pick();
    const std::set<RankId>& sa = set_of[a];
    const std::set<RankId>& sb = set_of[b];
    EXPECT_EQ(pool.size(a), static_cast<std::int64_t>(sa.size()));
    RankId first_a_not_b = -1;
    for (RankId r : sa)
      if (!sb.count(r)) {
        first_a_not_b = r;
        break;
      }
    EXPECT_EQ(pool.first_difference(a, b), first_a_not_b);
    RankId first_shared = -1;
    for (RankId r : sa)
      if (sb.count(r)) {
        first_shared = r;
        break;
      }
    RankId shared = -1;
    const std::size_t before = pool.sets();
    const std::int32_t u = pool.disjoint_union(a, b, shared);
    if (first_shared >= 0) {
      EXPECT_EQ(u, -1);
      EXPECT_EQ(shared, first_shared);
      EXPECT_EQ(pool.sets(), before);
      continue;
    }
    std::set<RankId> su = sa;
    su.insert(sb.begin(), sb.end());
    const auto [it, inserted] = ids.emplace(su, static_cast<std::int32_t>(set_of.size()));
    EXPECT_EQ(u, it->second);
    if (inserted) set_of.push_back(su);
    EXPECT_EQ(pool.sets(), set_of.size());
  }
}

TEST(SetPool, ManySetsMatchAnOrderedMap) {
  SetPool pool;
  check_pool_against_std(pool);
}

TEST(SetPool, WithRoomReservedForMoreSetsThanItGetsTheSame) {
  // Room for 10^6 sets (address space only), 16 expected: the index still
  // grows as it fills, and every answer is the same.
  SetPool pool(16, 1000000);
  check_pool_against_std(pool);
}

TEST(SetPool, PresizedForTheSetsItHoldsDoesNotGrow) {
  SetPool pool(5000);
  const std::size_t cap = pool.index_capacity();
  for (RankId r = 0; r < 5000; ++r) ASSERT_EQ(pool.singleton(r), r + 1);
  EXPECT_EQ(pool.index_capacity(), cap);
  EXPECT_EQ(pool.sets(), 5001u);
  // Growth past it keeps every id.
  for (RankId r = 0; r < 5000; ++r) ASSERT_EQ(pool.intern({Interval{r, r + 2}}), 5001 + r);
  for (RankId r = 0; r < 5000; ++r) ASSERT_EQ(pool.singleton(r), r + 1);
  EXPECT_GT(pool.index_capacity(), cap);
}
