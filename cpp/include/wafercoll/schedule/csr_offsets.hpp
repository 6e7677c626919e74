// Offsets of a CSR list, stored no wider than they need to be.
//
// Row t of a CSR list owns items [offset(t), offset(t + 1)); the offsets are
// rows() + 1 non-decreasing values starting at 0. A schedule keeps three such
// lists (destinations, block ranges, dependencies). In nearly every large
// schedule the first two have exactly one item per row, so their offsets are
// the identity (offset(t) = t), and the dependencies are often as regular: a
// first step with none, then the same number for every transfer (recursive
// doubling: 4 each from the second step on). Storing such offsets would cost
// 4 bytes per transfer and list for nothing. The offsets therefore take one
// of three forms:
//
//   regular   nothing stored: the first zeros() rows are empty, every later
//             row has stride() items (the identity: no empty rows, one item
//             each);
//   narrow    Narrow (int32_t in a schedule) while the item count fits;
//   wide      int64_t once it does not.
//
// The form only ever moves forward (regular -> narrow -> wide), each move a
// single pass over the rows so far, chosen per list by what is appended: a
// schedule pays for the width its own counts need. Narrow is a template
// parameter so that the tests can move to the wide form with a few rows
// (Narrow = int8_t) through the same code that a schedule runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace wafercoll {

template <typename Narrow>
class BasicCsrOffsets {
  static_assert(std::is_integral_v<Narrow> && std::is_signed_v<Narrow> &&
                    sizeof(Narrow) < sizeof(std::int64_t),
                "the narrow form must be a signed integer narrower than 64 bits");

 public:
  enum class Form : std::uint8_t { regular = 0, narrow = 1, wide = 2 };
  // The largest offset the narrow form holds.
  static constexpr std::int64_t kNarrowMax = std::numeric_limits<Narrow>::max();

  // Offset i, 0 <= i <= rows(). The form is the same for every row, so the
  // branches are predicted after the first call of a pass.
  std::int64_t operator[](std::int64_t i) const {
    if (form_ == Form::regular) return std::max<std::int64_t>(i - zeros_, 0) * stride_;
    if (form_ == Form::narrow) return narrow_[static_cast<std::size_t>(i)];
    return wide_[static_cast<std::size_t>(i)];
  }
  std::int64_t rows() const { return rows_; }
  // Items in all rows (the last offset).
  std::int64_t total() const { return (*this)[rows_]; }
  Form form() const { return form_; }
  // The regular form's empty rows first, and the items of every later row
  // (0 while every row so far is empty).
  std::int64_t zeros() const { return zeros_; }
  std::int64_t stride() const { return stride_; }
  // Whether offset(t) = t for every row: one item per row.
  bool identity() const {
    return form_ == Form::regular && zeros_ == 0 && (stride_ == 1 || rows_ == 0);
  }

  // Appends a row ending at offset `end` (>= total(); the caller checks).
  // The common cases are inline (a builder's batch calls this per
  // transfer for each of a schedule's three lists): one more row of the
  // regular form's stride, or a narrow offset; the rest out of line.
  void push(std::int64_t end) {
    if (form_ == Form::regular && stride_ != 0 && end - total() == stride_) {
      ++rows_;
      return;
    }
    if (form_ == Form::narrow && end <= kNarrowMax) {
      narrow_.push_back(static_cast<Narrow>(end));
      ++rows_;
      return;
    }
    push_other(end);
  }

  // Expected number of rows: reserved at once by a stored form, remembered
  // by the regular form for the moment it has to store offsets.
  void reserve(std::int64_t rows) {
    reserve_rows_ = rows;
    if (form_ == Form::narrow) narrow_.reserve(static_cast<std::size_t>(rows) + 1);
    if (form_ == Form::wide) wide_.reserve(static_cast<std::size_t>(rows) + 1);
  }

  // Writes the rows() + 1 offsets to out (the arrays handed to Python).
  void copy_to(std::int64_t* out) const {
    for (std::int64_t i = 0; i <= rows_; ++i) out[i] = (*this)[i];
  }

  // Bytes of the stored offsets (0 in the regular form).
  std::int64_t stored_bytes() const {
    return static_cast<std::int64_t>(narrow_.size() * sizeof(Narrow) +
                                     wide_.size() * sizeof(std::int64_t));
  }

 private:
  std::size_t reserved_entries() const {
    const std::int64_t want = std::max(reserve_rows_, rows_ + 1) + 1;
    return static_cast<std::size_t>(want);
  }

  // push() but for its inline cases (so a regular form with a stride
  // gets a row of another size here).
  [[gnu::noinline]] void push_other(std::int64_t end) {
    if (form_ == Form::regular) {
      if (stride_ == 0) {  // every row so far is empty
        const std::int64_t items = end - total();
        if (items == 0) ++zeros_;
        stride_ = items;
        ++rows_;
        return;
      }
      materialise();
    }
    if (form_ == Form::narrow) {
      if (end <= kNarrowMax) {
        narrow_.push_back(static_cast<Narrow>(end));
        ++rows_;
        return;
      }
      widen();
    }
    wide_.push_back(end);
    ++rows_;
  }

  // regular -> narrow, or wide when the items so far do not fit narrow.
  void materialise() {
    const std::int64_t items = total();
    if (items > kNarrowMax) {
      wide_.reserve(reserved_entries());
      for (std::int64_t i = 0; i <= rows_; ++i) wide_.push_back((*this)[i]);
      form_ = Form::wide;
      return;
    }
    narrow_.reserve(reserved_entries());
    for (std::int64_t i = 0; i <= rows_; ++i) narrow_.push_back(static_cast<Narrow>((*this)[i]));
    form_ = Form::narrow;
  }
  // narrow -> wide: one pass, and the narrow array is given back.
  void widen() {
    form_ = Form::wide;
    wide_.reserve(std::max(reserved_entries(), narrow_.capacity()));
    wide_.assign(narrow_.begin(), narrow_.end());
    std::vector<Narrow>().swap(narrow_);
  }

  Form form_ = Form::regular;
  std::int64_t rows_ = 0;
  std::int64_t zeros_ = 0, stride_ = 0;  // the regular form
  std::int64_t reserve_rows_ = 0;
  std::vector<Narrow> narrow_;
  std::vector<std::int64_t> wide_;
};

// A schedule's offsets: 32-bit while a list holds fewer than 2^31 items.
using CsrOffsets = BasicCsrOffsets<std::int32_t>;

}  // namespace wafercoll
