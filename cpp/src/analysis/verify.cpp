// The verifier: see verify.hpp for what it proves and the timing rules.
//
// Structure: four helpers, then the Verifier that uses them.
//  * SetPool interns contribution sets (over SetIndex), so a cell's state is one int and
//    "same contributions" is an integer comparison;
//  * HappensBefore (happens_before.hpp) answers "does a reach b in the dependency
//    DAG" with cheap rules first and a search only when they fail;
//  * PieceMap holds each rank's cells as runs of equal state;
//  * Records (records.hpp) holds who wrote which set over which record.
// The Verifier walks the transfers in dependency order (forward: reads,
// writes, write/write order), then backwards (reads against later writes),
// then checks the final state against the collective's postcondition.
// Errors are ScheduleErrors naming the transfer, rank and block, because a
// user's first question is which step of their algorithm is wrong.
#include "wafercoll/analysis/verify.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "contribution_sets.hpp"
#include "happens_before.hpp"
#include "records.hpp"
#include "wafercoll/errors.hpp"

namespace wafercoll {

namespace {

using verify_detail::ChainCover;
using verify_detail::HappensBefore;
using verify_detail::Interval;
using verify_detail::Records;
using verify_detail::SetPool;

// ---------------------------------------------------------------------------
// Per-rank runs of cells with one state. A piece covers [lo, next piece's lo).
// A rank whose runs grow past kDenseAt turns *dense*: one state per block
// (the piece of block b is the b-th, its lo is b, so only the states are
// stored: 4 bytes a cell), never split or merged again, so a write costs O(1)
// instead of shifting the tail of a long vector (ring-like schedules leave
// every block of a rank in a state of its own). Runs of equal state in a
// dense rank are walked as one run where it matters (a write's old state),
// so what the verifier reports does not depend on the representation.

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
    Pieces(Piece* sparse, std::int32_t* dense, std::size_t n)
        : sparse_(sparse), dense_(dense), n_(n) {}
    std::size_t size() const { return n_; }
    Ref operator[](std::size_t i) const {
      if (dense_ != nullptr) return Ref{static_cast<BlockId>(i), dense_[i]};
      return Ref{sparse_[i].lo, sparse_[i].state};
    }

   private:
    Piece* sparse_;
    std::int32_t* dense_;  // nullptr unless the rank is dense
    std::size_t n_;
  };

  void init(RankId ranks, BlockId blocks, std::int64_t dense_after) {
    blocks_ = blocks;
    dense_at_ = dense_after;
    pieces_.assign(ranks, {});
    dense_.assign(ranks, nullptr);
    slabs_.clear();
    slab_used_ = 0;
    dense_budget_ = kDenseBudget;
  }
  // The pieces of rank r.
  Pieces of(RankId r) {
    if (dense_[r] != nullptr)
      return Pieces(nullptr, dense_[r], static_cast<std::size_t>(blocks_));
    return Pieces(pieces_[r].data(), nullptr, pieces_[r].size());
  }
  // The pieces of a rank that is not dense (yet), to fill at the start.
  std::vector<Piece>& sparse(RankId r) { return pieces_[r]; }
  BlockId hi(RankId r, std::size_t i) const {
    if (dense_[r] != nullptr) return static_cast<BlockId>(i) + 1;
    return i + 1 < pieces_[r].size() ? pieces_[r][i + 1].lo : blocks_;
  }
  // Start loading the piece holding block b, for a rank that is dense
  // (whose piece is found without reading memory); a hint, nothing else.
  void prefetch(RankId r, BlockId b) const {
    if (dense_[r] != nullptr && b < blocks_) verify_detail::prefetch_line(dense_[r] + b);
  }
  // Index of the piece holding block b.
  std::size_t find(RankId r, BlockId b) const {
    if (dense_[r] != nullptr) return static_cast<std::size_t>(b);
    const auto& v = pieces_[r];
    auto it = std::upper_bound(v.begin(), v.end(), b,
                               [](BlockId x, const Piece& p) { return x < p.lo; });
    return static_cast<std::size_t>(it - v.begin()) - 1;
  }
  // Make b the start of a piece; returns its index (the number of pieces
  // when b == blocks).
  std::size_t split(RankId r, BlockId b) {
    if (dense_[r] != nullptr) return static_cast<std::size_t>(std::min(b, blocks_));
    auto& v = pieces_[r];
    if (b >= blocks_) return v.size();
    const std::size_t i = find(r, b);
    if (v[i].lo == b) return i;
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(i) + 1, Piece{b, v[i].state});
    return i + 1;
  }
  // Merge equal neighbours among pieces [first, last] (a dense rank keeps
  // one piece per block); a rank with many runs turns dense.
  void coalesce(RankId r, std::size_t first, std::size_t last) {
    if (dense_[r] != nullptr) return;
    merge(r, first, last);
    if (static_cast<std::int64_t>(pieces_[r].size()) > dense_at_ && blocks_ <= dense_budget_)
      densify(r);
  }

 private:
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
    for (std::size_t i = 0; i < v.size(); ++i) std::fill(d + v[i].lo, d + hi(r, i), v[i].state);
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

  BlockId blocks_ = 0;
  std::int64_t dense_at_ = kVerifyDenseAfter;
  std::vector<std::vector<Piece>> pieces_;       // sparse ranks (empty once dense)
  std::vector<std::int32_t*> dense_;  // dense ranks: one state per block, else nullptr
  std::vector<MappedVector<std::int32_t>> slabs_;  // their cells
  std::size_t slab_used_ = 0;  // cells taken from the last slab
  std::int64_t dense_budget_ = 0;
};

