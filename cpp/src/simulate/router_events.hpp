// Internal to the router engine (routers.cpp): its events and the queue
// that orders them.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "wafercoll/units.hpp"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::router_events {

enum Kind : std::uint8_t { kInject, kArrive, kDeliver, kRelease, kFeed, kAggregated };

struct Ev {
  double time, head;
  std::uint64_t seq;
  std::int64_t k;
  std::int32_t t, x;  // x: route position (arrive), link (deliver), interface
  Kind kind;
};

// The pending events, earliest first and, at one time, in the order they were
// created (their seq). (time, seq) is a total order, so the events leave in
// the same order from any structure that keeps it.
//
// Most events come in sorted runs. A link serves its packets in turn, and
// each one's next event (its arrival at the next router or its delivery) is
// no earlier than the previous packet's end plus the link's latency, which
// is no earlier than the previous packet's event; an interface's channel
// feeds its packets one after another. Such an event joins its lane (a link
// or an interface), a queue in push order, if it is not earlier than the
// lane's last event (the check keeps the order exact in any case); only each
// lane's first event sits in a binary heap of (time, seq, slot) entries,
// beside the events that join no lane. Taking a lane's first event puts its
// next one in its place (one sift-down), and the heap holds a few hundred
// entries where it would hold every packet on every link (up to 15,404 for
// the MCM artifact's MultiTree behind its driver, 8x8 chiplets, 256 MiB).
// The rest of each event sits in a pool of slots.
class EventHeap {
 public:
  explicit EventHeap(std::int64_t lanes = 0) : lanes_(static_cast<std::size_t>(lanes)) {}

  bool empty() const { return heap_.empty(); }

  // Adds e, in lane `lane` (or none: -1) if it is not earlier than the
  // lane's last event.
  void push(const Ev& e, std::int64_t lane) {
    std::uint64_t slot;
    if (free_.empty()) {
      slot = pool_.size();
      if (slot > kMaxSlot) throw std::length_error("too many pending events");
      pool_.emplace_back();
    } else {
      slot = static_cast<std::uint64_t>(free_.back());
      free_.pop_back();
    }
    Slot& at = pool_[slot];  // written field by field: no temporary to copy
    at.head = e.head;
    at.k = e.k;
    at.t = e.t;
    at.x = e.x;
    at.next = at.lane = -1;
    at.kind = e.kind;
    // A time's bits order as the time does: times are >= 0 (+ 0.0 turns -0.0
    // into 0.0), so the key compares as one 128-bit integer, without branches.
    const double t = e.time + 0.0;
    std::uint64_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    if (lane >= 0) {
      Lane& q = lanes_[static_cast<std::size_t>(lane)];
      if (q.first >= 0 && bits >= q.last_bits) {  // behind the lane's last event
        Slot& prev = pool_[static_cast<std::size_t>(q.last)];
        prev.next = static_cast<std::int32_t>(slot);
        prev.next_key = Entry{bits, e.seq, slot};
        at.lane = static_cast<std::int32_t>(lane);
        q.last = static_cast<std::int32_t>(slot);
        q.last_bits = bits;
        return;
      }
      if (q.first < 0) {  // the lane's first event: in the heap
        q.first = q.last = static_cast<std::int32_t>(slot);
        q.last_bits = bits;
        at.lane = static_cast<std::int32_t>(lane);
      }
    }
    heap_.push_back(Entry{bits, e.seq, slot});
    sift_up(heap_.size() - 1);
  }

  // Removes the earliest event and returns it.
  Ev pop() {
    const Entry top = heap_[0];
    const Slot& s = pool_[top.slot];
    double time;
    std::memcpy(&time, &top.time, sizeof time);
    const Ev e{time, s.head, top.seq, s.k, s.t, s.x, s.kind};
    free_.push_back(static_cast<std::int64_t>(top.slot));
    if (s.lane >= 0) {
      Lane& q = lanes_[static_cast<std::size_t>(s.lane)];
      q.first = s.next;
      if (q.first >= 0) {  // its lane's next event takes its place
        // (its key is kept here, so its slot is read only when it leaves;
        // fetched now, it is in the cache by then)
        sift_down(s.next_key);
        __builtin_prefetch(&pool_[static_cast<std::size_t>(q.first)]);
        return e;
      }
      q.last = -1;
    }
    const Entry last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
    return e;
  }

 private:
  struct Entry {
    std::uint64_t time, seq, slot;
  };
  // An event but its time and seq (in its heap entry, or its lane
  // predecessor's next_key): one cache line.
  struct alignas(64) Slot {
    double head;
    std::int64_t k;
    std::int32_t t, x;
    std::int32_t next, lane;  // the lane's next event; the lane, or -1
    Entry next_key;           // the lane's next event's heap entry
    Kind kind;
  };
  static constexpr std::uint64_t kMaxSlot = std::numeric_limits<std::int32_t>::max();
  struct Lane {
    std::int32_t first = -1, last = -1;
    std::uint64_t last_bits = 0;
  };
  static bool later(const Entry& a, const Entry& b) {
    return ((UInt128{a.time} << 64) | a.seq) > ((UInt128{b.time} << 64) | b.seq);
  }
  void sift_up(std::size_t i) {
    const Entry e = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!later(heap_[parent], e)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  // Puts e at the root's place and moves it down to where it belongs.
  void sift_down(const Entry& e) {
    const std::size_t n = heap_.size();
    std::size_t i = 0;
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      c += static_cast<std::size_t>(c + 1 < n && later(heap_[c], heap_[c + 1]));
      if (!later(e, heap_[c])) break;
      heap_[i] = heap_[c];
      i = c;
    }
    heap_[i] = e;
  }

  std::vector<Entry> heap_;
  std::vector<Slot> pool_;
  std::vector<std::int64_t> free_;
  std::vector<Lane> lanes_;
};

}  // namespace wafercoll::router_events

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
