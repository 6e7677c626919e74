// Internal to the simulator (not part of the public API): its events and the
// queues that order them.
//
// An event is one packet reaching one stage (kArrive) or, with a compute
// cost and several ejection channels, being handed to its destination's
// compute unit (kDeliver). Events are processed strictly in the order of
// before(): time, then a tie key that does not depend on transfer indices
// (the position of the packet's data, then the transfer's canonical rank),
// then the trie node and kind. That order is total, so every queue below
// yields the same sequence and the choice of queue changes only the speed.
//
// Three queues:
//  * HeapQueue: a radix heap of events, on their times' bits.
//  * TimeBucketQueue: events grouped by exact time (a heap of distinct
//    times, one vector per time, sorted when its time comes). Much faster
//    when many events share a time (a machine whose costs are whole clock
//    cycles, links of one speed, streams in lockstep).
//  * EventQueue: one of the two, fixed for the run or chosen automatically
//    by timing both (see EventQueue below and EventQueueKind in
//    simulate.hpp).
//
// The operations the event loop calls per event or per distinct time are
// defined here so that it inlines them; the automatic choice, which runs a
// few times per run, lives in event_queue.cpp.
#pragma once

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "wafercoll/simulate/radix_sort.hpp"
#include "wafercoll/simulate/simulate.hpp"
#include "wafercoll/units.hpp"

// Internal to the library: hidden symbols are resolved within it, so calls
// between the simulator's parts are direct and the compiler may optimise
// across them as it does for functions local to one file.
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::sim {

// The queue operations the event loop calls for every event, forced inline:
// as functions shared between units the compiler would otherwise keep some
// out of line, which costs the loop 10-15 %.
#if defined(__GNUC__)
#define WAFERCOLL_QUEUE_INLINE inline __attribute__((always_inline))
#else
#define WAFERCOLL_QUEUE_INLINE inline
#endif

enum : std::uint32_t { kArrive = 0, kDeliver = 1 };

// Bits of the tie key that hold the canonical transfer rank: transfers are
// fewer than 2^26 (Schedule::kMaxTransfers), data positions take the rest.
constexpr int kCanonBits = 26;
constexpr std::uint64_t kMaxPos = (std::uint64_t{1} << (64 - kCanonBits)) - 1;

// 32 bytes: the queue can hold up to 2^26 of them (kMaxQueued).
struct Event {
  Seconds time;
  std::uint64_t tie_key;  // (position of the packet's data) << 26 | canonical transfer rank
  // Cut-through: when the packet's head reached this stage. The service may
  // start later than the head (at `time`) so that it ends no earlier than the
  // packet's tail arrives; the head still moves on from `head`, so a slow
  // upstream link delays the tail, not the head, of every later stage.
  Seconds head;
  std::uint32_t local_key;  // node within its transfer's trie (or stage of a
                            // computed route, routes.hpp) << 1 | kind
  std::int32_t node;        // global trie node; kComputedNode | transfer for a
                            // computed route; -1 - task for a compute task
};

WAFERCOLL_QUEUE_INLINE bool before(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.tie_key != b.tie_key) return a.tie_key < b.tie_key;
  return a.local_key < b.local_key;
}

// A time's bits. Times are never negative (nor -0.0 or NaN), and the bits
// of non-negative doubles order as the values do; equal times have equal
// bits (they are exact values).
WAFERCOLL_QUEUE_INLINE std::uint64_t time_bits(Seconds t) {
  std::uint64_t b;
  std::memcpy(&b, &t, sizeof b);
  return b;
}

// The order of before() among events of one time.
WAFERCOLL_QUEUE_INLINE bool key_less(const Event& a, const Event& b) {
  return a.tie_key != b.tie_key ? a.tie_key < b.tie_key : a.local_key < b.local_key;
}

// key_less and its reverse as function objects for the standard algorithms
// (LaterKey makes their max-heap a heap of the earliest key): passed as
// functions they were called through a pointer, out of line (3 % of the
// wafer's 2D runs in key_less alone).
struct KeyLess {
  bool operator()(const Event& a, const Event& b) const { return key_less(a, b); }
};
struct LaterKey {
  bool operator()(const Event& a, const Event& b) const { return key_less(b, a); }
};