struct Segment {
  BlockId lo;
  BlockId hi;
  std::int32_t set;
};

// How messages name a cell.
std::string cell(RankId r, BlockId b) {
  return "block " + std::to_string(b) + " of rank " + std::to_string(r);
}

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

Sizes expected_sizes(const Schedule& s) {
  Sizes z{1 + static_cast<std::size_t>(s.num_ranks()), 3 + static_cast<std::size_t>(s.num_ranks())};
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    const auto pairs =
        static_cast<std::size_t>(s.num_dsts(t) * (s.ranges_end(t) - s.ranges_begin(t)));
    z.records += pairs;
    if (s.op(t) == Op::reduce) z.sets += pairs;
  }
  return z;
}

// One verification: the cells' states as records (who wrote which set),
// updated transfer by transfer in a topological order. Any valid order
// gives the same verdict: the happens-before checks make the result hold
// for every order the dependencies allow, not just this one.
class Verifier {
 public:
  Verifier(const Schedule& s, std::int64_t dense_after)
      : s_(s),
        // Index order is a topological order when every dependency points
        // back (the builders' schedules): then none is stored.
        order_(s.deps_point_backward() ? std::vector<TransferId>{} : topological_order(s)),
        parallel_(s.num_transfers() >= kParallelTransfers &&
                  std::thread::hardware_concurrency() > 1),
        cover_(s, order_),
        hb_(cover_),
        hb_rev_(cover_),
        dense_after_(dense_after),
        sets_(),
        records_(order_) {
    const Sizes z = expected_sizes(s);
    records_.reserve(z.records);
    sets_ = SetPool(3 + static_cast<std::size_t>(s.num_ranks()), z.sets);
  }

  VerifyReport run() {
    // The dependencies are in range and acyclic (the constructor's
    // topological order); without a stated collective that is all there is
    // to check: what the transfers compute is not specified.
    if (s_.collective().kind == CollectiveKind::unknown)
      throw ScheduleError("unverifiable",
                          "the schedule states no collective ('unknown'): its "
                          "dependencies are acyclic, but what its transfers compute "
                          "is not specified, so there is nothing to verify");
    // The backward pass reads only the schedule and the chain cover and
    // writes only its own state (next_write_, hb_rev_), so on a large
    // schedule it runs on a second thread beside the forward pass. Its
    // verdict counts only if the forward pass finds nothing, as when they
    // run one after the other; a failed forward pass stops it early. The
    // future joins the thread however run() is left.
    // Its cells start here, on this thread: one small list per rank,
    // allocated on the second thread, would be freed into that thread's
    // malloc arena, whose top malloc_trim does not give back (recursive
    // doubling on 262,144 ranks: 8 MB resident after the verification).
    start_reverse_pass();
    std::future<void> side;
    if (parallel_) side = std::async(std::launch::async, [this] { reverse_pass(); });
    try {
      forward_pass();
    } catch (...) {
      stop_.store(true, std::memory_order_relaxed);
      throw;
    }
    if (side.valid()) {
      side.get();
    } else {
      reverse_pass();
    }
    check_postcondition();
    VerifyReport rep;
    rep.transfers = s_.num_transfers();
    rep.steps = cover_.steps();
    rep.pieces_written = pieces_written_;
    rep.reachability_queries = hb_.queries() + hb_rev_.queries();
    return rep;
  }

