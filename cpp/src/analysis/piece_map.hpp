// The verifier's cell states (verify.cpp): each rank's cells as runs of
// one state. Internal to the verifier; not part of the public headers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "contribution_sets.hpp"
#include "wafercoll/mapped_alloc.hpp"
#include "wafercoll/units.hpp"
#include "wafercoll/analysis/verify.hpp"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::verify_detail {

// Per-rank runs of cells with one state. A piece covers [lo, next piece's lo).
// A rank whose runs grow past the threshold turns *dense*: one state per block
// (the piece of block b is the b-th, its lo is b, so only the states are
// stored: 4 bytes a cell), never split or merged again, so a write costs O(1)
// instead of shifting the tail of a long vector (ring-like schedules leave
// every block of a rank in a state of its own). Runs of equal state in a
// dense rank are walked as one run where it matters (a write's old state),
// so what the verifier reports does not depend on the representation.
// A window of a few blocks is dense from the start, all its ranks' cells in
// one array (init()).
// The map covers a window of blocks [lo, hi) (all of them, unless the
// verification is split between threads by blocks: see verify()).

struct Piece {
  BlockId lo;
  std::int32_t state;  // a record id (forward pass) or a transfer id (reverse pass)
};

class PieceMap {
 public:
  // Piece i of a rank: its first block and its state (assignable).
  struct Ref {
    BlockId lo;
    std::int32_t& state;
  };
  // The pieces of one rank, valid until they are split or merged.
  class Pieces {
   public:
    Pieces(Piece* sparse, std::int32_t* dense, std::size_t n, BlockId lo)
        : sparse_(sparse), dense_(dense), n_(n), lo_(lo) {}
    std::size_t size() const { return n_; }
    Ref operator[](std::size_t i) const {
      if (dense_ != nullptr) return Ref{lo_ + static_cast<BlockId>(i), dense_[i]};
      return Ref{sparse_[i].lo, sparse_[i].state};
    }

   private:
    Piece* sparse_;
    std::int32_t* dense_;  // nullptr unless the rank is dense
    std::size_t n_;
    BlockId lo_;  // the window's first block
  };

