// The verifier: see verify.hpp for what it proves and the timing rules.
//
// Structure: four helpers, then the Verifier that uses them.
//  * SetPool interns contribution sets (over SetIndex), so a cell's state is one int and
//    "same contributions" is an integer comparison;
//  * HappensBefore (happens_before.hpp) answers "does a reach b in the dependency
//    DAG" with cheap rules first and a search only when they fail;
//  * PieceMap (piece_map.hpp) holds each rank's cells as runs of equal state;
//  * Records (records.hpp) holds who wrote which set over which record.
// A Verifier tracks the cells of a window of blocks (windows.hpp): all of
// them, or half when a large schedule is split by blocks between two
// threads (verify(), below). It walks the transfers in dependency order
// (forward: reads, writes, write/write order), then backwards (reads
// against later writes), then checks the final state against the
// collective's postcondition.
// Errors are ScheduleErrors naming the transfer, rank and block, because a
// user's first question is which step of their algorithm is wrong.
#include "wafercoll/analysis/verify.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "contribution_sets.hpp"
#include "happens_before.hpp"
#include "piece_map.hpp"
#include "records.hpp"
#include "windows.hpp"
#include "wafercoll/errors.hpp"

namespace wafercoll {

namespace {

using verify_detail::for_each_range;
using verify_detail::HappensBefore;
using verify_detail::Interval;
using verify_detail::kParallelTransfers;
using verify_detail::Piece;
using verify_detail::PieceMap;
using verify_detail::Plan;
using verify_detail::Records;
using verify_detail::SetPool;
using verify_detail::split_point;
using verify_detail::split_windows;
using verify_detail::Window;
using verify_detail::whole_window;

struct Segment {
  BlockId lo;
  BlockId hi;
  std::int32_t set;
};

// How messages name a cell.
std::string cell(RankId r, BlockId b) {
  return "block " + std::to_string(b) + " of rank " + std::to_string(r);
}

// One verification: the cells' states as records (who wrote which set),
// updated transfer by transfer in a topological order. Any valid order
// gives the same verdict: the happens-before checks make the result hold
// for every order the dependencies allow, not just this one.
class Verifier {
 public:
  // `stop`: set by another verifier of the same schedule that failed (the
  // walks then end early); `plan` and `stop` must outlive the verifier. The
  // plan's chain cover need not be made yet: start() does not ask it, and
  // use_cover() takes it before the walks.
  Verifier(const Schedule& s, const Plan& plan, Window window, std::int64_t dense_after,
           std::atomic<bool>& stop)
      : s_(s),
        plan_(plan),
        win_(std::move(window)),
        walk_(win_.whole ? plan.walk() : win_.walk.data()),
        steps_(win_.whole ? static_cast<std::size_t>(s.num_transfers()) : win_.walk.size()),
        stop_(stop),
        dense_after_(dense_after),
        sets_(),
        records_(walk_) {
    records_.reserve(win_.sizes.records);
    sets_ = SetPool(3 + static_cast<std::size_t>(s.num_ranks()), win_.sizes.sets);
  }

  // The cells' starting state, made by the thread that calls it: one small
  // list per rank, allocated on a second thread, would be freed into that
  // thread's malloc arena, whose top malloc_trim does not give back
  // (recursive doubling on 262,144 ranks: 8 MB resident after the
  // verification).
  void start() {
    start_reverse_pass();
    init_state();
  }
  // The plan's chain cover, once made: the walks' questions go to it.
  void use_cover() {
    hb_.emplace(plan_.cover());
    hb_rev_.emplace(plan_.cover());
  }

  // After start() and use_cover(), the whole verification on this thread,
  // the backward pass beside it on a second one when `beside`.
  void run(bool beside) {
    // The backward pass reads only the schedule and the chain cover and
    // writes only its own state (next_write_, hb_rev_), so on a large
    // schedule it runs on a second thread beside the forward pass. Its
    // verdict counts only if the forward pass finds nothing, as when they
    // run one after the other; a failed forward pass stops it early. The
    // future joins the thread however run() is left.
    std::future<void> side;
    if (beside) side = std::async(std::launch::async, [this] { reverse_pass(); });
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
  }

  // After start(), perhaps on another thread: both passes, then the end state.
  void finish() {
    forward_pass();
    reverse_pass();
    check_postcondition();
  }

  // Thrown by a walk that another verifier's failure made pointless.
  struct Stopped {};