 private:
  // How many transfers ahead of the walk the prefetches run: a transfer
  // takes some 100 ns, about one memory access. Measured on ring allreduce
  // at 10^7 transfers: 2, 4, 8 and 16 ahead gained alike (1.7 s to 1.2 s).
  static constexpr std::size_t kLookahead = 8;
  // From this many transfers a verification uses a second thread (the
  // simulator's threshold, simulate.cpp): starting it costs some 50 us,
  // the backward pass of 2^16 transfers about 2 ms.
  static constexpr TransferId kParallelTransfers = TransferId{1} << 16;

  // Hints: they change nothing, but let the memory accesses of a walk
  // overlap. Where cells and sets sit is known ahead: the cells' pieces in
  // a dense rank, and the index slot of a reduce's result, which hashes the
  // union of the states its cells hold some transfers before (the union
  // forward(t) computes unless a transfer in between writes those cells).
  // Without them each new set's lookup waited for memory (about a third of
  // verifying a ring schedule of 10^7 transfers).
  void prefetch_cells(const PieceMap& map, TransferId t) const {
    if (s_.ranges_begin(t) == s_.ranges_end(t)) return;
    const BlockId b = s_.ranges_begin(t)->lo;
    map.prefetch(s_.src(t), b);
    map.prefetch(*s_.dsts_begin(t), b);
  }
  void prefetch_union(TransferId t) {
    if (!sets_.worth_prefetching()) return;
    if (s_.op(t) != Op::reduce || s_.ranges_begin(t) == s_.ranges_end(t)) return;
    const BlockId b = s_.ranges_begin(t)->lo;
    const RankId src = s_.src(t);
    const RankId dst = *s_.dsts_begin(t);
    const std::int32_t in = cells_.of(src)[cells_.find(src, b)].state;
    const std::int32_t old = cells_.of(dst)[cells_.find(dst, b)].state;
    sets_.prefetch_union(records_[old].set, records_[in].set);
  }

  // Position k of the topological order.
  TransferId at(std::size_t k) const {
    return order_.empty() ? static_cast<TransferId>(k) : order_[k];
  }

  void forward_pass() {
    init_state();
    const auto n = static_cast<std::size_t>(s_.num_transfers());
    for (std::size_t k = 0; k < n; ++k) {
      if (k + 2 * kLookahead < n) prefetch_cells(cells_, at(k + 2 * kLookahead));
      if (k + kLookahead < n) prefetch_union(at(k + kLookahead));
      forward(at(k), static_cast<std::int32_t>(k));
      if ((k & 4095) == 4095) poll_interrupt();
    }
  }

  std::int32_t initial_record(std::int32_t set) {
    return records_.initial(set);
  }

  // Every cell starts with a writer-less record: the participant's own
  // contribution where the collective gives it one, else the empty set.
  void init_state() {
    const RankId p = s_.num_ranks();
    const BlockId nb = s_.num_blocks();
    const Collective& c = s_.collective();
    cells_.init(p, nb, dense_after_);
    const std::int32_t empty = initial_record(0);
    std::vector<Interval> part;
    for (RankId r = 0; r < p; ++r) {
      if ((r & 4095) == 4095) poll_interrupt();
      if (!s_.participates(r)) continue;
      if (!part.empty() && part.back().hi == r) {
        part.back().hi = r + 1;
      } else {
        part.push_back(Interval{r, r + 1});
      }
    }
    full_ = sets_.intern(part);
    for (RankId r = 0; r < p; ++r) {
      // Owners of allgather and moved blocks are set per block run below.
      const bool holds = !by_owner(c.kind) && s_.holds_input(r, 0);
      cells_.sparse(r).push_back(Piece{0, holds ? initial_record(sets_.singleton(r)) : empty});
    }
    if (by_owner(c.kind)) {
      // Owners hold their own blocks: one piece per run of equal owners.
      for (BlockId b = 0; b < nb;) {
        BlockId e = b;
        while (e < nb && c.owners[e] == c.owners[b]) ++e;
        const RankId o = c.owners[b];
        auto& v = cells_.sparse(o);
        if (v.back().lo == b) v.pop_back();
        v.push_back(Piece{b, initial_record(sets_.singleton(o))});
        if (e < nb) v.push_back(Piece{e, empty});
        b = e;
      }
    }
  }

