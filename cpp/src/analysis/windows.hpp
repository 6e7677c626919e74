// The verifier's windows (verify.cpp): which blocks' cells a verifier
// tracks and which transfers it walks, and where a verification is split
// by blocks between two threads. Internal to the verifier; not part of the
// public headers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "happens_before.hpp"
#include "wafercoll/analysis/verify.hpp"
#include "wafercoll/mapped_alloc.hpp"
#include "wafercoll/schedule/schedule.hpp"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::verify_detail {

// Sizes known before the walk. The records are at least one per written
// (destination, range) pair, so the list is allocated once instead of being
// copied as it doubles (a copy of the list is hundreds of MiB at 10^7
// transfers). The set index starts with room for the sets every run interns
// (each participant's singleton, the set of all and the empty set) and grows
// as it fills: the reduces' (destination, range) pairs bound the new sets
// from above (about: a reduce over several runs of one destination builds a
// set per run), but in tree and butterfly schedules they overestimate them
// many times (many ranks build the same set: TTO on 16 x 16 builds 988 sets
// for 2 million such pairs), and an index sized for them was slower than
// one that grows. The lists of the sets' intervals only reserve room for
// the bound (address space, untouched until used).
struct Sizes {
  std::size_t records;
  std::size_t sets;
};

// The transfers' blocks [first, end) (one range or several) clipped to the
// window [lo, hi): calls f(lo, hi) for each non-empty part.
template <class F>
void for_each_range(const Schedule& s, TransferId t, BlockId lo, BlockId hi, F&& f) {
  for (auto r = s.ranges_begin(t); r != s.ranges_end(t); ++r) {
    const BlockId a = std::max(r->lo, lo);
    const BlockId b = std::min(r->hi, hi);
    if (a < b) f(a, b);
  }
}

// What the verifiers of one schedule share: the walk (a topological order;
// empty when the index order is one) and its chain cover, both read-only
// once made, so that verifiers on two threads may ask them at once.
struct Plan {
  // The order; the cover follows (make_cover()), perhaps while another
  // thread reads the order.
  explicit Plan(const Schedule& s)
      // Index order is a topological order when every dependency points
      // back (the builders' schedules): then none is stored.
      : order(s.deps_point_backward() ? std::vector<TransferId>{} : topological_order(s)) {}
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  void make_cover(const Schedule& s) { cover_.emplace(s, order); }
  const ChainCover& cover() const { return *cover_; }
  TransferId at(std::size_t k) const {
    return order.empty() ? static_cast<TransferId>(k) : order[k];
  }
  const TransferId* walk() const { return order.empty() ? nullptr : order.data(); }

  std::vector<TransferId> order;

 private:
  std::optional<ChainCover> cover_;
};

// The cells one verifier tracks: blocks [lo, hi) of every rank, and the
// transfers that touch them, in the plan's order (`walk`; with every block,
// the plan's order itself, `whole`). Cells of different blocks never
// interact (each check is about one cell), so two windows that split the
// blocks verify independently; a transfer over both is walked by both.
struct Window {
  BlockId lo = 0;
  BlockId hi = 0;
  bool whole = true;
  // Unless whole. Mapped (mapped_alloc.hpp): made on another thread, it
  // goes back to the system when freed, not into that thread's heap.
  MappedVector<TransferId> walk;
  Sizes sizes{};
};

// A window of every block, the plan's order its walk, and its sizes.
Window whole_window(const Schedule& s);

// From this many transfers a verification uses a second thread (the
// simulator's threshold, simulate.cpp): starting it costs some 50 us, the
// backward pass of 2^16 transfers about 2 ms.
inline constexpr TransferId kParallelTransfers = TransferId{1} << 16;

// Splitting the blocks between two threads pays when neither window is
// walked by much more than half the transfers (see windows.cpp).
inline constexpr double kSplitShare = 0.6;

// The block that starts the second window when the verification is split
// by blocks (0: not split).
BlockId split_point(const Schedule& s, VerifySplit split);

// The two windows of a split at block m: their walks (in the plan's order)
// and sizes.
std::pair<Window, Window> split_windows(const Schedule& s, const Plan& plan, BlockId m);

}  // namespace wafercoll::verify_detail

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