  // Blocks [lo, hi) of `ranks` ranks, no pieces yet (assign_tail() sets
  // them, from each rank's first block on).
  void init(RankId ranks, BlockId lo, BlockId hi, std::int64_t dense_after) {
    lo_ = lo;
    hi_ = hi;
    blocks_ = hi - lo;
    dense_at_ = dense_after;
    slabs_.clear();
    slab_used_ = 0;
    dense_budget_ = kDenseBudget;
    all_ = nullptr;
    // A window of a few blocks is smaller dense than in pieces (a rank's
    // vector and its heap block take 40 bytes and more, a dense rank 4 a
    // block), and a dense cell is found without a pointer to follow (and
    // can be prefetched: verify.cpp). With the default threshold, windows of
    // at most 8 blocks start dense; none when the threshold says never,
    // all (within the budget) when always. Their cells are one array, rank
    // after rank, whose place is computed (no per-rank pointer or vector).
    const bool small = dense_after <= 0 || blocks_ <= kSmallWindow / dense_after;
    if (small && blocks_ > 0 && ranks > 0 && blocks_ * ranks <= dense_budget_) {
      slabs_.emplace_back(static_cast<std::size_t>(blocks_ * ranks));
      all_ = slabs_.back().data();
      dense_budget_ -= blocks_ * ranks;
      slab_used_ = slabs_.back().size();
      std::vector<std::vector<Piece>>().swap(pieces_);
      std::vector<std::int32_t*>().swap(dense_);
      return;
    }
    pieces_.assign(ranks, {});
    dense_.assign(ranks, nullptr);
  }
  // Rank r's cells from block b (in the window) to the window's end hold
  // `state`; at the start, each rank's first from the window's first block,
  // then in increasing b.
  void assign_tail(RankId r, BlockId b, std::int32_t state) {
    if (std::int32_t* d = cells(r)) {
      std::fill(d + (b - lo_), d + blocks_, state);
      return;
    }
    auto& v = pieces_[r];
    if (!v.empty() && v.back().lo == b) v.pop_back();
    v.push_back(Piece{b, state});
  }
  // The pieces of rank r.
  Pieces of(RankId r) {
    if (std::int32_t* d = cells(r))
      return Pieces(nullptr, d, static_cast<std::size_t>(blocks_), lo_);
    return Pieces(pieces_[r].data(), nullptr, pieces_[r].size(), lo_);
  }
  BlockId hi(RankId r, std::size_t i) const {
    if (cells(r) != nullptr) return lo_ + static_cast<BlockId>(i) + 1;
    return i + 1 < pieces_[r].size() ? pieces_[r][i + 1].lo : hi_;
  }
  // Start loading the piece holding block b, for a rank that is dense
  // (whose piece is found without reading memory); a hint, nothing else.
  void prefetch(RankId r, BlockId b) const {
    const std::int32_t* d = cells(r);
    if (d != nullptr && b >= lo_ && b < hi_) verify_detail::prefetch_line(d + (b - lo_));
  }
  // Index of the piece holding block b (in the window).
  std::size_t find(RankId r, BlockId b) const {
    if (cells(r) != nullptr) return static_cast<std::size_t>(b - lo_);
    const auto& v = pieces_[r];
    auto it = std::upper_bound(v.begin(), v.end(), b,
                               [](BlockId x, const Piece& p) { return x < p.lo; });
    return static_cast<std::size_t>(it - v.begin()) - 1;
  }
  // Make b the start of a piece; returns its index (the number of pieces
  // when b is the window's end).
  std::size_t split(RankId r, BlockId b) {
    if (cells(r) != nullptr) return static_cast<std::size_t>(std::min(b, hi_) - lo_);
    auto& v = pieces_[r];
    if (b >= hi_) return v.size();
    const std::size_t i = find(r, b);
    if (v[i].lo == b) return i;
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, Piece{b, v[i].state});
    return i + 1;
  }
  // Merge equal neighbours among pieces [first, last] (a dense rank keeps
  // one piece per block); a rank with many runs turns dense.
  void coalesce(RankId r, std::size_t first, std::size_t last) {
    if (cells(r) != nullptr) return;
    merge(r, first, last);
    if (static_cast<std::int64_t>(pieces_[r].size()) > dense_at_ && blocks_ <= dense_budget_)
      densify(r);
  }

 private:
  // Rank r's cells when it is dense, else nullptr.
  std::int32_t* cells(RankId r) const {
    if (all_ != nullptr) return all_ + static_cast<std::ptrdiff_t>(r) * blocks_;
    return dense_[r];
  }
  // Blocks x threshold up to which a window starts dense (init()).
  static constexpr std::int64_t kSmallWindow = 8 * kVerifyDenseAfter;
  // Most dense cells in all (4 bytes each: 512 MiB).
  static constexpr std::int64_t kDenseBudget = std::int64_t{1} << 27;
  // Cells of dense ranks are taken from slabs of at least kSlabCells, each
  // one mapping (mapped_alloc.hpp) whose pages become resident as ranks
  // take them and all go back when the map is dropped. One small vector per
  // rank instead stayed resident after the verification when the reverse
  // pass, on its own thread, had allocated it: freed into that thread's
  // malloc arena, it was not given back (ring allreduce on 4096 ranks: 67
  // MB, its 4096 x 4096 cells).
  static constexpr std::size_t kSlabCells = std::size_t{1} << 20;
  std::int32_t* take_cells() {
    const auto n = static_cast<std::size_t>(blocks_);
    if (slabs_.empty() || slab_used_ + n > slabs_.back().size()) {
      slabs_.emplace_back(std::max(n, kSlabCells));
      slab_used_ = 0;
    }
    std::int32_t* cells = slabs_.back().data() + slab_used_;
    slab_used_ += n;
    return cells;
  }
  void densify(RankId r) {
    auto& v = pieces_[r];
    std::int32_t* d = take_cells();
    for (std::size_t i = 0; i < v.size(); ++i)
      std::fill(d + (v[i].lo - lo_), d + (hi(r, i) - lo_), v[i].state);
    std::vector<Piece>().swap(v);
    dense_[r] = d;
    dense_budget_ -= blocks_;
  }
  void merge(RankId r, std::size_t first, std::size_t last) {
    auto& v = pieces_[r];
    if (first > 0) --first;
    last = std::min(last + 1, v.size());
    std::size_t out = first;
    for (std::size_t i = first + 1; i < last; ++i) {
      if (v[i].state == v[out].state) continue;
      v[++out] = v[i];
    }
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(out) + 1,
            v.begin() + static_cast<std::ptrdiff_t>(last));
  }

  BlockId lo_ = 0;      // the window's first block
  BlockId hi_ = 0;      // and its end
  BlockId blocks_ = 0;  // hi_ - lo_
  std::int64_t dense_at_ = kVerifyDenseAfter;
  std::vector<std::vector<Piece>> pieces_;       // sparse ranks (empty once dense)
  std::vector<std::int32_t*> dense_;  // dense ranks: one state per block, else nullptr
  std::vector<MappedVector<std::int32_t>> slabs_;  // their cells
  std::size_t slab_used_ = 0;  // cells taken from the last slab
  std::int64_t dense_budget_ = 0;
  std::int32_t* all_ = nullptr;  // a small window's cells, every rank dense (init())
};

}  // namespace wafercoll::verify_detail

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