  // The record holding the value that transfer t reads from a cell whose
  // latest record is `rec`, after checking that no concurrent write to the
  // cell can land before t starts.
  std::int32_t visible(std::int32_t rec, TransferId t, RankId rank, BlockId block) {
    TransferId first_concurrent = -1;
    for (TransferId w; (w = records_.writer(rec)) >= 0 && !hb_.reaches(w, t);) {
      first_concurrent = w;
      rec = records_[rec].prev;
    }
    if (first_concurrent >= 0) {
      for (const TransferId* d = s_.deps_begin(t); d != s_.deps_end(t); ++d) {
        if (!hb_.reaches(*d, first_concurrent))
          throw ScheduleError(
              "race",
              "race: transfer " + std::to_string(t) + " reads " + cell(rank, block) +
                  ", which transfer " + std::to_string(first_concurrent) +
                  " writes concurrently and may complete before transfer " +
                  std::to_string(t) + " starts (its dependency " + std::to_string(*d) +
                  " does not happen before transfer " + std::to_string(first_concurrent) + ")",
              t, rank, block);
      }
    }
    return rec;
  }

  // Switch cells (schedule.hpp): a switch accumulates atomically, so two
  // reductions into one of its cells need not be ordered; every other pair
  // of accesses (a copy and any write, a read and any write) must be. A
  // cell's history since its last copy (or its initial value, the *base*)
  // is a group of reductions: the records from the latest back to the base.
  // A read must come after every write of the group and the base (then it
  // sees the latest record's set, whatever order the reductions land in);
  // a write must come after every read recorded on them, and a copy after
  // every write of the group as well. Reads before the base were ordered
  // before the base when the base was written. Stricter than the rule for
  // ordinary cells (no read may overlap a later write), and what a switch
  // buffer needs: it is reused only once its result has been sent.
  struct SwitchRead {
    TransferId reader;
    BlockId lo, hi;
  };

  [[noreturn]] void switch_race(TransferId first, TransferId second, RankId r, BlockId b,
                                const char* what) {
    throw ScheduleError("race",
                        "race: transfer " + std::to_string(second) + " " + what + " block " +
                            std::to_string(b) + " of switch rank " + std::to_string(r) +
                            ", but transfer " + std::to_string(first) +
                            " may still be in flight there (only reductions into a switch "
                            "may overlap; add a dependency)",
                        second, r, b);
  }

  // Transfer t reads cells [lo, hi) of switch rank r, whose latest record is rec.
  std::int32_t switch_read(std::int32_t rec, TransferId t, RankId r, BlockId lo, BlockId hi) {
    for (std::int32_t m = rec; m >= 0; m = records_[m].prev) {
      const TransferId w = records_.writer(m);
      if (w < 0) break;
      if (!hb_.reaches(w, t)) switch_race(w, t, r, lo, "reads");
      if (s_.op(w) == Op::copy) break;
    }
    switch_reads_[rec].push_back(SwitchRead{t, lo, hi});
    return records_[rec].set;
  }

  // Transfer t writes cells [lo, hi) of switch rank r, whose latest record is rec.
  void switch_write(std::int32_t rec, TransferId t, RankId r, BlockId lo, BlockId hi) {
    const bool copy = s_.op(t) == Op::copy;
    for (std::int32_t m = rec; m >= 0; m = records_[m].prev) {
      if (auto it = switch_reads_.find(m); it != switch_reads_.end())
        for (const SwitchRead& x : it->second)
          if (x.lo < hi && lo < x.hi && !hb_.reaches(x.reader, t))
            switch_race(x.reader, t, r, std::max(lo, x.lo), "writes");
      const TransferId w = records_.writer(m);
      if (w < 0) break;
      const bool base = s_.op(w) == Op::copy;
      if ((copy || base) && !hb_.reaches(w, t)) switch_race(w, t, r, lo, "writes");
      if (base) break;
    }
  }