// A radix heap of events (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster
// algorithms for the shortest path problem", J. ACM 37(2), 1990), on the bits
// of the events' times: a simulation never queues an event earlier than the
// one it is processing, and the bits of non-negative doubles order as the
// values do. Bucket b > 0 holds the events whose time's bits first differ
// from those of the latest time taken (`last_`) at bit b - 1; the events of
// that time itself wait in `now_`, a binary heap by tie and local key (one
// or two events, unless many share a time). A push is a count of leading
// zeros and an append, with no comparison; when `now_` runs dry, the lowest
// non-empty bucket's earliest time becomes `last_` and its events move to
// lower buckets (each event moves at most 64 times, in practice a few).
// It replaced a binary heap of events, whose sift-downs (some 11 levels at
// 1,700 events) drew a third of a dataflow run's samples, mostly on
// mispredicted comparisons. DBTree on 9x9 chiplets, 256 MiB, 15.5 M events,
// medians of 5 alternated processes: 2.59 -> 2.29 s under Table II, 1.67 ->
// 1.26 s under the artifact preset; recursive doubling on 262,144 ranks with
// the heap forced 8.5 -> 4.3 s.
class HeapQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  WAFERCOLL_QUEUE_INLINE const Event& top() {
    if (now_.empty()) refill();
    return now_.front();
  }
  WAFERCOLL_QUEUE_INLINE void push(const Event& e) {
    const std::uint64_t k = time_bits(e.time);
    assert(k >= last_ && "an event earlier than the one taken");
    ++size_;
    if (k == last_) {
      now_.push_back(e);
      std::push_heap(now_.begin(), now_.end(), LaterKey{});
    } else {
      file(e, k);
    }
  }
  WAFERCOLL_QUEUE_INLINE void pop() {
    if (now_.empty()) refill();
    std::pop_heap(now_.begin(), now_.end(), LaterKey{});
    now_.pop_back();
    --size_;
  }
  WAFERCOLL_QUEUE_INLINE void replace_top(const Event& e) {
    pop();
    push(e);
  }
  // Gives the storage back (the queue must be empty).
  void release() { *this = HeapQueue(); }

 private:
  // Files event e, of time bits k != last_, in its bucket.
  WAFERCOLL_QUEUE_INLINE void file(const Event& e, std::uint64_t k) {
    const int b = 64 - __builtin_clzll(k ^ last_);
    buckets_[b].push_back(e);
    nonempty_ |= std::uint64_t{1} << (b - 1);
  }
  // With now_ empty and events queued: the earliest time of the lowest
  // non-empty bucket becomes last_, its events go to now_, the bucket's
  // other events to lower buckets (they share last_'s bits down to a lower
  // one).
  void refill() {
    const int from = __builtin_ctzll(nonempty_) + 1;
    std::vector<Event>& bucket = buckets_[from];
    std::uint64_t m = ~std::uint64_t{0};
    for (const Event& e : bucket) m = std::min(m, time_bits(e.time));
    last_ = m;
    nonempty_ &= ~(std::uint64_t{1} << (from - 1));
    for (const Event& e : bucket) {
      const std::uint64_t k = time_bits(e.time);
      if (k == m)
        now_.push_back(e);
      else
        file(e, k);
    }
    bucket.clear();
    if (now_.size() > 1) std::make_heap(now_.begin(), now_.end(), LaterKey{});
  }

  std::vector<Event> now_;          // the events of time last_, a heap
  std::vector<Event> buckets_[65];  // bucket 0 unused (now_)
  std::uint64_t last_ = 0;          // bits of the latest time taken
  std::uint64_t nonempty_ = 0;      // bit b - 1: bucket b holds events
  std::size_t size_ = 0;
};

// Hash of a time by its bits (std::hash<double> goes through a byte-wise
// hash; times here are exact values, so equal times have equal bits, and
// -0.0 never occurs).
struct TimeHash {
  std::size_t operator()(Seconds t) const {
    return static_cast<std::size_t>((time_bits(t) * 0x9E3779B97F4A7C15ull) >> 32);
  }
};

