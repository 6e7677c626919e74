// The iteration order of a CPython set of small ints, for a driver model
// that picks "the first free interface" the way a Python driver does
// (simulate/routers.hpp: RouterFlows::python_set_order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wafercoll {

// The slots of a CPython 3.11 set of small non-negative ints (an int's hash
// is its value; Objects/setobject.c: linear probes of 9, perturbed jumps,
// a removed key's slot left as a dummy that a later add may reuse, a table
// of at least 8 slots resized to more than 4 x its keys once 3/5 of it is
// filled). Iterating a set visits its slots in order.
class PySetSlots {
 public:
  explicit PySetSlots(std::int32_t keys) : table_(8, kEmpty) {
    for (std::int32_t k = 0; k < keys; ++k) add(k);
  }
  void add(std::int32_t k) {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = static_cast<std::size_t>(k) & mask, perturb = static_cast<std::size_t>(k);
    std::int64_t freeslot = -1;
    for (;;) {
      std::size_t probes = i + kLinearProbes <= mask ? kLinearProbes : 0;
      for (std::size_t j = i;; ++j) {
        const std::int32_t e = table_[j];
        if (e == kEmpty) {
          ++used_;
          if (freeslot >= 0) {
            table_[static_cast<std::size_t>(freeslot)] = k;
            return;
          }
          table_[j] = k;
          if (++fill_ * 5 >= static_cast<std::int64_t>(mask) * 3) resize(used_ * 4);
          return;
        }
        if (e == k) return;
        if (e == kDummy) freeslot = static_cast<std::int64_t>(j);
        if (probes-- == 0) break;
      }
      perturb >>= 5;
      i = (i * 5 + 1 + perturb) & mask;
    }
  }
  void remove(std::int32_t k) {
    for (auto& e : table_)
      if (e == k) {
        e = kDummy;
        --used_;
        return;
      }
  }
  // The first key in iteration order, or -1 for an empty set.
  std::int32_t first() const {
    for (const std::int32_t e : table_)
      if (e >= 0) return e;
    return -1;
  }
  // The keys in iteration order.
  std::vector<std::int32_t> order() const {
    std::vector<std::int32_t> out;
    for (const std::int32_t e : table_)
      if (e >= 0) out.push_back(e);
    return out;
  }

 private:
  static constexpr std::int32_t kEmpty = -1, kDummy = -2;
  static constexpr std::size_t kLinearProbes = 9;
  void resize(std::int64_t minused) {
    std::size_t n = 8;
    while (static_cast<std::int64_t>(n) <= minused) n <<= 1;
    std::vector<std::int32_t> old;
    old.swap(table_);
    table_.assign(n, kEmpty);
    const std::size_t mask = n - 1;
    for (const std::int32_t k : old) {
      if (k < 0) continue;
      std::size_t i = static_cast<std::size_t>(k) & mask, perturb = static_cast<std::size_t>(k);
      for (;;) {
        if (table_[i] == kEmpty) break;
        bool found = false;
        if (i + kLinearProbes <= mask)
          for (std::size_t j = 1; j <= kLinearProbes; ++j)
            if (table_[i + j] == kEmpty) {
              i += j;
              found = true;
              break;
            }
        if (found) break;
        perturb >>= 5;
        i = (i * 5 + 1 + perturb) & mask;
      }
      table_[i] = k;
    }
    fill_ = used_;
  }
  std::vector<std::int32_t> table_;
  std::int64_t fill_ = 0, used_ = 0;
};

}  // namespace wafercoll