  // One transfer in dependency order: read the source's visible sets
  // (never empty), then write each destination, checking that the write
  // happens-after the cell's previous write and, for a reduce, that the
  // sets are disjoint (no contribution counted twice).
  void forward(TransferId t, std::int32_t k) {
    const RankId src = s_.src(t);
    segs_.clear();
    for (auto r = s_.ranges_begin(t); r != s_.ranges_end(t); ++r) {
      const auto pieces = cells_.of(src);
      for (std::size_t i = cells_.find(src, r->lo); i < pieces.size() && pieces[i].lo < r->hi;
           ++i) {
        const BlockId lo = std::max(pieces[i].lo, r->lo);
        const BlockId hi = std::min(cells_.hi(src, i), r->hi);
        const std::int32_t set =
            s_.is_switch(src) ? switch_read(pieces[i].state, t, src, lo, hi)
                              : records_[visible(pieces[i].state, t, src, lo)].set;
        if (set == 0)
          throw ScheduleError("empty_read",
                              "transfer " + std::to_string(t) + " sends " + cell(src, lo) +
                                  ", which holds no data once the transfer's dependencies "
                                  "are complete (it is sent before it has arrived)",
                              t, src, lo);
        if (!segs_.empty() && segs_.back().hi == lo && segs_.back().set == set) {
          segs_.back().hi = hi;
        } else {
          segs_.push_back(Segment{lo, hi, set});
        }
      }
    }
    const bool reduce = s_.op(t) == Op::reduce;
    if (reduce && moves_blocks(s_.collective().kind))
      throw ScheduleError("unexpected",
                          "transfer " + std::to_string(t) + " reduces into " +
                              cell(*s_.dsts_begin(t), segs_.front().lo) + ", but the " +
                              to_string(s_.collective().kind) +
                              " moves blocks and reduces nothing (use op 'copy')",
                          t, *s_.dsts_begin(t), segs_.front().lo);
    for (const RankId* dp = s_.dsts_begin(t); dp != s_.dsts_end(t); ++dp) {
      const RankId d = *dp;
      const bool switch_dst = s_.is_switch(d);
      TransferId ordered_writer = -1;  // last writer already checked against t
      for (const Segment& seg : segs_) {
        const std::size_t first = cells_.split(d, seg.lo);
        const std::size_t end = cells_.split(d, seg.hi);
        const auto pieces = cells_.of(d);
        std::int32_t last_old = -1;
        std::int32_t last_new = -1;
        for (std::size_t i = first; i < end; ++i) {
          const std::int32_t old = pieces[i].state;
          const TransferId w = records_.writer(old);
          if (switch_dst) {
            if (old != last_old) switch_write(old, t, d, pieces[i].lo, cells_.hi(d, i));
          } else if (w >= 0 && w != ordered_writer) {
            if (!hb_.reaches(w, t))
              throw ScheduleError(
                  "race", "race: transfers " + std::to_string(w) + " and " +
                              std::to_string(t) + " both write " + cell(d, pieces[i].lo) +
                              " and neither depends on the other",
                  t, d, pieces[i].lo);
            ordered_writer = w;
          }
          if (old == last_old) {
            pieces[i].state = last_new;
            continue;
          }
          std::int32_t set = seg.set;
          if (reduce) {
            RankId shared = -1;
            set = sets_.disjoint_union(records_[old].set, seg.set, shared);
            if (set < 0)
              throw ScheduleError(
                  "double_count",
                  "transfer " + std::to_string(t) + " reduces into " + cell(d, pieces[i].lo) +
                      " data that already holds the contribution of rank " +
                      std::to_string(shared) + " (it would be counted twice)",
                  t, d, pieces[i].lo);
          }
          last_old = old;
          last_new = records_.add(k, set, old);
          pieces[i].state = last_new;
          ++pieces_written_;
        }
        cells_.coalesce(d, first, end == 0 ? 0 : end - 1);
      }
    }
  }

