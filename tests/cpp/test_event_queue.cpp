// Event queue tests: every queue kind yields events in the order of
// before(), whatever the order of pushes, so that the choice of queue (and
// the automatic switching between them) cannot change a simulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "wafercoll/simulate/event_queue.hpp"

using namespace wafercoll;
using namespace wafercoll::sim;

namespace {

// Events with few distinct times (as on a clocked machine) and distinct tie
// keys, so the expected order is a plain sort by before().
std::vector<Event> random_events(std::size_t n, int distinct_times, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> time(0, distinct_times - 1);
  std::vector<Event> events;
  for (std::size_t i = 0; i < n; ++i)
    events.push_back(Event{static_cast<Seconds>(time(rng)) * 0.5, rng(), 0.0,
                           static_cast<std::uint32_t>(i), static_cast<std::int32_t>(i)});
  return events;
}

std::vector<Event> drain(EventQueue& q) {
  std::vector<Event> out;
  while (!q.empty()) {
    out.push_back(q.top());
    q.pop();
  }
  return out;
}

void expect_same_order(const std::vector<Event>& got, const std::vector<Event>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].time, want[i].time) << i;
    EXPECT_EQ(got[i].tie_key, want[i].tie_key) << i;
    EXPECT_EQ(got[i].local_key, want[i].local_key) << i;
  }
}

class EventQueueKinds : public ::testing::TestWithParam<EventQueueKind> {};

TEST_P(EventQueueKinds, PopsInTimeThenKeyOrder) {
  for (int distinct : {1, 7, 1000}) {
    std::vector<Event> events = random_events(5000, distinct, 42u + distinct);
    EventQueue q(GetParam());
    for (const Event& e : events) q.push(e);
    EXPECT_EQ(q.size(), events.size());
    std::vector<Event> want = events;
    std::sort(want.begin(), want.end(), before);
    expect_same_order(drain(q), want);
  }
}

// The simulator's pattern: take the top, schedule a follow-up no earlier
// than it through replace_top; the sequence taken must be sorted.
TEST_P(EventQueueKinds, ReplaceTopKeepsOrder) {
  std::mt19937 rng(7);
  EventQueue q(GetParam());
  for (const Event& e : random_events(200, 20, 3)) q.push(e);
  std::vector<Event> taken;
  // Enough follow-ups to pass the automatic queue's warm-up and a trial.
  for (int i = 0; i < 300000 && !q.empty(); ++i) {
    const Event e = q.top();
    taken.push_back(e);
    if (i < 250000) {
      Event next = e;
      // Never before the event taken: a later time, or the same time with
      // a larger key (the follow-up that goes back into the drained slot).
      next.time += static_cast<Seconds>(rng() % 4) * 0.25;
      next.tie_key = next.time > e.time ? rng() : e.tie_key + 1 + rng() % 1000;
      q.replace_top(next);
    } else {
      q.pop();
    }
  }
  for (std::size_t i = 1; i < taken.size(); ++i)
    ASSERT_FALSE(before(taken[i], taken[i - 1])) << i;
}

// A simulation's pattern over times of every magnitude: each event taken
// schedules zero to two follow-ups after delays from 0 (the same time) to
// 1e3, through replace_top and push, and the sequence taken is exactly the
// one a sorted reference container gives (the radix heap files events by the
// highest bit in which their time differs from the latest one taken: times
// far apart, close together, equal, and 0 itself).
TEST_P(EventQueueKinds, FollowUpsOfEveryMagnitudeLeaveInOrder) {
  std::mt19937_64 rng(13);
  auto later = [](const Event& a, const Event& b) { return before(b, a); };
  std::vector<Event> reference;  // a heap by before()
  EventQueue q(GetParam());
  auto add = [&](const Event& e, bool replace) {
    replace ? q.replace_top(e) : q.push(e);
    reference.push_back(e);
    std::push_heap(reference.begin(), reference.end(), later);
  };
  std::uint32_t local = 0;
  auto event = [&](Seconds t) { return Event{t, rng() >> 1, 0.0, local++, 0}; };
  for (int i = 0; i < 50; ++i) add(event(i % 5 == 0 ? 0.0 : 1e-9 * (rng() % 1000)), false);
  const double delays[] = {0.0, 1e-12, 3e-9, 2.5e-7, 1e-3, 0.5, 7.0, 1e3};
  for (int step = 0; step < 200000 && !reference.empty(); ++step) {
    const Event e = q.top();
    std::pop_heap(reference.begin(), reference.end(), later);
    const Event want = reference.back();
    reference.pop_back();
    ASSERT_EQ(e.time, want.time) << step;
    ASSERT_EQ(e.tie_key, want.tie_key) << step;
    ASSERT_EQ(e.local_key, want.local_key) << step;
    const int follow = step < 150000 ? static_cast<int>(rng() % 3) : 0;
    if (follow == 0) q.pop();
    for (int f = 0; f < follow; ++f) {
      const double d = delays[rng() % 8] * (1.0 + static_cast<double>(rng() % 1000) / 1000.0);
      add(event(e.time + d), f == 0);
    }
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), reference.size());
}

