// Contribution sets of the verifier (verify.cpp): rank intervals interned
// so that a cell's state is one int and "same contributions" is an integer
// comparison. Internal to the verifier; not part of the public headers.
#pragma once

#include <cstdint>
#include <vector>

#include "wafercoll/errors.hpp"
#include "wafercoll/units.hpp"

namespace wafercoll::verify_detail {

// ---------------------------------------------------------------------------
// Contribution sets: sorted, disjoint, non-adjacent rank intervals [lo, hi),
// hash-consed so that equal sets have equal ids (id 0 is the empty set).

struct Interval {
  RankId lo;
  RankId hi;
};

// Open-addressing map from nonzero-mixed 64-bit keys to int32 values (linear
// probing, power-of-two capacity, at most half full). The verifier interns
// millions of rank sets; node-based std::unordered_map spent most of its time
// chasing pointers through cache misses.
class FlatMap {
 public:
  // The value slot of `key`, inserted with `fresh` if absent.
  std::int32_t& find_or_insert(std::uint64_t key, std::int32_t fresh) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    const std::size_t mask = keys_.size() - 1;
    std::size_t i = slot(key);
    while (used_[i]) {
      if (keys_[i] == key) return vals_[i];
      i = (i + 1) & mask;
    }
    used_[i] = 1;
    keys_[i] = key;
    vals_[i] = fresh;
    ++size_;
    return vals_[i];
  }

 private:
  // Fibonacci hashing: the top bits of key * 2^64 / phi pick the slot.
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void grow() {
    const std::size_t cap = keys_.empty() ? 1024 : 2 * keys_.size();
    shift_ = 64;
    for (std::size_t c = cap; c > 1; c >>= 1) --shift_;
    std::vector<std::uint64_t> keys(cap);
    std::vector<std::int32_t> vals(cap);
    std::vector<std::uint8_t> used(cap, 0);
    for (std::size_t j = 0; j < keys_.size(); ++j) {
      // Rehashing tens of millions of entries (random writes) takes about a
      // second: poll so that Ctrl-C stays prompt. Throwing leaves the old
      // table intact.
      if ((j & 262143) == 262143) poll_interrupt();
      if (!used_[j]) continue;
      std::size_t i = slot(keys_[j]);
      while (used[i]) i = (i + 1) & (cap - 1);
      used[i] = 1;
      keys[i] = keys_[j];
      vals[i] = vals_[j];
    }
    keys_.swap(keys);
    vals_.swap(vals);
    used_.swap(used);
  }

  std::vector<std::uint64_t> keys_;
  std::vector<std::int32_t> vals_;
  std::vector<std::uint8_t> used_;
  std::size_t size_ = 0;
  int shift_ = 64;
};

class SetPool {
 public:
  SetPool() { intern({}); }

  std::int32_t singleton(RankId r) { return intern({Interval{r, r + 1}}); }

  std::int32_t intern(const std::vector<Interval>& iv) {
    std::uint64_t h = 1469598103934665603ull;
    for (const auto& x : iv) {
      h = (h ^ static_cast<std::uint32_t>(x.lo)) * 1099511628211ull;
      h = (h ^ static_cast<std::uint32_t>(x.hi)) * 1099511628211ull;
    }
    // Finalize (splitmix64): FNV's products of nearly equal sets differ only
    // in high bits, and the table's buckets take the value modulo a prime,
    // so without mixing long runs of sets share buckets.
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    std::int32_t& head = index_.find_or_insert(h, -1);
    for (std::int32_t id = head; id >= 0; id = next_[id])
      if (same(id, iv)) return id;
    const std::int32_t id = static_cast<std::int32_t>(off_.size()) - 1;
    data_.insert(data_.end(), iv.begin(), iv.end());
    off_.push_back(static_cast<std::int64_t>(data_.size()));
    next_.push_back(head);
    head = id;
    return id;
  }

  // Union of two disjoint sets; returns -1 and the first shared rank otherwise.
  std::int32_t disjoint_union(std::int32_t a, std::int32_t b, RankId& shared) {
    if (a == 0) return b;
    if (b == 0) return a;
    scratch_.clear();
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
      if (!scratch_.empty() && take->lo < scratch_.back().hi) {
        shared = take->lo;
        return -1;
      }
      if (!scratch_.empty() && take->lo == scratch_.back().hi) {
        scratch_.back().hi = take->hi;
      } else {
        scratch_.push_back(*take);
      }
    }
    return intern(scratch_);
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
  const Interval* begin(std::int32_t id) const { return data_.data() + off_[id]; }
  const Interval* end(std::int32_t id) const { return data_.data() + off_[id + 1]; }
  bool same(std::int32_t id, const std::vector<Interval>& iv) const {
    if (off_[id + 1] - off_[id] != static_cast<std::int64_t>(iv.size())) return false;
    const Interval* x = begin(id);
    for (std::size_t i = 0; i < iv.size(); ++i)
      if (x[i].lo != iv[i].lo || x[i].hi != iv[i].hi) return false;
    return true;
  }

  std::vector<Interval> data_;
  std::vector<std::int64_t> off_{0};
  std::vector<std::int32_t> next_;
  FlatMap index_;
  std::vector<Interval> scratch_;
};

}  // namespace wafercoll::verify_detail
