// Happens-before questions of the verifier: see happens_before.hpp.
#include "happens_before.hpp"

#include <algorithm>

#include "wafercoll/errors.hpp"

namespace wafercoll::verify_detail {

namespace {

std::uint64_t pair_key(std::int32_t x, std::int32_t y) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)) << 32) |
         static_cast<std::uint32_t>(y);
}

}  // namespace

// Besides levels, the transfers are covered greedily by chains (each
// transfer extends the chain of one of its dependencies, preferring one
// sent by the same rank). Along a chain reachability is a comparison of
// walk positions, and a search may stop at the first transfer of the
// source's chain that comes after the source.
ChainCover::ChainCover(const Schedule& s, const std::vector<TransferId>& order)
    : s_(s), cl_(static_cast<std::size_t>(s.num_transfers())) {
  if (!order.empty()) {
    pos_.resize(order.size());
    for (std::size_t k = 0; k < order.size(); ++k)
      pos_[static_cast<std::size_t>(order[k])] = static_cast<std::int32_t>(k);
  }
  cover(order);
}

void ChainCover::cover(const std::vector<TransferId>& order) {
  const auto n = static_cast<std::size_t>(s_.num_transfers());
  // Mapped, not from the heap: the cover may be made on a second thread
  // (verify()), whose malloc arena kept such a block resident after the
  // verification (recursive doubling on 262,144 ranks: 5 MB more at the
  // simulation's peak that followed).
  MappedVector<std::uint8_t> is_tail(n, 0);
  std::int32_t chains = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if ((i & 65535) == 65535) poll_interrupt();
    const TransferId t = order.empty() ? static_cast<TransferId>(i) : order[i];
    TransferId extend = -1;
    std::int32_t level = 0;
    for (const TransferId* d = s_.deps_begin(t); d != s_.deps_end(t); ++d) {
      level = std::max(level, cl_[*d].level + 1);
      if (!is_tail[*d]) continue;
      if (extend < 0 || (s_.src(*d) == s_.src(t) && s_.src(extend) != s_.src(t))) extend = *d;
    }
    if (extend >= 0) {
      is_tail[extend] = 0;
      cl_[t] = ChainLevel{cl_[extend].chain, level};
    } else {
      cl_[t] = ChainLevel{chains++, level};
    }
    is_tail[t] = 1;
  }
}

std::int32_t ChainCover::steps() const {
  std::int32_t steps = 0;
  for (const ChainLevel& x : cl_) steps = std::max(steps, x.level + 1);
  return steps;
}

const Successors& ChainCover::successors() const {
  std::call_once(succ_built_, [this] { succ_ = wafercoll::successors(s_); });
  return succ_;
}

// The chains' transfers in walk order: a counting sort by chain of the
// transfers taken in walk order (a chain grows in walk order), which gives
// each transfer its index in its chain.
void ChainCover::list_chains() const {
  std::call_once(listed_, [this] {
    const std::size_t n = cl_.size();
    std::int32_t chains = 0;
    for (const ChainLevel& x : cl_) chains = std::max(chains, x.chain + 1);
    chain_start_.assign(static_cast<std::size_t>(chains) + 1, 0);
    for (const ChainLevel& x : cl_) ++chain_start_[static_cast<std::size_t>(x.chain) + 1];
    for (std::size_t c = 0; c < static_cast<std::size_t>(chains); ++c)
      chain_start_[c + 1] += chain_start_[c];
    std::vector<TransferId> walk;
    if (!pos_.empty()) {
      walk.resize(n);
      for (std::size_t t = 0; t < n; ++t)
        walk[static_cast<std::size_t>(pos_[t])] = static_cast<TransferId>(t);
    }
    std::vector<std::int64_t> next(chain_start_.begin(), chain_start_.end() - 1);
    chain_list_.assign(n, 0);
    index_.assign(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
      const TransferId t = walk.empty() ? static_cast<TransferId>(k) : walk[k];
      const auto c = static_cast<std::size_t>(cl_[t].chain);
      index_[t] = static_cast<std::int32_t>(next[c] - chain_start_[c]);
      chain_list_[static_cast<std::size_t>(next[c]++)] = t;
    }
  });
}

// Levels increase along a chain (a transfer's level exceeds its
// dependencies'), so both are found by bisection.
TransferId ChainCover::last_below(TransferId a, std::int32_t level) const {
  list_chains();
  const TransferId* first = chain_list_.data() + chain_start_[cl_[a].chain] + index_[a];
  const TransferId* last = chain_list_.data() + chain_start_[cl_[a].chain + 1];
  const TransferId* it = std::partition_point(
      first, last, [&](TransferId t) { return cl_[t].level < level; });
  return *(it - 1);
}

std::int32_t ChainCover::first_above(TransferId b, std::int32_t level) const {
  list_chains();
  const TransferId* first = chain_list_.data() + chain_start_[cl_[b].chain];
  const TransferId* it = std::partition_point(
      first, first + index_[b], [&](TransferId t) { return cl_[t].level <= level; });
  return static_cast<std::int32_t>(it - first);
}