// The bucket of each pending time: open addressing with linear probing on
// the time's bits, at most half full, deletion by shifting the entries
// behind back (no tombstones). A std::unordered_map allocated a node per
// time and walked a chain of them on each lookup: on the MCM artifact's
// DBTree (9x9, 256 MiB, about 80 events per time, pushes spread over more
// times than the small cache below holds) its lookups were most of the run.
class TimeIndex {
 public:
  // The bucket of time t, inserted as `value` if t is not there yet;
  // `fresh` says whether it was inserted.
  WAFERCOLL_QUEUE_INLINE std::uint32_t find_or_insert(Seconds t, std::uint32_t value,
                                                      bool& fresh) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    const std::uint64_t k = time_bits(t);
    for (std::size_t i = home(k);; i = (i + 1) & mask_) {
      if (keys_[i] == k) {
        fresh = false;
        return values_[i];
      }
      if (keys_[i] == kEmpty) {
        keys_[i] = k;
        values_[i] = value;
        ++size_;
        fresh = true;
        return value;
      }
    }
  }
  // Removes time t (which must be there) and returns its bucket.
  std::uint32_t take(Seconds t) {
    const std::uint64_t k = time_bits(t);
    std::size_t i = home(k);
    while (keys_[i] != k) i = (i + 1) & mask_;
    const std::uint32_t value = values_[i];
    // Entries behind i in its probe run move back if i lies on their way home.
    for (std::size_t j = (i + 1) & mask_; keys_[j] != kEmpty; j = (j + 1) & mask_) {
      const std::size_t h = home(keys_[j]);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        keys_[i] = keys_[j];
        values_[i] = values_[j];
        i = j;
      }
    }
    keys_[i] = kEmpty;
    --size_;
    return value;
  }

 private:
  // Times are never NaN, so an all-ones pattern marks an empty slot.
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::size_t home(std::uint64_t k) const {
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<std::uint64_t> keys(std::max<std::size_t>(64, 2 * keys_.size()), kEmpty);
    std::vector<std::uint32_t> values(keys.size());
    keys.swap(keys_);
    values.swap(values_);
    mask_ = keys_.size() - 1;
    shift_ = 64;
    for (std::size_t c = keys_.size(); c > 1; c >>= 1) --shift_;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == kEmpty) continue;
      std::size_t j = home(keys[i]);
      while (keys_[j] != kEmpty) j = (j + 1) & mask_;
      keys_[j] = keys[i];
      values_[j] = values[i];
    }
  }

  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> values_;
  std::size_t size_ = 0, mask_ = 0;
  int shift_ = 64;
};

// Events grouped by their exact time: a min-heap of the distinct pending
// times, one vector of events per time, sorted by the tie key when its time
// comes. Same order as HeapQueue, but when many events share a time (a
// machine whose costs are whole cycles, with many streams in lockstep) the
// heap holds a few times instead of every packet in flight.
//
// Invariant: current_[drain_pos_..] holds the events of the time being
// drained (now_), sorted; late arrivals at that same time that do not sort
// first go to the small heap extra_. Every later time has a bucket.
class TimeBucketQueue {
 public:
  bool empty() const {
    return drain_pos_ >= current_.size() && extra_.empty() && times_.empty();
  }
  std::size_t size() const { return (current_.size() - drain_pos_) + extra_.size() + pending_; }
  WAFERCOLL_QUEUE_INLINE const Event& top() {
    ensure_current();
    return from_extra() ? extra_.front() : current_[drain_pos_];
  }
  WAFERCOLL_QUEUE_INLINE void pop() {
    ensure_current();
    if (from_extra()) {
      std::pop_heap(extra_.begin(), extra_.end(), LaterKey{});
      extra_.pop_back();
    } else {
      ++drain_pos_;
    }
  }
  WAFERCOLL_QUEUE_INLINE void replace_top(const Event& e) {
    pop();
    push(e);
  }
  // The event d places behind the top among those of the time being
  // drained, if there is one: a hint of what comes soon (an event pushed
  // meanwhile may go before it), for prefetching.
  const Event* ahead(std::size_t d) const {
    const std::size_t i = drain_pos_ + d;
    return i < current_.size() ? &current_[i] : nullptr;
  }
  // How many pushes opened a time of their own (not already queued).
  std::int64_t fresh_times() const { return fresh_times_; }
  // Gives the storage back, the buckets' included (the queue must be empty).
  void release() { *this = TimeBucketQueue(); }
  WAFERCOLL_QUEUE_INLINE void push(const Event& e) {
    if (draining_ && e.time <= now_) {  // the time being drained (never earlier)
      // Usually the follow-up of the event just taken (same packet, next
      // stage) and so the new minimum: it goes back into the slot that event
      // left, keeping current_ sorted from drain_pos_.
      if (drain_pos_ > 0 &&
          (drain_pos_ == current_.size() || key_less(e, current_[drain_pos_]))) {
        current_[--drain_pos_] = e;
        return;
      }
      extra_.push_back(e);
      std::push_heap(extra_.begin(), extra_.end(), LaterKey{});
      return;
    }
    // Most pushes go to one of a few times (the next hop, the next ramp): a
    // small direct-mapped cache of time -> bucket spares the hash lookup.
    const std::size_t slot = TimeHash{}(e.time) & (kCache - 1);
    if (cache_time_[slot] == e.time && cache_bucket_[slot] != kNone) {
      buckets_[cache_bucket_[slot]].push_back(e);
      ++pending_;
      return;
    }
    push_uncached(e, slot);
  }

