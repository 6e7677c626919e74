// Internal to the simulator (not part of the public API): bit widths and a
// stable LSD radix sort, shared by the canonical order of the transfers
// (simulate.cpp, 64-bit keys) and the time buckets' sort of a crowded time
// (event_queue.hpp, events by a key made from their tie and local keys).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::sim {

// Bits needed for x (0 for 0).
inline int bit_width(std::uint64_t x) {
  int w = 0;
  for (; x != 0; x >>= 1) ++w;
  return w;
}

// The index of x's lowest set bit (x != 0).
inline int lowest_bit(std::uint64_t x) {
  int b = 0;
  for (; (x & 1) == 0; x >>= 1) ++b;
  return b;
}

// Sorts items[0, n) by bits [lo_bit, hi_bit) of key(item), stably, by LSD
// radix passes of equal digits of at most max_digit bits, through `scratch`
// (n items), counting in `count`. Returns where the sorted items are:
// `items` or `scratch` (after an odd number of passes).
template <typename T, typename Key>
T* lsd_radix_sort(T* items, T* scratch, std::int64_t n, int lo_bit, int hi_bit, int max_digit,
                  Key&& key, std::vector<std::int64_t>& count) {
  const int span = hi_bit - lo_bit;
  if (span <= 0 || n < 2) return items;
  const int passes = (span + max_digit - 1) / max_digit;
  const int digit = (span + passes - 1) / passes;
  const std::uint64_t mask = (std::uint64_t{1} << digit) - 1;
  count.resize(std::size_t{1} << digit);
  T* from = items;
  T* to = scratch;
  for (int shift = lo_bit; shift < hi_bit; shift += digit) {
    std::fill(count.begin(), count.end(), 0);
    for (std::int64_t i = 0; i < n; ++i) ++count[(key(from[i]) >> shift) & mask];
    std::int64_t sum = 0;
    for (auto& c : count) {
      const std::int64_t k = c;
      c = sum;
      sum += k;
    }
    for (std::int64_t i = 0; i < n; ++i) to[count[(key(from[i]) >> shift) & mask]++] = from[i];
    std::swap(from, to);
  }
  return from;
}

}  // namespace wafercoll::sim

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