  // Work done (the report's measures).
  std::int64_t pieces_written() const { return pieces_written_; }
  std::int64_t queries() const { return hb_->queries() + hb_rev_->queries(); }

 private:
  // How many transfers ahead of the walk the prefetches run: a transfer
  // takes some 100 ns, about one memory access. Measured on ring allreduce
  // at 10^7 transfers: 2, 4, 8 and 16 ahead gained alike (1.7 s to 1.2 s).
  static constexpr std::size_t kLookahead = 8;

  // Hints: they change nothing, but let the memory accesses of a walk
  // overlap. Where cells and sets sit is known ahead: the cells' pieces in
  // a dense rank, and the index slot of a reduce's result, which hashes the
  // union of the states its cells hold some transfers before (the union
  // forward(t) computes unless a transfer in between writes those cells).
  // Without them each new set's lookup waited for memory (about a third of
  // verifying a ring schedule of 10^7 transfers).
  void prefetch_cells(const PieceMap& map, TransferId t) const {
    if (s_.ranges_begin(t) == s_.ranges_end(t)) return;
    const BlockId b = s_.ranges_begin(t)->lo;  // outside the window: no hint
    map.prefetch(s_.src(t), b);
    map.prefetch(*s_.dsts_begin(t), b);
  }
  void prefetch_union(TransferId t) {
    if (!sets_.worth_prefetching()) return;
    if (s_.op(t) != Op::reduce || s_.ranges_begin(t) == s_.ranges_end(t)) return;
    const BlockId b = s_.ranges_begin(t)->lo;
    if (b < win_.lo || b >= win_.hi) return;
    const RankId src = s_.src(t);
    const RankId dst = *s_.dsts_begin(t);
    const std::int32_t in = cells_.of(src)[cells_.find(src, b)].state;
    const std::int32_t old = cells_.of(dst)[cells_.find(dst, b)].state;
    sets_.prefetch_union(records_[old].set, records_[in].set);
  }

  // Position k of the walk.
  TransferId at(std::size_t k) const {
    return walk_ == nullptr ? static_cast<TransferId>(k) : walk_[k];
  }

  void poll(std::size_t k) {
    if ((k & 4095) != 4095) return;
    if (stop_.load(std::memory_order_relaxed)) throw Stopped{};
    poll_interrupt();
  }

  void forward_pass() {
    const std::size_t n = steps_;
    for (std::size_t k = 0; k < n; ++k) {
      if (k + 2 * kLookahead < n) prefetch_cells(cells_, at(k + 2 * kLookahead));
      if (k + kLookahead < n) {
        prefetch_union(at(k + kLookahead));
        hb_->prefetch_deps(at(k + kLookahead));
      }
      forward(at(k), static_cast<std::int32_t>(k));
      poll(k);
    }
  }

  std::int32_t initial_record(std::int32_t set) {
    return records_.initial(set);
  }

  // Every cell starts with a writer-less record: the participant's own
  // contribution where the collective gives it one, else the empty set.
  void init_state() {
    const RankId p = s_.num_ranks();
    const Collective& c = s_.collective();
    cells_.init(p, win_.lo, win_.hi, dense_after_);
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
      cells_.assign_tail(r, win_.lo, holds ? initial_record(sets_.singleton(r)) : empty);
    }
    if (by_owner(c.kind)) {
      // Owners hold their own blocks: one piece per run of equal owners.
      const BlockId nb = win_.hi;
      for (BlockId b = win_.lo; b < nb;) {
        BlockId e = b;
        while (e < nb && c.owners[e] == c.owners[b]) ++e;
        const RankId o = c.owners[b];
        cells_.assign_tail(o, b, initial_record(sets_.singleton(o)));
        if (e < nb) cells_.assign_tail(o, e, empty);
        b = e;
      }
    }
  }