  // Reads against later writes: walking the transfers backwards, each cell
  // remembers the next transfer that writes it.
  void start_reverse_pass() {
    next_write_.init(s_.num_ranks(), s_.num_blocks(), dense_after_);
    for (RankId r = 0; r < s_.num_ranks(); ++r) next_write_.sparse(r).push_back(Piece{0, -1});
  }
  void reverse_pass() {
    TransferId bad = -1;
    RankId bad_rank = -1;
    BlockId bad_block = -1;
    TransferId bad_writer = -1;
    for (std::size_t k = static_cast<std::size_t>(s_.num_transfers()); k-- > 0;) {
      if ((k & 4095) == 0) {
        if (stop_.load(std::memory_order_relaxed)) return;
        poll_interrupt();
      }
      if (k >= kLookahead) prefetch_cells(next_write_, at(k - kLookahead));
      const TransferId t = at(k);
      const RankId src = s_.src(t);
      TransferId checked = -1;
      for (auto r = s_.ranges_begin(t); r != s_.ranges_end(t); ++r) {
        const auto pieces = next_write_.of(src);
        for (std::size_t i = next_write_.find(src, r->lo);
             i < pieces.size() && pieces[i].lo < r->hi; ++i) {
          const TransferId w = pieces[i].state;
          if (w < 0 || w == checked || hb_rev_.reaches(t, w)) continue;
          for (const TransferId* d = s_.deps_begin(t); d != s_.deps_end(t); ++d) {
            if (!hb_rev_.reaches(*d, w)) {
              bad = t;
              bad_rank = src;
              bad_block = std::max(pieces[i].lo, r->lo);
              bad_writer = w;
              break;
            }
          }
          checked = w;
        }
      }
      for (const RankId* dp = s_.dsts_begin(t); dp != s_.dsts_end(t); ++dp) {
        for (auto r = s_.ranges_begin(t); r != s_.ranges_end(t); ++r) {
          const std::size_t first = next_write_.split(*dp, r->lo);
          const std::size_t end = next_write_.split(*dp, r->hi);
          const auto pieces = next_write_.of(*dp);
          for (std::size_t i = first; i < end; ++i) pieces[i].state = t;
          next_write_.coalesce(*dp, first, end - 1);
        }
      }
    }
    if (bad >= 0)
      throw ScheduleError(
          "race", "race: transfer " + std::to_string(bad) + " reads " +
                      cell(bad_rank, bad_block) + ", which transfer " +
                      std::to_string(bad_writer) +
                      " overwrites without waiting for the read (add a dependency)",
          bad, bad_rank, bad_block);
  }

  // The cells [lo, hi) of rank r must end holding exactly `want`; the error
  // names the first missing (or unexpected) contribution, which points at
  // the step that lost (or duplicated) it.
  void expect(RankId r, BlockId lo, BlockId hi, std::int32_t want) {
    const auto pieces = cells_.of(r);
    for (std::size_t i = cells_.find(r, lo); i < pieces.size() && pieces[i].lo < hi; ++i) {
      const Records::Record& rec = records_[pieces[i].state];
      if (rec.set == want) continue;
      const BlockId b = std::max(lo, pieces[i].lo);
      const TransferId writer = records_.writer(pieces[i].state);
      const std::string last =
          writer >= 0 ? " (last written by transfer " + std::to_string(writer) + ")"
                      : " (never written)";
      const RankId missing = sets_.first_difference(want, rec.set);
      if (missing >= 0)
        throw ScheduleError("missing",
                            cell(r, b) + " ends without the contribution of rank " +
                                std::to_string(missing) + ": it holds " +
                                std::to_string(sets_.size(rec.set)) + " of the " +
                                std::to_string(sets_.size(want)) + " required" + last,
                            writer, r, b);
      const RankId extra = sets_.first_difference(rec.set, want);
      throw ScheduleError("unexpected",
                          cell(r, b) + " ends holding the contribution of rank " +
                              std::to_string(extra) + ", which the " +
                              to_string(s_.collective().kind) + " does not put there" + last,
                          writer, r, b);
    }
  }

  // What each kind of collective leaves where: every participant's input at
  // the root (reduce), at every participant (allreduce) or at each block's
  // owner (reduce_scatter); the root's input at every participant
  // (broadcast); each block's owner's input at every participant (allgather).
  void check_postcondition() {
    const Collective& c = s_.collective();
    const RankId p = s_.num_ranks();
    const BlockId nb = s_.num_blocks();
    switch (c.kind) {
      case CollectiveKind::reduce:
        expect(c.root, 0, nb, full_);
        break;
      case CollectiveKind::allreduce:
        for (RankId r = 0; r < p; ++r) {
          if ((r & 4095) == 4095) poll_interrupt();
          if (s_.participates(r)) expect(r, 0, nb, full_);
        }
        break;
      case CollectiveKind::broadcast: {
        const std::int32_t root = sets_.singleton(c.root);
        for (RankId r = 0; r < p; ++r)
          if (s_.participates(r)) expect(r, 0, nb, root);
        break;
      }
      case CollectiveKind::reduce_scatter:
      case CollectiveKind::allgather: {
        std::vector<std::int32_t> single(p, -1);
        for (BlockId b = 0; b < nb;) {
          BlockId e = b;
          while (e < nb && c.owners[e] == c.owners[b]) ++e;
          const RankId o = c.owners[b];
          if (c.kind == CollectiveKind::reduce_scatter) {
            expect(o, b, e, full_);
          } else {
            if (single[o] < 0) single[o] = sets_.singleton(o);
            for (RankId r = 0; r < p; ++r)
              if (s_.participates(r)) expect(r, b, e, single[o]);
          }
          b = e;
        }
        break;
      }
      case CollectiveKind::alltoall:
      case CollectiveKind::alltoallv:
      case CollectiveKind::gather:
      case CollectiveKind::scatter:
        check_moved();
        break;
      case CollectiveKind::unknown: break;  // refused by run()
    }
  }

