// Happens-before questions of the verifier (verify.cpp): does transfer a
// reach transfer b in the dependency DAG? Internal to the verifier; not part
// of the public headers.
//
// Cheap rules answer most questions in O(degree): levels (the longest
// dependency chain before a transfer) refute, and a cover of the DAG by
// chains (each transfer extends the chain of one of its dependencies)
// confirms along a chain by comparing walk positions, or one dependency or one
// successor away from one. The rest need a search backwards from b, bounded
// below by a's level, that stops at the first transfer of a's chain at or
// after a.
//
// Such searches cost up to the cone of transfers between a and b, and in a
// pipeline whose phases are separated by a barrier (the reduce-scatter of
// every chunk before any allgather) that cone holds the whole pipeline: the
// verification grew as the square of the transfers. Two facts make it
// near-linear there:
//   * a reaches b when any later transfer of a's chain does, and the latest
//     one below b's level has the smallest cone: it is searched first;
//   * reachability between two chains is monotone (if a' = a or later on
//     a's chain, and b' = b or earlier on b's, then a' reaches b' implies
//     a reaches b, and a does not reach b implies a' does not reach b'), so
//     each pair of chains remembers the last answer of either kind and
//     answers the questions it covers without a search. The accesses to one
//     cell from one rank's or one link's program in successive chunks ask
//     the same pair of chains again and again;
//   * the backward pass asks them with ever earlier b, which the last
//     answer does not cover: a pair asked again learns, by bisection along
//     b's chain, the earliest transfer of it that the transfer met reaches.
// Measured on TTO (artifact) with data dependencies on 9x9: 2,486 searched
// questions at 20k, 80k and 300k transfers alike (18,051, 72,051 and
// 271,203 before), verification 0.010, 0.017 and 0.048 s (0.22, 3.4, 64 s).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "wafercoll/mapped_alloc.hpp"
#include "wafercoll/schedule/schedule.hpp"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::verify_detail {

// The chain cover and levels of a schedule's dependency DAG: read-only once
// built, shared by the passes of a verification (and by their threads).
//
// Per transfer it keeps only its chain and level (8 bytes). Chains grow in
// the walk order (the topological order given, or the index order), so two
// transfers of one chain are in chain order exactly when they are in walk
// order: the cheap rules compare positions in the walk, which are the
// transfers' indices themselves when the index order is the walk. What only
// searches need (each chain's transfers in order, a transfer's index in its
// chain) and what only the rule through one successor needs (the successor
// lists, 8 bytes per transfer and 4 per dependency) are built the first time
// one of them is asked for; the builders' schedules at scale need neither
// (ring allreduce on 1024 ranks: 42 MB of successor lists never read).
struct ChainLevel {
  std::int32_t chain;
  std::int32_t level;
};

class ChainCover {
 public:
  // `order`: a topological order of `s`'s transfers (every transfer after
  // its dependencies), or empty when the index order is one.
  ChainCover(const Schedule& s, const std::vector<TransferId>& order);

  // Number of steps: 1 + the largest level (0 without transfers).
  std::int32_t steps() const;

  // Transfer t is the index(t)-th of chain(t); level(t) is the longest
  // dependency chain before it.
  std::int32_t chain(TransferId t) const { return cl_[t].chain; }
  std::int32_t index(TransferId t) const {
    list_chains();
    return index_[t];
  }
  std::int32_t level(TransferId t) const { return cl_[t].level; }
  // Where t comes in the walk order (its index when that is the index order).
  std::int32_t position(TransferId t) const { return pos_.empty() ? t : pos_[t]; }

  // The latest transfer of a's chain (a or after it) whose level is below
  // `level` (> level(a)).
  TransferId last_below(TransferId a, std::int32_t level) const;
  // The `i`-th transfer of chain `c`.
  TransferId at(std::int32_t c, std::int32_t i) const;
  // The index of the first transfer of b's chain whose level is above
  // `level`, or b's index when none before b is.
  std::int32_t first_above(TransferId b, std::int32_t level) const;

  // The successor lists, built at the first call (thread-safe).
  const Successors& successors() const;
  // Lists each chain's transfers and their indices, at the first call
  // (thread-safe); searches and index() need them.
  void list_chains() const;

 private:
  friend class HappensBefore;
  void cover(const std::vector<TransferId>& order);