 private:
  static constexpr std::size_t kCache = 16;
  static constexpr std::uint32_t kNone = 0xffffffffu;
  WAFERCOLL_QUEUE_INLINE bool from_extra() const {
    return !extra_.empty() &&
           (drain_pos_ >= current_.size() || key_less(extra_.front(), current_[drain_pos_]));
  }
  WAFERCOLL_QUEUE_INLINE void ensure_current() {
    if (drain_pos_ < current_.size() || !extra_.empty()) return;
    open_next_time();
  }
  // Out of the class body but inline: both run once per distinct time,
  // often enough (a NoC with a time per event) that a call through the
  // library's symbol table would show.
  void push_uncached(const Event& e, std::size_t slot);
  void open_next_time();
  void sort_current();
  bool radix_sort_current(std::vector<Event>& merged);
  // From this many events a bucket of short runs is radix sorted.
  static constexpr std::size_t kRadixFrom = 1024;

  std::vector<Seconds> times_;  // min-heap of the distinct pending times
  TimeIndex index_;             // time -> bucket
  std::vector<std::vector<Event>> buckets_;
  std::vector<std::uint32_t> free_buckets_;  // emptied, storage kept for reuse
  std::vector<Event> current_, extra_;
  std::vector<Event> merged_;            // sort_current's second buffer, when
                                         // no bucket is free
  std::vector<std::size_t> run_starts_;  // and its runs
  std::vector<std::int64_t> radix_count_;  // radix_sort_current's digit counts
  Seconds cache_time_[kCache] = {};
  std::uint32_t cache_bucket_[kCache] = {kNone, kNone, kNone, kNone, kNone, kNone,
                                         kNone, kNone, kNone, kNone, kNone, kNone,
                                         kNone, kNone, kNone, kNone};
  std::size_t drain_pos_ = 0, pending_ = 0;  // pending_: events in buckets_
  std::int64_t fresh_times_ = 0;
  Seconds now_ = 0.0;
  bool draining_ = false;
};