  // The record holding the value that transfer t reads from a cell whose
  // latest record is `rec`, after checking that no concurrent write to the
  // cell can land before t starts.
  std::int32_t visible(std::int32_t rec, TransferId t, RankId rank, BlockId block) {
    TransferId first_concurrent = -1;
    for (TransferId w; (w = records_.writer(rec)) >= 0 && !hb_->reaches(w, t);) {
      first_concurrent = w;
      rec = records_[rec].prev;
    }
    if (first_concurrent >= 0) {
      for (const TransferId* d = s_.deps_begin(t); d != s_.deps_end(t); ++d) {
        if (!hb_->reaches(*d, first_concurrent))
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
      if (!hb_->reaches(w, t)) switch_race(w, t, r, lo, "reads");
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
          if (x.lo < hi && lo < x.hi && !hb_->reaches(x.reader, t))
            switch_race(x.reader, t, r, std::max(lo, x.lo), "writes");
      const TransferId w = records_.writer(m);
      if (w < 0) break;
      const bool base = s_.op(w) == Op::copy;
      if ((copy || base) && !hb_->reaches(w, t)) switch_race(w, t, r, lo, "writes");
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
    for_each_range(s_, t, win_.lo, win_.hi, [&](BlockId rlo, BlockId rhi) {
      const auto pieces = cells_.of(src);
      for (std::size_t i = cells_.find(src, rlo); i < pieces.size() && pieces[i].lo < rhi;
           ++i) {
        const BlockId lo = std::max(pieces[i].lo, rlo);
        const BlockId hi = std::min(cells_.hi(src, i), rhi);
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
    });
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
            if (!hb_->reaches(w, t))
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
    next_write_.init(s_.num_ranks(), win_.lo, win_.hi, dense_after_);
    for (RankId r = 0; r < s_.num_ranks(); ++r)
      next_write_.assign_tail(r, win_.lo, -1);
  }
  void reverse_pass() {
    TransferId bad = -1;
    RankId bad_rank = -1;
    BlockId bad_block = -1;
    TransferId bad_writer = -1;
    for (std::size_t k = steps_; k-- > 0;) {
      if ((k & 4095) == 0) {
        if (stop_.load(std::memory_order_relaxed)) {
          if (win_.whole) return;  // the forward pass failed, and throws
          throw Stopped{};
        }
        poll_interrupt();
      }
      if (k >= kLookahead) prefetch_cells(next_write_, at(k - kLookahead));
      const TransferId t = at(k);
      const RankId src = s_.src(t);
      TransferId checked = -1;
      for_each_range(s_, t, win_.lo, win_.hi, [&](BlockId rlo, BlockId rhi) {
        const auto pieces = next_write_.of(src);
        for (std::size_t i = next_write_.find(src, rlo);
             i < pieces.size() && pieces[i].lo < rhi; ++i) {
          const TransferId w = pieces[i].state;
          if (w < 0 || w == checked || hb_rev_->reaches(t, w)) continue;
          for (const TransferId* d = s_.deps_begin(t); d != s_.deps_end(t); ++d) {
            if (!hb_rev_->reaches(*d, w)) {
              bad = t;
              bad_rank = src;
              bad_block = std::max(pieces[i].lo, rlo);
              bad_writer = w;
              break;
            }
          }
          checked = w;
        }
      });
      for (const RankId* dp = s_.dsts_begin(t); dp != s_.dsts_end(t); ++dp) {
        for_each_range(s_, t, win_.lo, win_.hi, [&](BlockId rlo, BlockId rhi) {
          const std::size_t first = next_write_.split(*dp, rlo);
          const std::size_t end = next_write_.split(*dp, rhi);
          const auto pieces = next_write_.of(*dp);
          for (std::size_t i = first; i < end; ++i) pieces[i].state = t;
          next_write_.coalesce(*dp, first, end - 1);
        });
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
    const BlockId lo = win_.lo;
    const BlockId nb = win_.hi;
    switch (c.kind) {
      case CollectiveKind::reduce:
        expect(c.root, lo, nb, full_);
        break;
      case CollectiveKind::allreduce:
        for (RankId r = 0; r < p; ++r) {
          if ((r & 4095) == 4095) poll_interrupt();
          if (s_.participates(r)) expect(r, lo, nb, full_);
        }
        break;
      case CollectiveKind::broadcast: {
        const std::int32_t root = sets_.singleton(c.root);
        for (RankId r = 0; r < p; ++r)
          if (s_.participates(r)) expect(r, lo, nb, root);
        break;
      }
      case CollectiveKind::reduce_scatter:
      case CollectiveKind::allgather: {
        std::vector<std::int32_t> single(p, -1);
        for (BlockId b = lo; b < nb;) {
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
      case CollectiveKind::unknown: break;  // refused by verify()
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
    std::vector<std::int32_t> single(s_.num_ranks(), -1);
    for (BlockId b = win_.lo; b < win_.hi; ++b) {
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
  const Plan& plan_;
  Window win_;
  const TransferId* walk_;  // the plan's order or the window's walk (nullptr: index order)
  std::size_t steps_;                    // the walk's length
  std::optional<HappensBefore> hb_;      // the forward pass's questions (use_cover())
  std::optional<HappensBefore> hb_rev_;  // the backward pass's
  std::atomic<bool>& stop_;
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

// Both windows of a split, one per thread. False when either found the
// schedule wrong (its error is not the one to report: see verify()).
bool verify_split(const Schedule& s, const Plan& plan, std::pair<Window, Window> windows,
                  std::int64_t dense_after, VerifyReport& rep) {
  auto& [w0, w1] = windows;
  std::atomic<bool> stop{false};
  Verifier a(s, plan, std::move(w0), dense_after, stop);
  Verifier b(s, plan, std::move(w1), dense_after, stop);
  // Both start here: their first lists on this thread's heap (see run()).
  a.start();
  b.start();
  a.use_cover();
  b.use_cover();
  const auto guarded = [&stop](Verifier& v) {
    try {
      v.finish();
      return true;
    } catch (const ScheduleError&) {
      stop.store(true, std::memory_order_relaxed);
      return false;
    } catch (...) {  // stopped by the other, or interrupted: noted, then passed on
      stop.store(true, std::memory_order_relaxed);
      throw;
    }
  };
  std::future<bool> side = std::async(std::launch::async, [&] { return guarded(b); });
  bool ok = false;
  std::exception_ptr failure;
  try {
    ok = guarded(a);
  } catch (...) {
    failure = std::current_exception();
  }
  bool ok_b = false;
  std::exception_ptr failure_b;
  try {
    ok_b = side.get();
  } catch (...) {
    failure_b = std::current_exception();
  }
  // An interruption is passed on; a stop only follows another's failure.
  for (const std::exception_ptr& f : {failure, failure_b}) {
    if (!f) continue;
    try {
      std::rethrow_exception(f);
    } catch (const Verifier::Stopped&) {
    }
  }
  if (!(ok && ok_b)) return false;
  rep.pieces_written = a.pieces_written() + b.pieces_written();
  rep.reachability_queries = a.queries() + b.queries();
  rep.windows = 2;
  return true;
}

}  // namespace

VerifyReport verify(const Schedule& schedule, std::int64_t dense_after, VerifySplit split) {
  // A cycle is refused first (the plan's topological order).
  Plan plan(schedule);
  // The dependencies are in range and acyclic; without a stated collective
  // that is all there is to check: what the transfers compute is not
  // specified.
  if (schedule.collective().kind == CollectiveKind::unknown)
    throw ScheduleError("unverifiable",
                        "the schedule states no collective ('unknown'): its "
                        "dependencies are acyclic, but what its transfers compute "
                        "is not specified, so there is nothing to verify");
  // Split by blocks, the windows' walks are listed on a second thread
  // while this one makes the chain cover (each about a tenth of the work).
  // Not split, the cover is made on a second thread while this one sets up
  // the walk's starting state, which does not ask it (recursive doubling on
  // 2^20 ranks: 0.5 s of cover beside as much of set-up).
  const bool parallel =
      schedule.num_transfers() >= kParallelTransfers && std::thread::hardware_concurrency() > 1;
  const BlockId m = split_point(schedule, split);
  std::pair<Window, Window> windows;
  std::future<void> listed, covered;
  if (m > 0) {
    listed = std::async(std::launch::async,
                        [&] { windows = split_windows(schedule, plan, m); });
    plan.make_cover(schedule);
    listed.get();
  } else if (parallel) {
    covered = std::async(std::launch::async, [&] { plan.make_cover(schedule); });
  } else {
    plan.make_cover(schedule);
  }
  VerifyReport report;
  report.transfers = schedule.num_transfers();
  // Split by blocks, a failure is verified again on one thread: which of
  // the windows' errors comes first in one walk (the one to report) is the
  // single walk's to say, and a failure need not be fast.
  if (m == 0 || !verify_split(schedule, plan, std::move(windows), dense_after, report)) {
    std::atomic<bool> stop{false};
    Verifier v(schedule, plan, whole_window(schedule), dense_after, stop);
    v.start();
    if (covered.valid()) covered.get();
    v.use_cover();
    v.run(parallel);
    report.pieces_written = v.pieces_written();
    report.reachability_queries = v.queries();
  }
  report.steps = plan.cover().steps();
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