  static bool by_owner(CollectiveKind k) {
    return k == CollectiveKind::allgather || moves_blocks(k);
  }

  // Every block of at least one byte ends at its target holding its
  // owner's input, and one that moves arrives there exactly once (a second
  // copy of the same data is a wasted transfer the collective does not
  // need, and usually a sign of a wrong index map).
  void check_moved() {
    const Collective& c = s_.collective();
    const BlockId nb = s_.num_blocks();
    std::vector<std::int32_t> single(s_.num_ranks(), -1);
    for (BlockId b = 0; b < nb; ++b) {
      if ((b & 4095) == 4095) poll_interrupt();
      // A block of no bytes carries nothing (an alltoallv's zero entry):
      // it need not arrive.
      if (s_.block_bytes()[b] == 0) continue;
      const RankId o = c.owners[b];
      const RankId t = c.targets[b];
      if (single[o] < 0) single[o] = sets_.singleton(o);
      expect(t, b, b + 1, single[o]);
      const auto pieces = cells_.of(t);
      std::int32_t rec = pieces[cells_.find(t, b)].state;
      std::int64_t writes = 0;
      TransferId later = -1;
      for (; rec >= 0 && records_.writer(rec) >= 0; rec = records_[rec].prev) {
        if (writes == 0) later = records_.writer(rec);
        ++writes;
      }
      // A block already at its target may be rewritten with itself (an
      // imported program copies its own chunk from input to output).
      if (o != t && writes > 1)
        throw ScheduleError("duplicate",
                            "block " + std::to_string(b) + " (rank " + std::to_string(o) +
                                " to rank " + std::to_string(t) + ") arrives at " +
                                cell(t, b) + " " + std::to_string(writes) +
                                " times; a " + to_string(c.kind) +
                                " delivers each block once (the last write is transfer " +
                                std::to_string(later) + ")",
                            later, t, b);
    }
  }

  const Schedule& s_;
  std::vector<TransferId> order_;  // empty: index order
  bool parallel_;
  ChainCover cover_;
  HappensBefore hb_;      // the forward pass's questions
  HappensBefore hb_rev_;  // the backward pass's
  std::atomic<bool> stop_{false};
  std::int64_t dense_after_;
  SetPool sets_;
  Records records_;
  PieceMap cells_;
  PieceMap next_write_;
  std::vector<Segment> segs_;
  std::unordered_map<std::int32_t, std::vector<SwitchRead>> switch_reads_;  // by record
  std::int32_t full_ = 0;
  std::int64_t pieces_written_ = 0;
};

// Schedules of at least this many transfers give the verifier's freed
// memory back to the system (verify()); below, it is a few MB at most.
constexpr TransferId kTrimAfterTransfers = TransferId{1} << 20;

}  // namespace

VerifyReport verify(const Schedule& schedule, std::int64_t dense_after) {
  VerifyReport report = Verifier(schedule, dense_after).run();
  // The verifier's state (tens of bytes per transfer, on two threads' heaps)
  // is freed now, but the C library keeps much of it for later allocations,
  // which the simulator (huge_alloc.hpp, pages of its own) does not make:
  // the pages are handed back, so that what follows does not add its peak
  // to them (ring allreduce on ring(4096), 33 M transfers: 67 MB).
#if defined(__GLIBC__)
  if (schedule.num_transfers() >= kTrimAfterTransfers) malloc_trim(0);
#endif
  return report;
}

}  // namespace wafercoll