// The simulator's event queue: one of the two above (same order, different
// speed). Fixed per run, or adaptive (EventQueueKind::automatic): after a
// warm-up, time kTrial pushes with the current queue, then kTrial with the
// other, and keep the faster (the heap only when clearly faster). What is
// queued changes as a run goes on (a tree's first hops, then every stream in
// flight at once), so the trial is repeated after 4x as many pushes as the
// previous one: a few trials in all, whose cost (two trial windows and at
// most two moves of the queue) stays a small share of the run. A trial is
// skipped while more events are queued than a trial window pushes (moving
// them would cost more than the trial; a wafer's bucketed wavefront holds
// millions), and while the time buckets are in use and 7 in 8 pushes since
// the last check joined a time already queued (then grouping is what pays).
// Short of that extreme, how many events share a time does not tell the two
// apart (the cost of either depends on what is queued), so this measures.
class EventQueue {
 public:
  // automatic starts with the time buckets and measures. A clock says
  // nothing about whether times coincide (a clocked NoC with 327.68 ns
  // packets has a time per event; the wafer's whole cycles share them).
  explicit EventQueue(EventQueueKind kind)
      : buckets_(kind != EventQueueKind::heap), adaptive_(kind == EventQueueKind::automatic) {}
  bool empty() const { return buckets_ ? bucket_queue_.empty() : heap_.empty(); }
  std::size_t size() const { return buckets_ ? bucket_queue_.size() : heap_.size(); }
  WAFERCOLL_QUEUE_INLINE const Event& top() { return buckets_ ? bucket_queue_.top() : heap_.top(); }
  WAFERCOLL_QUEUE_INLINE void push(const Event& e) {
    buckets_ ? bucket_queue_.push(e) : heap_.push(e);
    if (adaptive_ && ++pushes_ == next_check_) adapt();
  }
  WAFERCOLL_QUEUE_INLINE void pop() { buckets_ ? bucket_queue_.pop() : heap_.pop(); }
  WAFERCOLL_QUEUE_INLINE void replace_top(const Event& e) {
    buckets_ ? bucket_queue_.replace_top(e) : heap_.replace_top(e);
    if (adaptive_ && ++pushes_ == next_check_) adapt();
  }
  // A hint of the event d places behind the top (TimeBucketQueue::ahead),
  // or none (the heap keeps no such order).
  const Event* ahead(std::size_t d) const { return buckets_ ? bucket_queue_.ahead(d) : nullptr; }
  // Which queue is in use now (for tests).
  bool uses_buckets() const { return buckets_; }
  // Once the run is over: the queues' storage (a bucket per distinct time
  // pending at once, each keeping its largest size) goes back before the
  // result's arrays are made.
  void release() {
    heap_.release();
    bucket_queue_.release();
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::int64_t kWarm = std::int64_t{1} << 16;
  static constexpr std::int64_t kTrial = std::int64_t{1} << 16;
  static constexpr std::int64_t kGrowth = 4;    // pushes between trials grow 4x
  static constexpr double kHeapMargin = 1.15;   // the heap must be this much faster

  // The automatic choice, one step per check (event_queue.cpp).
  void adapt();
  void to_heap();
  void to_buckets();

  bool buckets_;
  bool adaptive_;
  int trial_step_ = 0;  // 0: deciding whether to try; 1: timing the other; 2: compare
  std::int64_t pushes_ = 0, next_check_ = kWarm;
  Clock::time_point mark_;
  double bucket_s_ = 0.0, heap_s_ = 0.0;
  std::int64_t fresh_mark_ = 0, push_mark_ = 0;  // at the previous check
  HeapQueue heap_;
  TimeBucketQueue bucket_queue_;
};

// A push to a time that missed the small time -> bucket cache: find or open
// its bucket, and remember it in the cache slot.
inline void TimeBucketQueue::push_uncached(const Event& e, std::size_t slot) {
  // The bucket a new time gets: a free one, else a new one.
  const std::uint32_t spare =
      free_buckets_.empty() ? static_cast<std::uint32_t>(buckets_.size()) : free_buckets_.back();
  bool fresh = false;
  const std::uint32_t b = index_.find_or_insert(e.time, spare, fresh);
  if (fresh) {
    ++fresh_times_;
    if (free_buckets_.empty())
      buckets_.emplace_back();
    else
      free_buckets_.pop_back();
    times_.push_back(e.time);
    std::push_heap(times_.begin(), times_.end(), std::greater<Seconds>());
  }
  buckets_[b].push_back(e);
  cache_time_[slot] = e.time;
  cache_bucket_[slot] = b;
  ++pending_;
}

// The current time is drained: take the earliest pending time's bucket as
// the new current_ (swapping storage, so buckets keep their capacity) and
// sort it by the tie key. Buckets filled in key order, the common case when
// streams advance in lockstep, skip the sort.
inline void TimeBucketQueue::open_next_time() {
  std::pop_heap(times_.begin(), times_.end(), std::greater<Seconds>());
  now_ = times_.back();
  times_.pop_back();
  const std::uint32_t b = index_.take(now_);
  const std::size_t slot = TimeHash{}(now_) & (kCache - 1);
  if (cache_time_[slot] == now_) cache_bucket_[slot] = kNone;  // the bucket is reused
  current_.swap(buckets_[b]);
  buckets_[b].clear();
  free_buckets_.push_back(b);
  pending_ -= current_.size();
  drain_pos_ = 0;
  draining_ = true;
  sort_current();
}

// Sorts current_ by the tie key. A bucket is usually a few sorted runs (the
// follow-ups of the events of one or two earlier times, pushed in their
// order), so runs are merged pairwise, in log2(runs) passes over the bucket,
// instead of a comparison sort's log2(size) levels (whose median-of-three
// pivots degrade to heapsort on such input). Equal keys never occur (a
// packet is at a node at most once at a time), so the order is the sort's.
inline void TimeBucketQueue::sort_current() {
  const std::size_t n = current_.size();
  run_starts_.clear();
  run_starts_.push_back(0);
  for (std::size_t i = 1; i < n; ++i)
    if (key_less(current_[i], current_[i - 1])) run_starts_.push_back(i);
  if (run_starts_.size() == 1) return;  // sorted already
  // The second buffer is a free bucket's storage when there is one (it kept
  // the size of an earlier time's events, usually as many): a buffer of its
  // own would hold a third copy of the events in flight beside current_ and
  // the bucket being filled (recursive doubling on 262,144 ranks: 8 MB).
  std::vector<Event>& merged = free_buckets_.empty() ? merged_ : buckets_[free_buckets_.back()];
  if (run_starts_.size() > n / 8) {  // short runs: merging would not pay
    // Radix sorted only through storage already held (a second buffer grown
    // for it would raise the peak: TTO 16 x 16 by 22 MB).
    if (n < kRadixFrom || merged.capacity() < n || !radix_sort_current(merged))
      std::sort(current_.begin(), current_.end(), KeyLess{});
    return;
  }
  run_starts_.push_back(n);
  merged.resize(n);
  while (run_starts_.size() > 2) {
    std::size_t kept = 0;
    std::size_t k = 0;
    for (; k + 2 < run_starts_.size(); k += 2) {
      std::merge(current_.begin() + run_starts_[k], current_.begin() + run_starts_[k + 1],
                 current_.begin() + run_starts_[k + 1], current_.begin() + run_starts_[k + 2],
                 merged.begin() + run_starts_[k], KeyLess{});
      run_starts_[kept++] = run_starts_[k];
    }
    if (k + 1 < run_starts_.size()) {  // an odd run out: copied as it is
      std::copy(current_.begin() + run_starts_[k], current_.begin() + run_starts_[k + 1],
                merged.begin() + run_starts_[k]);
      run_starts_[kept++] = run_starts_[k];
    }
    run_starts_[kept++] = n;
    run_starts_.resize(kept);
    current_.swap(merged);
  }
  merged.clear();  // a free bucket must be empty
}

// Sorts current_ (n >= 2 events, unequal keys) by LSD radix passes over the
// bits of the tie key and local key that vary among its events, packed into
// one 64-bit key (the tie key's bits above the local key's; the bits above
// a field's highest varying bit are equal throughout, and the constant bits
// below the lowest varying bit are skipped), through `merged`, which ends
// empty. A stable sort, and keys are never equal, so the order is
// std::sort's. Returns false, having done nothing, when the varying bits
// span more than 64. Recursive doubling on cluster(262144, 1) fills each
// time with hundreds of thousands of events in short runs (about 23 bits
// of canonical rank vary): std::sort took about a tenth of its simulation.
inline bool TimeBucketQueue::radix_sort_current(std::vector<Event>& merged) {
  const std::size_t n = current_.size();
  const Event& e0 = current_[0];
  std::uint64_t vary_tie = 0;
  std::uint32_t vary_local = 0;
  for (const Event& e : current_) {
    vary_tie |= e.tie_key ^ e0.tie_key;
    vary_local |= e.local_key ^ e0.local_key;
  }
  const int tie_bits = bit_width(vary_tie), local_bits = bit_width(vary_local);
  if (tie_bits + local_bits > 64) return false;
  const std::uint64_t tie_mask = tie_bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << tie_bits) - 1;
  const std::uint32_t local_mask = (std::uint32_t{1} << local_bits) - 1;  // local_bits < 32
  auto key = [tie_mask, local_mask, local_bits](const Event& e) {
    return ((e.tie_key & tie_mask) << local_bits) | (e.local_key & local_mask);
  };
  const std::uint64_t vary = (vary_tie << local_bits) | vary_local;
  constexpr int kMaxDigit = 11;  // 2048 counts: within the L1 cache
  merged.resize(n);
  const Event* sorted =
      lsd_radix_sort(current_.data(), merged.data(), static_cast<std::int64_t>(n),
                     lowest_bit(vary), bit_width(vary), kMaxDigit, key, radix_count_);
  if (sorted != current_.data()) current_.swap(merged);
  merged.clear();  // a free bucket must be empty
  return true;
}

}  // namespace wafercoll::sim

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
