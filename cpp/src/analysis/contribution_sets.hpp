// Contribution sets of the verifier (verify.cpp): rank intervals interned
// so that a cell's state is one int and "same contributions" is an integer
// comparison. Internal to the verifier; not part of the public headers.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "wafercoll/mapped_alloc.hpp"
#include "wafercoll/errors.hpp"
#include "wafercoll/units.hpp"

// Hidden like the allocator it uses (mapped_alloc.hpp): internal to the library.
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::verify_detail {

// ---------------------------------------------------------------------------
// Contribution sets: sorted, disjoint, non-adjacent rank intervals [lo, hi),
// hash-consed so that equal sets have equal ids (id 0 is the empty set).

// Start loading the cache line at `p`; a hint, with no effect on results.
// GCC counts __builtin_prefetch as touching no memory, so a function that
// only prefetches looks free of effects and its calls are deleted as dead
// code; the empty volatile asm is an effect that keeps them.
inline void prefetch_line(const void* p) {
#if defined(__GNUC__)
  __builtin_prefetch(p);
  __asm__ __volatile__("");
#else
  (void)p;
#endif
}

struct Interval {
  RankId lo;
  RankId hi;
};

// The index of interned sets: open addressing with linear probing over one
// array of 8-byte slots. A slot holds the top 32 bits of a set's 64-bit
// hash (its fingerprint, in the slot's high half) and the set's id (low
// half; 0 marks a free slot, as the empty set, id 0, is never stored). A
// probe reads one slot and the slots after it share its cache line, so
// looking up a set that is not there costs about one cache miss; only a
// fingerprint match reads the set itself.
//
// The home slot is the hash's top log2(capacity) bits, the fingerprint's
// leading bits, so a slot shifted right gives its own home: growing needs
// neither the hashes nor the sets. Homes double with the capacity, so the
// rehash walks the old slots in order and writes the new ones nearly in
// order too (a stream, not random writes). The price: the fingerprint tells
// apart only entries of one home, on its 32 - log2(capacity) lower bits,
// and at most three quarters full a home holds under one entry besides the
// one sought, so a 2^24-slot table reads a wrong set for about 1 lookup in
// 300. The table is at most three quarters full and at most 2^32 slots
// (ids are below 2^31).
//
// Why three quarters: the number of sets is not known ahead (the reduces
// bound it from above, but a tree or butterfly builds each set at many
// ranks, and TTO on 16 x 16 interns 988 sets for 2 million reduces), so the
// table grows (in place within address space reserved for the bound, see
// grow()), and every slot it fills is fresh memory the kernel must zero
// (measured here, about 0.5 s per GiB). Filled to 3/4 instead of 1/2
// before doubling, the tables hold the same sets in half the memory (the 5
// million sets of a ring allreduce of 10^7 transfers in 64 MiB instead of
// 128 MiB, and 128 MiB instead of 256 MiB zeroed in all): it verified in
// a median 1.01 s instead of 1.36 s (8 alternated runs of the C++ core on
// a shared 2-core machine; recursive doubling on 262,144 ranks, whose
// 524,288 sets fit either way, alike). A lookup of a missing set then
// probes about 8 slots (1/2 (1 + 1/(1 - a)^2) at load a, Knuth), one or two
// cache lines, instead of 2.5.
//
// The verifier interns millions of sets (one per reduced run of cells); the
// layout before (64-bit keys, 32-bit values and a used flag in three arrays,
// and a chain array for equal hashes) cost three cache misses a lookup,
// about half of the verification time at 10^7 transfers.
class SetIndex {
 public:
  // An empty index with room for `n` entries without growing, and address
  // space reserved for up to `limit` entries (see grow()).
  explicit SetIndex(std::size_t n = 0, std::size_t limit = 0) {
    shift_ = shift_for(n);
    cap_ = std::size_t{1} << (64 - shift_);
    reserved_ = std::max(cap_, std::min(std::size_t{1} << (64 - shift_for(limit)), kMaxReserved));
    if (!Alloc::maps(reserved_)) reserved_ = cap_;
    try {
      slots_ = zeroed_slots(reserved_);
    } catch (const std::bad_alloc&) {  // no address space to spare (strict overcommit)
      if (reserved_ == cap_) throw;
      reserved_ = cap_;
      slots_ = zeroed_slots(reserved_);
    }
    populate(slots_, reserved_, 0, cap_);
  }
  SetIndex(const SetIndex&) = delete;
  SetIndex& operator=(const SetIndex&) = delete;
  SetIndex(SetIndex&& o) noexcept { swap(o); }
  SetIndex& operator=(SetIndex&& o) noexcept {
    swap(o);
    return *this;
  }
  ~SetIndex() {
    if (slots_ != nullptr) Alloc().deallocate(slots_, reserved_);
  }

  std::size_t capacity() const { return cap_; }
  std::size_t size() const { return size_; }
  // Slots of address space held (capacity() or more; for tests).
  std::size_t reserved() const { return reserved_; }

  // The id stored with `hash` that `same(id)` accepts; otherwise `fresh`
  // (nonzero) is stored with `hash` and returned.
  template <class Same>
  std::uint32_t find_or_insert(std::uint64_t hash, std::uint32_t fresh, Same&& same) {
    const std::uint64_t fp = hash >> 32;
    std::size_t i = static_cast<std::size_t>(hash >> shift_);
    for (std::uint64_t x; (x = slots_[i]) != 0; i = (i + 1) & (cap_ - 1)) {
      const auto id = static_cast<std::uint32_t>(x);
      if ((x >> 32) == fp && same(id)) return id;
    }
    const std::uint64_t entry = (fp << 32) | fresh;
    if (4 * (size_ + 1) > 3 * cap_) {
      grow();
      place(entry);
    } else {
      slots_[i] = entry;
    }
    ++size_;
    return fresh;
  }

  // Start loading the slot where a lookup of `hash` begins.
  void prefetch(std::uint64_t hash) const { prefetch_line(slots_ + (hash >> shift_)); }

 private:
  using Alloc = MappedAlloc<std::uint64_t, true>;
  // The most slots reserved ahead (8 GiB of address space, none of it
  // resident until used).
  static constexpr std::size_t kMaxReserved = std::size_t{1} << 30;

  // 64 - log2 of the smallest power of two of at least 16 slots that holds
  // `n` entries at most three quarters full (at most 2^32 slots).
  static int shift_for(std::size_t n) {
    int shift = 60;
    while (3 * (std::size_t{1} << (64 - shift)) < 4 * n && shift > 32) --shift;
    return shift;
  }

  // Slots [lo, hi) of a mapped table faulted in for writing before they are
  // probed (populate_for_write: probes read a slot before anything is
  // written there, and a page first read maps the zero page and faults
  // again when written; on ring allreduce of 1024 ranks such second faults,
  // with their TLB flushes, drew 7 % of a verification's samples. Populated,
  // verifying ring allreduce of 10^7 transfers took 0.21-0.27 s of system
  // time against 0.37-0.40 s, and 1.62-1.77 s in all against 1.75-1.82 s,
  // alternated fresh processes).
  // `allocated`: the slots of the block at `slots` (mapped or not).
  static void populate(std::uint64_t* slots, std::size_t allocated, std::size_t lo,
                       std::size_t hi) {
    if (Alloc::maps(allocated)) populate_for_write(slots + lo, (hi - lo) * sizeof(std::uint64_t));
  }

  // `n` slots, all zero: mapped memory is zeroed by the system as it is
  // first touched, what operator new gives is zeroed here. (Growing in
  // place relies on the slots beyond cap_ being zero.)
  static std::uint64_t* zeroed_slots(std::size_t n) {
    std::uint64_t* p = Alloc().allocate(n);
    if (!Alloc::maps(n)) std::fill(p, p + n, std::uint64_t{0});
    return p;
  }

  // Put `entry` in the first free slot from its home.
  static void place(std::uint64_t* slots, std::size_t cap, int shift, std::uint64_t entry) {
    std::size_t i = static_cast<std::size_t>(entry >> shift);
    while (slots[i] != 0) i = (i + 1) & (cap - 1);
    slots[i] = entry;
  }
  void place(std::uint64_t entry) { place(slots_, cap_, shift_, entry); }

  void swap(SetIndex& o) noexcept {
    std::swap(slots_, o.slots_);
    std::swap(cap_, o.cap_);
    std::swap(reserved_, o.reserved_);
    std::swap(size_, o.size_);
    std::swap(shift_, o.shift_);
  }

  // Twice the slots; every entry goes to its home in the bigger table.
  //
  // Within the reserved slots the table doubles in place, so a table that
  // grows to its final size touches that size of memory once. Copied into
  // a fresh table of twice the size each time, it touched about twice that:
  // every table of the doubling chain was fresh memory to fault in, and a
  // freed one went back to the system (and, on a virtual machine that
  // reports free pages to its host, had to be backed again later).
  // Verifying the ring allreduce on ring(4096) (33.5 M transfers) took
  // 0.92 and 2.33 s of system time against 1.93 and 3.45 s (two alternated
  // pairs of runs, the C++ core at -O3; peak memory unchanged).
  //
  // In place: the old slots are emptied from the last to the first, each
  // entry going to its new home h or the first free slot after it, when h
  // is at or beyond the slot being emptied and the probe does not wrap
  // around the end: those slots hold only entries already moved (or none),
  // and none of them is emptied later, so every moved entry stays
  // reachable from its home. The other entries (those whose probe run is
  // longer than their home's index, and those near the end: a few) are
  // set aside and placed last, into a table that holds only moved entries.
  void grow() {
    if (shift_ == 32) throw std::length_error("verify: the contribution-set index is full");
    // Rehashing hundreds of MiB takes a while: stop here on Ctrl-C, before
    // anything moves.
    poll_interrupt();
    if (2 * cap_ > reserved_) {
      grow_by_copy();
      return;
    }
    const std::size_t old = cap_;
    std::vector<std::uint64_t> later;
    cap_ = 2 * old;
    --shift_;
    populate(slots_, reserved_, old, cap_);
    for (std::size_t j = old; j-- > 0;) {
      const std::uint64_t x = slots_[j];
      if (x == 0) continue;
      slots_[j] = 0;
      std::size_t i = static_cast<std::size_t>(x >> shift_);
      if (i < j) {
        later.push_back(x);
        continue;
      }
      while (i < cap_ && slots_[i] != 0) ++i;
      if (i == cap_) {
        later.push_back(x);
        continue;
      }
      slots_[i] = x;
    }
    for (const std::uint64_t x : later) place(x);
  }

  // The same into a fresh table (beyond the reserved slots): the
  // current one stays intact until the copy is complete.
  void grow_by_copy() {
    const std::size_t cap = 2 * cap_;
    const int shift = shift_ - 1;
    std::uint64_t* fresh = zeroed_slots(cap);
    populate(fresh, cap, 0, cap);
    for (std::size_t j = 0; j < cap_; ++j)
      if (slots_[j] != 0) place(fresh, cap, shift, slots_[j]);
    Alloc().deallocate(slots_, reserved_);
    slots_ = fresh;
    cap_ = reserved_ = cap;
    shift_ = shift;
  }

  // Asked for with huge pages (offered with WAFERCOLL_HUGE_PAGES=1,
  // mapped_alloc.hpp): the probes go anywhere, so with 4 KiB pages nearly
  // every one also misses the TLB.
  std::uint64_t* slots_ = nullptr;
  std::size_t cap_ = 0;       // slots in use: a power of two
  std::size_t reserved_ = 0;  // slots allocated, cap_ or more
  std::size_t size_ = 0;
  int shift_ = 60;  // 64 - log2(capacity)
};

class SetPool {
 public:
  // Ids are int32 (a cell's state is one int): at most 2^31 - 1 sets.
  static constexpr std::size_t kMaxSets = 0x7fffffff;
  // Offsets are uint32: at most 2^32 - 1 intervals in all (32 GiB of them).
  static constexpr std::size_t kMaxIntervals = 0xffffffff;

  // `expected`: about how many distinct sets the pool will hold. The index
  // is sized for them up front, so that it does not grow as it fills.
  // `at_most`: a bound on the sets: the lists of sets reserve room for it
  // and for two intervals a set, address space only (mapped_alloc.hpp),
  // untouched until the sets arrive, so that they do not move (a copy of a
  // doubling list is fresh memory to fault in, as large as the list,
  // resident beside it while it is copied). A ring's partial sums wrap
  // around rank 0 about every other time: 1.5 intervals a set.
  explicit SetPool(std::size_t expected = 0, std::size_t at_most = 0)
      : index_(expected, at_most) {
    const std::size_t room = std::min(std::max(expected, at_most), kMaxSets);
    data_.reserve(2 * room);
    off_.reserve(room + 2);
  }

  std::int32_t singleton(RankId r) {
    const Interval one{r, r + 1};
    return intern(&one, 1);
  }

  std::int32_t intern(const std::vector<Interval>& iv) { return intern(iv.data(), iv.size()); }

  // The id of the set of `n` intervals at `iv` (sorted, disjoint, not
  // adjacent), a new one if the pool has not seen the set.
  std::int32_t intern(const Interval* iv, std::size_t n) {
    if (n == 0) return 0;
    const auto fresh = static_cast<std::uint32_t>(sets());  // at most kMaxSets + 1
    const std::uint32_t id =
        index_.find_or_insert(hash(iv, n), fresh, [&](std::uint32_t k) { return same(k, iv, n); });
    if (id == fresh) {
      // The verification ends here (the index holds an id it cannot use).
      if (fresh > kMaxSets)
        throw std::length_error("verify: more than 2^31 - 1 distinct contribution sets");
      if (data_.size() + n > kMaxIntervals)
        throw std::length_error("verify: more than 2^32 - 1 intervals in the contribution sets");
      data_.insert(data_.end(), iv, iv + n);
      off_.push_back(static_cast<std::uint32_t>(data_.size()));
    }
    return static_cast<std::int32_t>(id);
  }

  // Number of distinct sets, the empty one included.
  std::size_t sets() const { return off_.size() - 1; }
  // Slots of the index (for tests of its growth).
  std::size_t index_capacity() const { return index_.capacity(); }

  // Union of two disjoint sets; returns -1 and the first shared rank otherwise.
  std::int32_t disjoint_union(std::int32_t a, std::int32_t b, RankId& shared) {
    if (a == 0) return b;
    if (b == 0) return a;
    if (!merge(a, b, scratch_, shared)) return -1;
    return intern(scratch_);
  }

  // Whether prefetch_union can pay: not while the index fits in a core's
  // L2 cache (1 MiB on the machine measured, 2^17 slots), where a lookup
  // does not wait for memory. TTO on a 16 x 16 mesh interns fewer than 1000
  // sets; the repeated merges made its verification 6 % slower.
  bool worth_prefetching() const { return index_.capacity() > (std::size_t{1} << 17); }

  // Start loading the index slot where disjoint_union(a, b) will look its
  // result up, so that the cache miss overlaps other work. A hint only: it
  // changes nothing, and skips unions of long sets (it repeats the merge).
  void prefetch_union(std::int32_t a, std::int32_t b) {
    if (a <= 0 || b <= 0) return;
    if (std::int64_t{off_[a + 1] - off_[a]} + (off_[b + 1] - off_[b]) > kPrefetchIntervals) return;
    RankId shared = -1;
    if (merge(a, b, hint_, shared)) index_.prefetch(hash(hint_.data(), hint_.size()));
  }

  // Smallest rank in `a` and not in `b`, or -1.
  RankId first_difference(std::int32_t a, std::int32_t b) const {
    const Interval* y = begin(b);
    const Interval* ye = end(b);
    for (const Interval* x = begin(a); x != end(a); ++x) {
      RankId r = x->lo;
      while (r < x->hi) {
        while (y != ye && y->hi <= r) ++y;
        if (y == ye || y->lo > r) return r;
        r = y->hi;
      }
    }
    return -1;
  }

  std::int64_t size(std::int32_t a) const {
    std::int64_t n = 0;
    for (const Interval* x = begin(a); x != end(a); ++x) n += x->hi - x->lo;
    return n;
  }

 private:
  // prefetch_union's limit on the intervals of the two sets: it keeps the
  // repeated merge (a few ns an interval) below the memory access it hides
  // (about 100 ns). Not tuned: the benchmarked schedules build sets of one
  // or two intervals.
  static constexpr std::int64_t kPrefetchIntervals = 16;

  // The union of a and b into `out`; false and the first shared rank if
  // they are not disjoint.
  bool merge(std::int32_t a, std::int32_t b, std::vector<Interval>& out, RankId& shared) const {
    out.clear();
    const Interval* x = begin(a);
    const Interval* xe = end(a);
    const Interval* y = begin(b);
    const Interval* ye = end(b);
    while (x != xe || y != ye) {
      const Interval* take;
      if (y == ye || (x != xe && x->lo < y->lo)) {
        take = x++;
      } else {
        take = y++;
      }
      if (!out.empty() && take->lo < out.back().hi) {
        shared = take->lo;
        return false;
      }
      if (!out.empty() && take->lo == out.back().hi) {
        out.back().hi = take->hi;
      } else {
        out.push_back(*take);
      }
    }
    return true;
  }

  const Interval* begin(std::int32_t id) const { return data_.data() + off_[id]; }
  const Interval* end(std::int32_t id) const { return data_.data() + off_[id + 1]; }
  bool same(std::uint32_t id, const Interval* iv, std::size_t n) const {
    if (off_[id + 1] - off_[id] != n) return false;
    const Interval* x = data_.data() + off_[id];
    for (std::size_t i = 0; i < n; ++i)
      if (x[i].lo != iv[i].lo || x[i].hi != iv[i].hi) return false;
    return true;
  }

  static std::uint64_t hash(const Interval* iv, std::size_t n) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64-bit offset basis
    for (std::size_t i = 0; i < n; ++i) {
      h = (h ^ static_cast<std::uint32_t>(iv[i].lo)) * 1099511628211ull;  // FNV prime
      h = (h ^ static_cast<std::uint32_t>(iv[i].hi)) * 1099511628211ull;
    }
    // Finalize (splitmix64's mixer): FNV's products of nearly equal sets
    // differ only in their high bits, which would put long runs of sets in
    // one home; mixed, every bit depends on every input bit.
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
  }

  MappedVector<Interval> data_;
  MappedVector<std::uint32_t> off_{0, 0};  // set id's intervals: data_[off_[id], off_[id + 1])
  SetIndex index_;
  std::vector<Interval> scratch_;
  std::vector<Interval> hint_;  // prefetch_union's merge
};

}  // namespace wafercoll::verify_detail

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
