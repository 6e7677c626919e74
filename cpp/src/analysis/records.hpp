// The verifier's records of cell writes (verify.cpp): who wrote which
// contribution set over which earlier record. Internal to the verifier; not
// part of the public headers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wafercoll/mapped_alloc.hpp"
#include "wafercoll/units.hpp"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::verify_detail {

// A cell's state is a record id. Records are made in the order of the
// verifier's walk: first the writer-less initial values, then each
// transfer's writes as it is walked. So a record's writer need not be
// stored with it (8 bytes a record, not 12): it follows from the record's
// id through *runs*, each a stretch of ids in which every walked transfer
// made exactly one record (the writer of id m is then the transfer at walk
// position first_k + (m - first_record)), or the records of one transfer
// that made several. A schedule whose transfers each write one run of cells
// of one destination (the builders' rings, trees and butterflies) is one
// run; the lookup then reads no memory but the run.
class Records {
 public:
  struct Record {
    std::int32_t set;   // contribution set after the write
    std::int32_t prev;  // the record this write replaced (-1 for initial values)
  };

  // `order`: the walk (nullptr: the index order); it must outlive this.
  explicit Records(const TransferId* order) : order_(order) {}

  void reserve(std::size_t n) { records_.reserve(n); }
  std::size_t size() const { return records_.size(); }
  const Record& operator[](std::int32_t m) const { return records_[static_cast<std::size_t>(m)]; }

  // A writer-less record (made before any transfer's); returns its id.
  std::int32_t initial(std::int32_t set) {
    records_.push_back(Record{set, -1});
    initial_ = records_.size();
    return static_cast<std::int32_t>(records_.size()) - 1;
  }

  // A record written by the transfer at walk position k (k never
  // decreases from call to call); returns its id.
  std::int32_t add(std::int32_t k, std::int32_t set, std::int32_t prev) {
    const auto m = static_cast<std::int32_t>(records_.size());
    records_.push_back(Record{set, prev});
    if (k == last_k_) {
      // A second record of one transfer: its records get a run of their own.
      Run& r = runs_.back();
      if (r.first_k >= 0) {
        if (r.first_record == m - 1) {
          r.first_k = ~k;
        } else {
          runs_.push_back(Run{m - 1, ~k});
        }
      }
    } else if (runs_.empty() || runs_.back().first_k < 0 ||
               runs_.back().first_k + (m - runs_.back().first_record) != k) {
      runs_.push_back(Run{m, k});
    }
    last_k_ = k;
    return m;
  }

  // The transfer that wrote record m, or -1 for an initial value.
  TransferId writer(std::int32_t m) const {
    if (static_cast<std::size_t>(m) < initial_) return -1;
    const Run* r = runs_.data();
    if (runs_.size() > 1)
      r = std::upper_bound(runs_.data(), runs_.data() + runs_.size(), m,
                           [](std::int32_t x, const Run& y) { return x < y.first_record; }) -
          1;
    const std::int32_t k = r->first_k >= 0 ? r->first_k + (m - r->first_record) : ~r->first_k;
    return order_ == nullptr ? static_cast<TransferId>(k) : order_[static_cast<std::size_t>(k)];
  }

 private:
  struct Run {
    std::int32_t first_record;
    std::int32_t first_k;  // ~k: every record of the run is the transfer at walk position k's
  };

  const TransferId* order_;
  MappedVector<Record> records_;
  std::vector<Run> runs_;
  std::size_t initial_ = 0;
  std::int32_t last_k_ = -1;
};

}  // namespace wafercoll::verify_detail

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
