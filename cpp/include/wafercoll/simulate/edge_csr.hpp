// Internal to the simulator (not part of the public API): lists by key in
// CSR form, with offsets as narrow as their counts allow, and how they are
// filled from edges given by a replay (so that no list of the edges
// themselves need be held beside the result).
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "wafercoll/simulate/huge_alloc.hpp"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::sim {

// The offsets of a CSR list whose keys have at most 255 items each, in
// 1.25 bytes per key instead of 4: a count of one byte per key, and every
// kSampleEvery-th offset. A key's items start at its sampled offset plus
// the counts of the keys before it in its group of 16 (up to 15 bytes, in
// one cache line: the groups are 16-byte aligned).
struct CountedOffsets {
  static constexpr int kSampleShift = 4;
  static constexpr std::int64_t kSampleEvery = std::int64_t{1} << kSampleShift;
  BigVector<std::uint8_t> count;    // per key; empty when not in this form
  BigVector<std::uint32_t> sample;  // offset(k * kSampleEvery)
  bool empty() const { return count.empty(); }
  std::int64_t offset(std::int64_t x) const {
    std::int64_t o = sample[static_cast<std::size_t>(x >> kSampleShift)];
    for (std::int64_t j = x & ~(kSampleEvery - 1); j < x; ++j)
      o += count[static_cast<std::size_t>(j)];
    return o;
  }
  // Key x's items: [first, second).
  std::pair<std::int64_t, std::int64_t> range(std::int64_t x) const {
    const std::int64_t b = offset(x);
    return {b, b + count[static_cast<std::size_t>(x)]};
  }
  // Takes the offsets pos[0 .. n] (32-bit); false, and left empty, when a
  // key has more than 255 items.
  bool assign(const std::uint32_t* pos, std::int64_t n);
};

// One kind of dataflow edge in CSR form by its first element x: x's items
// are list[range(x).first .. range(x).second). Offsets are counts of one
// byte (CountedOffsets) while no x has more than 255 items, else 32 bits
// while the list holds fewer than 2^32 items, else 64; none are kept for an
// empty list (a kind of edge the run does not have costs nothing).
template <typename Item>
struct EdgeCsr {
  CountedOffsets counted;          // the offsets where they fit
  BigVector<std::uint32_t> narrow;  // else, while they fit
  BigVector<std::int64_t> wide;     // else
  BigVector<Item> list;
  bool empty() const { return list.empty(); }
  std::pair<std::int64_t, std::int64_t> range(std::int64_t x) const {
    if (!counted.empty()) return counted.range(x);
    const auto i = static_cast<std::size_t>(x);
    if (wide.empty()) return {narrow[i], narrow[i + 1]};
    return {wide[i], wide[i + 1]};
  }
};

// Fills csr with the edges replay(emit) gives, emit(x, item) for each, with
// x < n, each x's items in the order given. replay is called twice and must
// give the same edges both times; there are at most max_items of them
// (which chooses the offsets' width while counting). The offsets are
// counted in place, filling advances off[x] to x + 1's start, then shifted
// back; they are made compact (CountedOffsets) where they fit.
template <typename Item, typename Replay>
void fill_edge_csr(std::int64_t n, std::int64_t max_items, Replay&& replay, EdgeCsr<Item>& csr) {
  csr = EdgeCsr<Item>{};
  // Counted in a mapped array, which goes back to the system when dropped
  // (kept by the arena, it would stay resident through the run).
  auto fill = [n, &replay, &csr](auto& off) {
    off.assign(static_cast<std::size_t>(n) + 1, 0);
    std::int64_t items = 0;
    replay([&off, &items](std::int64_t x, Item) {
      ++off[static_cast<std::size_t>(x) + 1];
      ++items;
    });
    if (items == 0) return false;
    for (std::int64_t i = 0; i < n; ++i) off[i + 1] += off[i];
    csr.list.resize(static_cast<std::size_t>(items));
    replay([&off, &csr](std::int64_t x, Item item) {
      csr.list[static_cast<std::size_t>(off[static_cast<std::size_t>(x)]++)] = item;
    });
    for (std::int64_t i = n - 1; i > 0; --i) off[i] = off[i - 1];
    off[0] = 0;
    return true;
  };
  if (max_items >= std::numeric_limits<std::uint32_t>::max()) {
    ScratchVector<std::int64_t> off;
    if (fill(off)) csr.wide.assign(off.begin(), off.end());
    return;
  }
  ScratchVector<std::uint32_t> off;
  if (fill(off) && !csr.counted.assign(off.data(), n)) csr.narrow.assign(off.begin(), off.end());
}

}  // namespace wafercoll::sim

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
