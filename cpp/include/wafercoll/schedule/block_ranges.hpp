// The block ranges of a schedule's transfers, stored no wider than they need.
//
// Every transfer moves one or more half-open ranges of blocks [lo, hi); the
// schedule keeps them all in one list (row t of the CSR list of ranges owns
// items [range_offsets[t], range_offsets[t + 1])). In most large schedules
// the ranges have a shape that makes storing both ends wasteful:
//
//   constant  every range so far is the same (a vector of one block, or every
//             transfer moving the whole vector): nothing stored per range;
//   unit      every range so far is one block, [lo, lo + 1) (rings, trees and
//             pipelines of chunks): the lo only, 4 bytes;
//   full      anything else: lo and hi, 8 bytes.
//
// As with CsrOffsets, the form only moves forward (constant -> unit -> full),
// each move one pass over the ranges so far, so a schedule pays for what its
// own ranges need. Items are read by value (operator[]); RangeIter walks a
// row of them, as a pointer into an array of BlockRange would.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "wafercoll/units.hpp"

namespace wafercoll {

// Half-open range of blocks [lo, hi).
struct BlockRange {
  BlockId lo;
  BlockId hi;
};

inline bool operator==(const BlockRange& a, const BlockRange& b) {
  return a.lo == b.lo && a.hi == b.hi;
}

// Capacity for `extra` more elements, as one range insert would make it:
// size + max(size, extra), so repeated batches still grow geometrically
// (and end with no more slack than the vector's own growth leaves).
template <typename T>
void grow(std::vector<T>& v, std::int64_t extra) {
  const std::size_t need = v.size() + static_cast<std::size_t>(extra);
  if (need > v.capacity()) v.reserve(std::max(need, 2 * v.size()));
}

class BlockRangeList {
 public:
  enum class Form : std::uint8_t { constant = 0, unit = 1, full = 2 };

  // Item i, 0 <= i < size(). The form is the same for every item, so the
  // branches are predicted after the first read of a pass.
  BlockRange operator[](std::int64_t i) const {
    if (form_ == Form::constant) return first_;
    if (form_ == Form::unit) {
      const BlockId lo = lo_[static_cast<std::size_t>(i)];
      return BlockRange{lo, lo + 1};
    }
    return full_[static_cast<std::size_t>(i)];
  }
  std::int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Form form() const { return form_; }

  void push_back(const BlockRange& r) {
    if (form_ == Form::constant) {
      if (size_ == 0) first_ = r;
      if (r == first_) {
        ++size_;
        return;
      }
      materialise(r);
    }
    if (form_ == Form::unit) {
      if (r.hi == r.lo + 1) {
        lo_.push_back(r.lo);
        ++size_;
        return;
      }
      widen();
    }
    full_.push_back(r);
    ++size_;
  }

  // Room for `extra` more items, growing geometrically as one range insert
  // would (repeated batches stay linear); the constant form remembers it.
  void grow(std::int64_t extra) {
    reserve_ = size_ + extra;
    if (form_ == Form::unit) wafercoll::grow(lo_, extra);
    if (form_ == Form::full) wafercoll::grow(full_, extra);
  }

  // Bytes of the stored items (0 in the constant form).
  std::int64_t stored_bytes() const {
    return static_cast<std::int64_t>(lo_.size() * sizeof(BlockId) +
                                     full_.size() * sizeof(BlockRange));
  }

 private:
  std::size_t reserved() const {
    return static_cast<std::size_t>(std::max(reserve_, size_ + 1));
  }
  // constant -> unit when both the repeated range and r are one block, else
  // constant -> full.
  void materialise(const BlockRange& r) {
    const auto n = static_cast<std::size_t>(size_);
    if (first_.hi == first_.lo + 1 && r.hi == r.lo + 1) {
      form_ = Form::unit;
      lo_.reserve(reserved());
      lo_.assign(n, first_.lo);
      return;
    }
    form_ = Form::full;
    full_.reserve(reserved());
    full_.assign(n, first_);
  }
  // unit -> full: one pass, and the unit array is given back.
  void widen() {
    form_ = Form::full;
    full_.reserve(std::max(reserved(), lo_.capacity()));
    for (const BlockId lo : lo_) full_.push_back(BlockRange{lo, lo + 1});
    std::vector<BlockId>().swap(lo_);
  }

  Form form_ = Form::constant;
  std::int64_t size_ = 0;
  std::int64_t reserve_ = 0;
  BlockRange first_{0, 0};
  std::vector<BlockId> lo_;
  std::vector<BlockRange> full_;
};

// A position in a BlockRangeList, used like a pointer into an array of
// BlockRange: *it and it[k] give ranges by value, it->lo reads a field.
class RangeIter {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = BlockRange;
  using difference_type = std::int64_t;
  using reference = BlockRange;
  struct pointer {
    BlockRange r;
    const BlockRange* operator->() const { return &r; }
  };

  RangeIter(const BlockRangeList* list, std::int64_t i) : list_(list), i_(i) {}
  BlockRange operator*() const { return (*list_)[i_]; }
  BlockRange operator[](std::int64_t k) const { return (*list_)[i_ + k]; }
  pointer operator->() const { return pointer{(*list_)[i_]}; }
  RangeIter& operator++() {
    ++i_;
    return *this;
  }
  RangeIter& operator--() {
    --i_;
    return *this;
  }
  RangeIter operator+(std::int64_t k) const { return RangeIter(list_, i_ + k); }
  RangeIter operator-(std::int64_t k) const { return RangeIter(list_, i_ - k); }
  std::int64_t operator-(const RangeIter& o) const { return i_ - o.i_; }
  bool operator==(const RangeIter& o) const { return i_ == o.i_; }
  bool operator!=(const RangeIter& o) const { return i_ != o.i_; }

 private:
  const BlockRangeList* list_;
  std::int64_t i_;
};

}  // namespace wafercoll
