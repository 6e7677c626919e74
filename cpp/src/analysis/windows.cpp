// The verifier's windows: see windows.hpp.
//
// Splitting the blocks between two threads pays when neither window is
// walked by much more than half the transfers: a verifier on one thread
// runs the forward pass with the backward pass beside it (the forward pass
// takes about 2.5 times as long, ring allreduce on 1024 ranks), so the
// split's time is about 1.4 times the larger window's share of the forward
// pass; at 0.6 of the transfers (kSplitShare) that is 0.84 of one
// thread's. Transfers of the whole vector (recursive doubling) walk both
// windows, and stay on one.
#include "windows.hpp"

#include <thread>

namespace wafercoll::verify_detail {

namespace {

// A window's sizes: records and reduced (destination, range) pairs counted
// over the ranges clipped to it.
void count_pair(Sizes& z, const Schedule& s, TransferId t) {
  const auto d = static_cast<std::size_t>(s.num_dsts(t));
  z.records += d;
  if (s.op(t) == Op::reduce) z.sets += d;
}

Sizes initial_sizes(const Schedule& s) {
  return Sizes{1 + static_cast<std::size_t>(s.num_ranks()),
               3 + static_cast<std::size_t>(s.num_ranks())};
}

}  // namespace

Window whole_window(const Schedule& s) {
  Window w;
  w.hi = s.num_blocks();
  w.sizes = initial_sizes(s);
  for (TransferId t = 0; t < s.num_transfers(); ++t)
    for_each_range(s, t, w.lo, w.hi, [&](BlockId, BlockId) { count_pair(w.sizes, s, t); });
  return w;
}

// Windows [0, m) and [m, blocks) are walked by the transfers with a block
// below m and by those with one from m on; m balances the larger of the two.
BlockId split_point(const Schedule& s, VerifySplit split) {
  const BlockId nb = s.num_blocks();
  const TransferId n = s.num_transfers();
  if (split == VerifySplit::never || nb < 2 || n == 0) return 0;
  if (split == VerifySplit::automatic &&
      (n < kParallelTransfers || std::thread::hardware_concurrency() < 2))
    return 0;
  // below[b]: transfers whose first block is b; above[b]: whose end is b.
  std::vector<TransferId> below(static_cast<std::size_t>(nb) + 1, 0);
  std::vector<TransferId> above(static_cast<std::size_t>(nb) + 1, 0);
  for (TransferId t = 0; t < n; ++t) {
    BlockId lo = nb;
    BlockId hi = 0;
    for (auto r = s.ranges_begin(t); r != s.ranges_end(t); ++r) {
      lo = std::min(lo, r->lo);
      hi = std::max(hi, r->hi);
    }
    ++below[static_cast<std::size_t>(lo)];
    ++above[static_cast<std::size_t>(hi)];
  }
  // first(m) = transfers with a block below m, second(m) = with one from m
  // on (no transfer ends at block 0).
  std::int64_t first = 0;
  std::int64_t second = n;
  BlockId best = 0;
  std::int64_t best_load = n + 1;
  for (BlockId m = 1; m < nb; ++m) {
    first += below[static_cast<std::size_t>(m - 1)];
    second -= above[static_cast<std::size_t>(m)];
    const std::int64_t load = std::max(first, second);
    if (load < best_load) {
      best_load = load;
      best = m;
    }
  }
  if (split == VerifySplit::automatic &&
      static_cast<double>(best_load) > kSplitShare * static_cast<double>(n))
    return 0;
  return best;
}

std::pair<Window, Window> split_windows(const Schedule& s, const Plan& plan, BlockId m) {
  std::pair<Window, Window> w;
  w.first.lo = 0;
  w.first.hi = m;
  w.second.lo = m;
  w.second.hi = s.num_blocks();
  const auto n = static_cast<std::size_t>(s.num_transfers());
  for (Window* x : {&w.first, &w.second}) {
    x->whole = false;
    x->sizes = initial_sizes(s);
    x->walk.reserve(n);  // address space; pages as the walk fills them
  }
  for (std::size_t k = 0; k < n; ++k) {
    const TransferId t = plan.at(k);
    for (Window* x : {&w.first, &w.second}) {
      bool in = false;
      for_each_range(s, t, x->lo, x->hi, [&](BlockId, BlockId) {
        in = true;
        count_pair(x->sizes, s, t);
      });
      if (in) x->walk.push_back(t);
    }
  }
  return w;
}

}  // namespace wafercoll::verify_detail