// A time's events pushed as a few ascending runs (the follow-ups of one or
// two earlier times, as on a wafer): the bucket is merged run by run, for
// every count of runs, odd ones included, and runs of unequal lengths.
TEST_P(EventQueueKinds, FewSortedRunsPerTime) {
  std::mt19937 rng(11);
  for (int runs : {1, 2, 3, 5, 8, 13}) {
    std::vector<Event> events;
    for (int t = 0; t < 4; ++t) {
      for (int r = 0; r < runs; ++r) {
        const int len = 50 + static_cast<int>(rng() % 400);
        std::vector<std::uint64_t> keys(static_cast<std::size_t>(len));
        for (auto& k : keys) k = rng();
        std::sort(keys.begin(), keys.end());
        for (std::uint64_t k : keys)
          events.push_back(Event{0.25 * t, k, 0.0, static_cast<std::uint32_t>(r), 0});
      }
    }
    EventQueue q(GetParam());
    for (const Event& e : events) q.push(e);
    std::vector<Event> want = events;
    std::sort(want.begin(), want.end(), before);
    expect_same_order(drain(q), want);
  }
}

// A time of many events in short runs is radix sorted on the bits of the
// tie and local keys that vary in it: tie keys equal in their high bits, or
// in their low bits (constant bits below the varying ones), ties on the tie
// key broken by the local key, exactly 64 varying bits, and more than 64
// (sorted by comparison instead); each as the order of before(). An
// earlier time of as many events leaves the storage the radix sort goes
// through (without it the bucket is sorted by comparison).
TEST_P(EventQueueKinds, ManyEventsOfOneTimeInShortRuns) {
  std::mt19937_64 rng(5);
  struct Shape {
    int tie_bits, tie_shift, local_bits;
  };
  for (const Shape& shape : {Shape{20, 0, 0}, Shape{12, 0, 5}, Shape{18, 30, 3},
                             Shape{60, 0, 4}, Shape{64, 0, 6}, Shape{3, 61, 9}}) {
    std::vector<Event> events;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keys;
    while (keys.size() < 3000) {
      const std::uint64_t tie =
          (shape.tie_bits == 64 ? rng() : rng() % (std::uint64_t{1} << shape.tie_bits))
          << shape.tie_shift;
      const auto local = static_cast<std::uint32_t>(rng() % (std::uint64_t{1} << shape.local_bits));
      keys.emplace_back(tie, local);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());  // keys are never equal
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const auto& [tie, local] : keys) {
      events.push_back(Event{1.5, tie, 0.0, local, 0});
      events.push_back(Event{1.0, tie, 0.0, local, 0});
    }
    EventQueue q(GetParam());
    for (const Event& e : events) q.push(e);
    std::vector<Event> want = events;
    std::sort(want.begin(), want.end(), before);
    expect_same_order(drain(q), want);
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, EventQueueKinds,
                         ::testing::Values(EventQueueKind::heap, EventQueueKind::buckets,
                                           EventQueueKind::automatic));

TEST(EventQueue, FixedKindsDoNotSwitch) {
  EventQueue heap(EventQueueKind::heap), buckets(EventQueueKind::buckets);
  for (const Event& e : random_events(200000, 50000, 1)) {
    heap.push(e);
    buckets.push(e);
  }
  EXPECT_FALSE(heap.uses_buckets());
  EXPECT_TRUE(buckets.uses_buckets());
}

TEST(EventQueue, AutomaticStartsWithBuckets) {
  EventQueue q(EventQueueKind::automatic);
  EXPECT_TRUE(q.uses_buckets());
}

}  // namespace

TEST(EventQueue, TimeIndexAgreesWithAMap) {
  // Random inserts and removals over few and many pending times (the table
  // grows, probe runs wrap and removals shift entries back): every lookup
  // agrees with std::map.
  std::mt19937 rng(7);
  for (int span : {5, 300, 20000}) {
    TimeIndex index;
    std::map<Seconds, std::uint32_t> want;
    std::uniform_int_distribution<int> time(0, span);
    for (std::uint32_t step = 0; step < 60000; ++step) {
      const Seconds t = static_cast<Seconds>(time(rng)) * 0.25;
      if (rng() % 3 != 0 || want.empty()) {
        bool fresh = false;
        const std::uint32_t got = index.find_or_insert(t, step, fresh);
        const auto [it, inserted] = want.try_emplace(t, step);
        EXPECT_EQ(fresh, inserted) << span << " " << step;
        EXPECT_EQ(got, it->second) << span << " " << step;
      } else {  // remove the earliest pending time, as the queue does
        const auto it = want.begin();
        EXPECT_EQ(index.take(it->first), it->second) << span << " " << step;
        want.erase(it);
      }
    }
    for (const auto& [t, v] : want) EXPECT_EQ(index.take(t), v) << span;
  }
}

TEST(TimeBuckets, AheadShowsTheEventsOfTheCurrentTimeInOrder) {
  // ahead(d), the simulator's prefetch hint: with nothing pushed meanwhile,
  // the event d places behind the top is the one popped d pops later, while
  // it has the top's time; none beyond that time, and none from the heap.
  std::vector<Event> events = random_events(600, 3, 7u);
  std::vector<Event> want = events;
  std::sort(want.begin(), want.end(), before);
  EventQueue q(EventQueueKind::buckets);
  for (const Event& e : events) q.push(e);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(q.top().tie_key, want[i].tie_key);
    for (std::size_t d : {1, 4, 8}) {
      const Event* a = q.ahead(d);
      const bool same_time = i + d < want.size() && want[i + d].time == want[i].time;
      ASSERT_EQ(a != nullptr, same_time) << i << " " << d;
      if (a != nullptr) EXPECT_EQ(a->tie_key, want[i + d].tie_key);
    }
    q.pop();
  }
  EventQueue heap(EventQueueKind::heap);
  for (const Event& e : events) heap.push(e);
  EXPECT_EQ(heap.ahead(1), nullptr);
}