  const Schedule& s_;
  // Each transfer's chain and level side by side: the questions read both
  // of a transfer at once, one cache line instead of two.
  MappedVector<ChainLevel> cl_;
  std::vector<std::int32_t> pos_;  // empty: the walk is the index order
  mutable std::once_flag succ_built_;
  mutable Successors succ_;
  // Transfers of each chain in index order (CSR) and each transfer's index
  // in its chain.
  mutable std::once_flag listed_;
  mutable std::vector<std::int64_t> chain_start_;
  mutable std::vector<TransferId> chain_list_;
  mutable std::vector<std::int32_t> index_;
};

// Happens-before questions of one pass over a ChainCover. The answers are
// the cover's; what a pass remembers between questions (and the search's
// scratch space) is its own, so that two passes may ask at once.
class HappensBefore {
 public:
  explicit HappensBefore(const ChainCover& cover)
      : c_(cover),
        s_(cover.s_),
        cl_(cover.cl_.data()),
        pos_(cover.pos_.empty() ? nullptr : cover.pos_.data()) {}

  // Start loading what reaches(a, b) reads of b's dependencies first (a
  // hint, nothing else).
  void prefetch_deps(TransferId b) const {
    for (const TransferId* e = s_.deps_begin(b); e != s_.deps_end(b); ++e)
      __builtin_prefetch(cl_ + *e);
  }

  // True when a == b or a is a transitive dependency of b.
  bool reaches(TransferId a, TransferId b) {
    if (a == b) return true;
    if (cl_[a].level >= cl_[b].level) return false;
    // Along one chain, chain order is walk order.
    if (cl_[a].chain == cl_[b].chain) return pos(a) < pos(b);
    // One dependency away: b depends on a, or on a transfer that a's chain
    // reaches (a rank's program continues after a, and b waits for a later
    // point of it: the usual order between two accesses to one cell).
    for (const TransferId* e = s_.deps_begin(b); e != s_.deps_end(b); ++e)
      if (cl_[*e].chain == cl_[a].chain && pos(*e) >= pos(a)) return true;
    // Through one successor y of a and a chain: a -> y, then along y's chain
    // to b or to one of b's dependencies (a message's receiver goes on with
    // its program, which b then waits for; y itself a dependency of b is the
    // two-step path a -> y -> b).
    const Successors& succ = c_.successors();
    for (std::int64_t i = succ.offsets[a]; i < succ.offsets[a + 1]; ++i) {
      const TransferId y = succ.list[i];
      if (cl_[y].chain == cl_[b].chain && pos(y) < pos(b)) return true;
      for (const TransferId* e = s_.deps_begin(b); e != s_.deps_end(b); ++e)
        if (cl_[y].chain == cl_[*e].chain && pos(y) <= pos(*e)) return true;
    }
    return reaches_by_search(a, b);
  }

  // Questions that needed at least one search.
  std::int64_t queries() const { return queries_; }
  // Searches run (up to two per question, more when a pair of chains
  // learns the earliest transfer it reaches).
  std::int64_t searches() const { return searches_; }

 private:
  // What a pair of chains (A, B) is known to answer: A's yes_a-th transfer
  // reaches B's yes_b-th (yes_a < 0: nothing known), and A's no_a-th does
  // not reach B's no_b-th (no_b < 0: nothing known).
  struct PairFacts {
    std::int32_t yes_a = -1;
    std::int32_t yes_b = 0;
    std::int32_t no_a = 0;
    std::int32_t no_b = -1;
  };

  std::int32_t pos(TransferId t) const { return pos_ == nullptr ? t : pos_[t]; }
  bool reaches_by_search(TransferId a, TransferId b);
  bool search(TransferId a, TransferId b, std::int32_t& hit);
  std::int32_t earliest_reached(TransferId x, TransferId b);
  bool touches(TransferId t, RankId r) const;

  const ChainCover& c_;
  const Schedule& s_;
  const ChainLevel* cl_;
  const std::int32_t* pos_;               // nullptr: the walk is the index order
  const std::int32_t* index_ = nullptr;  // set at the first search
  std::unordered_map<std::uint64_t, PairFacts> facts_;  // by (chain of a, chain of b)
  std::unordered_map<std::uint64_t, bool> cache_;       // by (a, b)
  std::vector<std::uint32_t> stamp_;                    // allocated at the first search
  std::uint32_t gen_ = 0;
  std::vector<TransferId> stack_;
  std::int64_t visits_ = 0;  // search steps, for the interrupt poll
  std::int64_t queries_ = 0;
  std::int64_t searches_ = 0;
};

}  // namespace wafercoll::verify_detail

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