TransferId ChainCover::at(std::int32_t c, std::int32_t i) const {
  list_chains();
  return chain_list_[static_cast<std::size_t>(chain_start_[c] + i)];
}

// A question the cheap rules left open. What the pair of chains already
// knows answers it without a search when it covers it. Otherwise the latest
// transfer of a's chain below b's level, whose search cone is the smallest,
// is searched first; if it does not reach b, a itself is. Each answer is
// remembered for the pair of chains: the latest one of each kind replaces
// the one before unless that one covers it.
bool HappensBefore::reaches_by_search(TransferId a, TransferId b) {
  c_.list_chains();
  index_ = c_.index_.data();
  if (stamp_.empty()) stamp_.assign(static_cast<std::size_t>(s_.num_transfers()), 0);
  PairFacts& f = facts_[pair_key(cl_[a].chain, cl_[b].chain)];
  const std::int32_t ia = index_[a];
  const std::int32_t ib = index_[b];
  if (f.yes_a >= ia && f.yes_b <= ib) return true;
  if (f.no_b >= ib && f.no_a <= ia) return false;
  const std::uint64_t key = pair_key(a, b);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  ++queries_;
  const bool again = f.yes_a >= 0;
  std::int32_t hit = -1;
  const TransferId late = c_.last_below(a, cl_[b].level);
  bool found = false;
  if (late != a) {
    found = search(late, b, hit);
    if (!found && !(f.no_b >= ib && f.no_a <= index_[late])) {
      f.no_a = index_[late];
      f.no_b = ib;
    }
  }
  if (!found) found = search(a, b, hit);
  // A pair asked again with a later a or an earlier b than it knows (the
  // backward pass asks with earlier and earlier b) learns the earliest
  // transfer of b's chain that the one met reaches.
  const std::int32_t x = found ? hit : ia;
  const std::int32_t y = found && again ? earliest_reached(c_.at(cl_[a].chain, hit), b) : ib;
  if (found && !(f.yes_a >= x && f.yes_b <= y)) {
    f.yes_a = x;
    f.yes_b = y;
  } else if (!found && !(f.no_b >= y && f.no_a <= x)) {
    f.no_a = x;
    f.no_b = y;
  }
  cache_.emplace(key, found);
  return found;
}

// The index of the earliest transfer of b's chain that x reaches, knowing
// that x reaches b: a bisection between the first transfer of b's chain
// above x's level and b (x reaches a suffix of b's chain's transfers up to
// b).
std::int32_t HappensBefore::earliest_reached(TransferId x, TransferId b) {
  std::int32_t lo = c_.first_above(b, cl_[x].level);
  std::int32_t hi = index_[b];
  std::int32_t unused = -1;
  while (lo < hi) {
    const std::int32_t mid = lo + (hi - lo) / 2;
    if (search(x, c_.at(cl_[b].chain, mid), unused)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return hi;
}

bool HappensBefore::touches(TransferId t, RankId r) const {
  if (s_.src(t) == r) return true;
  for (const RankId* d = s_.dsts_begin(t); d != s_.dsts_end(t); ++d)
    if (*d == r) return true;
  return false;
}

// Depth-first search backwards from b. A transfer at a's level or below
// (level = longest dependency chain before it) cannot have a as an
// ancestor, which bounds the search to the cone between them. Among
// the dependencies of a node, those that involve the ranks a wrote to or
// read from are tried first: in schedules of message-passing programs the
// path that orders two accesses to one cell usually follows that rank.
// On success `hit` is the index of the transfer of a's chain (at or after
// a) where the search met it.
bool HappensBefore::search(TransferId a, TransferId b, std::int32_t& hit) {
  ++searches_;
  if (++gen_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    gen_ = 1;
  }
  const std::int32_t floor = cl_[a].level;
  const RankId hint_src = s_.src(a);
  const RankId hint_dst = *s_.dsts_begin(a);
  stack_.clear();
  stack_.push_back(b);
  stamp_[b] = gen_;
  while (!stack_.empty()) {
    if ((++visits_ & 65535) == 0) poll_interrupt();
    const TransferId x = stack_.back();
    stack_.pop_back();
    const std::size_t mark = stack_.size();
    for (const TransferId* d = s_.deps_begin(x); d != s_.deps_end(x); ++d) {
      const TransferId y = *d;
      if (cl_[y].chain == cl_[a].chain) {
        if (index_[y] >= index_[a]) {
          hit = index_[y];
          return true;
        }
        continue;
      }
      if (cl_[y].level <= floor || stamp_[y] == gen_) continue;
      stamp_[y] = gen_;
      stack_.push_back(y);
      // Keep the most promising dependency on top of the stack.
      if (stack_.size() > mark + 1 && (touches(y, hint_dst) || touches(y, hint_src)))
        std::swap(stack_[mark], stack_.back());
    }
    if (stack_.size() > mark + 1) std::swap(stack_[mark], stack_.back());
  }
  return false;
}

}  // namespace wafercoll::verify_detail
