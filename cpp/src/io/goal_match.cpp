// A GoalProgram to messages: match sends with receives, order the
// operations, and give every message the transfers it waits for.
//
//   rank 0:  s1 ----message----> r1 :rank 1      s1 = send, r1 = its receive
//            |                    |
//          requires            requires          an operation that requires
//            v                    v              another starts after it
//            c2                   s2 ---> ...
//
// 1. Matching: the k-th send x -> y with tag g meets the k-th receive at y
//    from x with tag g (LogGOPSim's rule, without wildcards), one receiving
//    rank y at a time. Of several mismatched keys (x, y, g), the one whose
//    first operation comes first (rank-major) is reported.
// 2. Order: Kahn's algorithm over requires edges and send -> receive edges,
//    always taking the smallest ready operation (rank-major index); what is
//    left over waits for itself (a deadlock).
// 3. Dependencies: in that order, every operation "completes" a set of
//    transfers: a receive completes its own message (numbered in order); a
//    send or a calc completes what its predecessors completed (a send is
//    done once it may start, as in LogGOPSim where it completes locally). A
//    message waits for what its send and its receive wait for, except the
//    send itself. The sets are shared between operations when they are
//    equal, so a long chain of sends costs one set, not one per send.
#include <algorithm>
#include <charconv>
#include <iterator>

#include "wafercoll/errors.hpp"
#include "wafercoll/io/goal.hpp"

namespace wafercoll {

namespace {

const char* kind_name(GoalOpKind k) {
  return k == GoalOpKind::send ? "send" : k == GoalOpKind::recv ? "recv" : "calc";
}

std::uint64_t mix(std::uint64_t h) {
  // splitmix64's finaliser (Steele, Lea, Flood, OOPSLA 2014).
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

// The messages into one rank, keyed by (source, tag): ids in order of
// arrival, open addressing with linear probing, emptied for the next rank.
// One rank's keys fit in cache, where a table of all keys of a large file
// would miss on nearly every probe.
class LocalKeys {
 public:
  void reset(std::size_t entries) {
    std::size_t cap = 16;
    while (cap < 2 * entries) cap *= 2;
    if (cap > slots_.size()) {
      slots_.assign(cap, -1);
    } else {
      for (std::size_t s : used_) slots_[s] = -1;
    }
    mask_ = cap - 1;
    used_.clear();
    src_.clear();
    tag_.clear();
  }
  std::int32_t id(RankId src, std::int64_t tag) {
    std::size_t s = mix(static_cast<std::uint64_t>(src) * 0x9E3779B97F4A7C15ull ^
                        static_cast<std::uint64_t>(tag)) &
                    mask_;
    for (; slots_[s] >= 0; s = (s + 1) & mask_) {
      if (src_[slots_[s]] == src && tag_[slots_[s]] == tag) return slots_[s];
    }
    slots_[s] = static_cast<std::int32_t>(src_.size());
    used_.push_back(s);
    src_.push_back(src);
    tag_.push_back(tag);
    return slots_[s];
  }
  std::size_t size() const { return src_.size(); }
  RankId src(std::size_t k) const { return src_[k]; }
  std::int64_t tag(std::size_t k) const { return tag_[k]; }

 private:
  std::vector<std::int32_t> slots_;
  std::vector<std::size_t> used_;
  std::size_t mask_ = 0;
  std::vector<RankId> src_;
  std::vector<std::int64_t> tag_;
};

// Sorted sets of transfer ids, append-only. Handle 0 is the empty set, a
// negative handle -(t + 1) the set {t} (a receive's own message: most sets),
// a positive one a set stored here.
class SetArena {
 public:
  explicit SetArena(std::size_t transfers) : off_{0, 0}, ids_(transfers) {
    data_.reserve(4 * transfers);
    for (std::size_t t = 0; t < transfers; ++t) ids_[t] = static_cast<TransferId>(t);
  }
  static std::int32_t single(TransferId t) { return -(t + 1); }
  const TransferId* begin(std::int32_t h) const {
    return h < 0 ? ids_.data() + (-h - 1) : data_.data() + off_[h];
  }
  const TransferId* end(std::int32_t h) const {
    return h < 0 ? ids_.data() - h : data_.data() + off_[h + 1];
  }
  std::int64_t size(std::int32_t h) const { return h < 0 ? 1 : off_[h + 1] - off_[h]; }
  std::int32_t add(const TransferId* b, const TransferId* e) {
    data_.insert(data_.end(), b, e);
    off_.push_back(static_cast<std::int64_t>(data_.size()));
    return static_cast<std::int32_t>(off_.size() - 2);
  }
  // Appends the union of sets a and b to out.
  void unite(std::int32_t a, std::int32_t b, std::vector<TransferId>& out) const {
    std::set_union(begin(a), end(a), begin(b), end(b), std::back_inserter(out));
  }
  // The union of the sets; one of them when it holds all the others.
  std::int32_t merge(std::vector<std::int32_t>& handles, std::vector<TransferId>& scratch) {
    handles.erase(std::remove(handles.begin(), handles.end(), 0), handles.end());
    std::sort(handles.begin(), handles.end());
    handles.erase(std::unique(handles.begin(), handles.end()), handles.end());
    if (handles.empty()) return 0;
    if (handles.size() == 1) return handles[0];
    scratch.clear();
    std::int32_t largest = handles[0];
    if (handles.size() == 2) {  // the common case: a linear union
      unite(handles[0], handles[1], scratch);
      if (size(handles[1]) > size(largest)) largest = handles[1];
    } else {
      for (std::int32_t h : handles) {
        scratch.insert(scratch.end(), begin(h), end(h));
        if (size(h) > size(largest)) largest = h;
      }
      std::sort(scratch.begin(), scratch.end());
      scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    }
    if (static_cast<std::int64_t>(scratch.size()) == size(largest)) return largest;
    return add(scratch.data(), scratch.data() + scratch.size());
  }

 private:
  std::vector<TransferId> data_;
  std::vector<std::int64_t> off_;
  std::vector<TransferId> ids_;  // ids_[t] = t: the storage of the sets {t}
};

// A set of operation indices in [0, n) that hands out its smallest: bits in a
// tree of 64-bit words (each word of a level says which words of the level
// below are non-empty), so push and pop-min take one word per level, about
// four for a million operations, where a binary heap takes twenty.
class MinQueue {
 public:
  explicit MinQueue(std::size_t n) {
    do {
      n = std::max<std::size_t>((n + 63) / 64, 1);
      levels_.emplace_back(n, 0);
    } while (n > 1);
  }
  bool empty() const { return levels_.back()[0] == 0; }
  void push(std::size_t i) {
    for (auto& level : levels_) {
      std::uint64_t& w = level[i / 64];
      const bool was_empty = w == 0;
      w |= std::uint64_t{1} << (i % 64);
      if (!was_empty) return;
      i /= 64;
    }
  }
  std::size_t pop() {
    std::size_t i = 0;
    for (std::size_t l = levels_.size(); l-- > 0;) {
      i = i * 64 + static_cast<std::size_t>(__builtin_ctzll(levels_[l][i]));
    }
    const std::size_t out = i;
    for (auto& level : levels_) {
      std::uint64_t& w = level[i / 64];
      w &= ~(std::uint64_t{1} << (i % 64));
      if (w != 0) break;
      i /= 64;
    }
    return out;
  }

 private:
  std::vector<std::vector<std::uint64_t>> levels_;  // [0]: one bit per index
};

class Matcher {
 public:
  explicit Matcher(const GoalProgram& g) : g_(g), n_(g.num_ops()) {}
  GoalMessages run();

 private:
  void match();
  void build_graph();
  void sort_topologically();
  void dependencies(GoalMessages& out);
  std::int32_t after(std::int32_t i, std::int32_t mate);
  std::string who(std::int64_t op) const {
    return "rank " + std::to_string(g_.rank[op]) + " " + std::string(g_.label(op));
  }
  [[noreturn]] void fail(std::int64_t op, const std::string& message) const {
    throw GoalError(message, kind_name(g_.kind[op]), g_.line[op]);
  }

  const GoalProgram& g_;
  std::int64_t n_;
  std::int64_t receives_ = 0;
  std::vector<std::int32_t> partner_;  // the matching send / receive (-1: calc)
  std::vector<std::int64_t> pred_off_, succ_off_;
  std::vector<std::int32_t> pred_, succ_;
  std::vector<std::int32_t> order_;
  // what each operation completes, as a set handle
  std::vector<std::int32_t> done_;
  SetArena sets_{0};
  std::vector<std::int32_t> handles_;
  std::vector<TransferId> scratch_;
};

// Matching, one destination rank at a time: the sends to each rank are
// gathered first (a stable counting sort by destination, so in rank-major
// order), then met with that rank's receives. Of several mismatched keys
// the one that appears first (its first operation, rank-major) is told.
void Matcher::match() {
  const auto n = static_cast<std::size_t>(n_);
  const auto p = static_cast<std::size_t>(g_.num_ranks);
  std::vector<std::int64_t> to(p + 1, 0);     // sends to rank y: [to[y], to[y+1])
  std::vector<std::int64_t> block(p + 1, 0);  // rank r's operations
  for (std::size_t i = 0; i < n; ++i) {
    ++block[static_cast<std::size_t>(g_.rank[i]) + 1];
    if (g_.kind[i] == GoalOpKind::send) ++to[static_cast<std::size_t>(g_.peer[i]) + 1];
    receives_ += g_.kind[i] == GoalOpKind::recv;
  }
  for (std::size_t r = 0; r < p; ++r) {
    to[r + 1] += to[r];
    block[r + 1] += block[r];
  }
  std::vector<std::int32_t> sends(static_cast<std::size_t>(to[p]));
  {
    std::vector<std::int64_t> at(to.begin(), to.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (g_.kind[i] == GoalOpKind::send) {
        sends[at[static_cast<std::size_t>(g_.peer[i])]++] = static_cast<std::int32_t>(i);
      }
    }
  }
  partner_.assign(n, -1);
  LocalKeys keys;
  std::vector<std::int32_t> ops, key_of;    // this rank's sends, then receives
  std::vector<std::int64_t> ns, nr, first;  // per key: counts, first operation
  std::vector<std::int32_t> list;           // per key: sends, then receives
  std::vector<std::int64_t> at, fill;       // ... from list[at[k]]
  std::int64_t bad_first = n_;              // the first mismatched key so far
  std::string bad;                          // ... and what is wrong with it
  std::int32_t bad_op = -1;
  for (std::size_t y = 0; y < p; ++y) {
    if ((y & 4095) == 4095) poll_interrupt();
    ops.assign(sends.begin() + to[y], sends.begin() + to[y + 1]);
    const std::size_t nsend = ops.size();
    for (auto i = block[y]; i < block[y + 1]; ++i) {
      if (g_.kind[i] == GoalOpKind::recv) ops.push_back(static_cast<std::int32_t>(i));
    }
    if (ops.empty()) continue;
    keys.reset(ops.size());
    key_of.resize(ops.size());
    ns.clear();
    nr.clear();
    first.clear();
    for (std::size_t e = 0; e < ops.size(); ++e) {
      const std::int32_t i = ops[e];
      const bool send = e < nsend;
      const auto k = static_cast<std::size_t>(keys.id(send ? g_.rank[i] : g_.peer[i], g_.tag[i]));
      if (k == ns.size()) {
        ns.push_back(0);
        nr.push_back(0);
        first.push_back(i);
      }
      key_of[e] = static_cast<std::int32_t>(k);
      ++(send ? ns : nr)[k];
      first[k] = std::min<std::int64_t>(first[k], i);
    }
    // per key: its sends in order, then its receives in order
    const std::size_t nk = keys.size();
    at.assign(nk + 1, 0);
    for (std::size_t k = 0; k < nk; ++k) at[k + 1] = at[k] + ns[k] + nr[k];
    list.resize(ops.size());
    fill.assign(at.begin(), at.end() - 1);
    for (std::size_t e = 0; e < ops.size(); ++e) list[fill[key_of[e]]++] = ops[e];
    for (std::size_t k = 0; k < nk; ++k) {
      const std::int32_t* s = list.data() + at[k];
      const std::int32_t* r = s + ns[k];
      std::string wrong;
      std::int32_t at_op = -1;
      for (std::int64_t j = 0; j < std::min(ns[k], nr[k]); ++j) {
        if (g_.size[s[j]] != g_.size[r[j]]) {
          at_op = r[j];
          wrong = who(s[j]) + " sends " + std::to_string(g_.size[s[j]]) +
                  " bytes; the matching receive, " + who(r[j]) + ", takes " +
                  std::to_string(g_.size[r[j]]);
          break;
        }
        partner_[s[j]] = r[j];
        partner_[r[j]] = s[j];
      }
      if (at_op < 0 && ns[k] != nr[k]) {
        at_op = ns[k] > nr[k] ? s[nr[k]] : r[ns[k]];
        wrong = who(at_op) + " (" + kind_name(g_.kind[at_op]) + ") has no match: rank " +
                std::to_string(keys.src(k)) + " sends " + std::to_string(ns[k]) +
                " messages with tag " + std::to_string(keys.tag(k)) + " to rank " +
                std::to_string(y) + ", which receives " + std::to_string(nr[k]);
      }
      if (at_op >= 0 && first[k] < bad_first) {
        bad_first = first[k];
        bad = std::move(wrong);
        bad_op = at_op;
      }
    }
  }
  if (bad_op >= 0) fail(bad_op, bad);
}

// Predecessors and successors in CSR form: requires edges (before -> after)
// and message edges (send -> receive).
void Matcher::build_graph() {
  const auto n = static_cast<std::size_t>(n_);
  pred_off_.assign(n + 1, 0);
  succ_off_.assign(n + 1, 0);
  const std::size_t nr = g_.req_after.size();
  for (std::size_t j = 0; j < nr; ++j) {
    ++pred_off_[static_cast<std::size_t>(g_.req_after[j]) + 1];
    ++succ_off_[static_cast<std::size_t>(g_.req_before[j]) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (g_.kind[i] == GoalOpKind::recv) {
      ++pred_off_[i + 1];
      ++succ_off_[static_cast<std::size_t>(partner_[i]) + 1];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    pred_off_[i + 1] += pred_off_[i];
    succ_off_[i + 1] += succ_off_[i];
  }
  pred_.resize(static_cast<std::size_t>(pred_off_[n]));
  succ_.resize(static_cast<std::size_t>(succ_off_[n]));
  std::vector<std::int64_t> p_at(pred_off_.begin(), pred_off_.end() - 1);
  std::vector<std::int64_t> s_at(succ_off_.begin(), succ_off_.end() - 1);
  for (std::size_t j = 0; j < nr; ++j) {
    const auto a = static_cast<std::size_t>(g_.req_after[j]);
    const auto b = static_cast<std::size_t>(g_.req_before[j]);
    pred_[p_at[a]++] = g_.req_before[j];
    succ_[s_at[b]++] = g_.req_after[j];
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (g_.kind[i] != GoalOpKind::recv) continue;
    const auto s = static_cast<std::size_t>(partner_[i]);
    pred_[p_at[i]++] = partner_[i];
    succ_[s_at[s]++] = static_cast<std::int32_t>(i);
  }
}

void Matcher::sort_topologically() {
  const auto n = static_cast<std::size_t>(n_);
  std::vector<std::int32_t> indeg(n);
  MinQueue ready(n);  // operations whose predecessors are all done
  for (std::size_t i = 0; i < n; ++i) {
    indeg[i] = static_cast<std::int32_t>(pred_off_[i + 1] - pred_off_[i]);
    if (indeg[i] == 0) ready.push(i);
  }
  order_.clear();
  order_.reserve(n);
  while (!ready.empty()) {
    const auto i = static_cast<std::int32_t>(ready.pop());
    order_.push_back(i);
    if ((order_.size() & (kInterruptStride - 1)) == 0) poll_interrupt();
    for (std::int64_t e = succ_off_[i]; e < succ_off_[i + 1]; ++e) {
      const std::int32_t j = succ_[e];
      if (--indeg[j] == 0) ready.push(static_cast<std::size_t>(j));
    }
  }
  if (order_.size() < n) {
    const auto stuck = std::find_if(indeg.begin(), indeg.end(),
                                    [](std::int32_t d) { return d > 0; }) -
                       indeg.begin();
    fail(stuck, who(stuck) +
                    " waits for itself through requires and messages (the schedule "
                    "would deadlock)");
  }
}

// What operation i waits for: the union of the sets its predecessors
// completed (for a receive, all but its own send). Most operations see one
// distinct set, or none, which is then shared rather than merged.
std::int32_t Matcher::after(std::int32_t i, std::int32_t mate) {
  const bool recv = g_.kind[i] == GoalOpKind::recv;
  handles_.clear();
  std::int32_t one = 0;
  for (std::int64_t e = pred_off_[i]; e < pred_off_[i + 1]; ++e) {
    const std::int32_t j = pred_[e];
    // a receive waits for its own send's start, not for what it completes
    if (recv && j == mate) continue;
    const std::int32_t h = done_[j];
    if (h == 0 || h == one) continue;
    if (one != 0) handles_.push_back(one);
    one = h;
  }
  if (handles_.empty()) return one;
  handles_.push_back(one);
  return sets_.merge(handles_, scratch_);
}

// In the topological order: what every operation completes, and for every
// receive the next transfer, which waits for what its send and its receive
// wait for.
void Matcher::dependencies(GoalMessages& out) {
  const std::size_t n = order_.size();
  const auto nt = static_cast<std::size_t>(receives_);
  sets_ = SetArena(nt);
  done_.assign(n, 0);
  out.dep_offsets.reserve(nt + 1);
  // Room for 16 dependencies per message: memory never written is never
  // committed, and regrowing a large array costs a copy of it.
  out.deps.reserve(16 * nt);
  out.send_op.reserve(nt);
  out.recv_op.reserve(nt);
  for (std::size_t k = 0; k < n; ++k) {
    // A later receive's send lies on another rank: fetch its set's handle
    // ahead, and the set itself a little later.
    if (k + 16 < n && partner_[order_[k + 16]] >= 0) {
      __builtin_prefetch(&done_[partner_[order_[k + 16]]]);
    }
    if (k + 8 < n && partner_[order_[k + 8]] >= 0) {
      __builtin_prefetch(sets_.begin(done_[partner_[order_[k + 8]]]));
    }
    const std::int32_t i = order_[k];
    const std::int32_t mate = partner_[i];
    const std::int32_t waits = after(i, mate);
    if (g_.kind[i] != GoalOpKind::recv) {
      done_[i] = waits;
      continue;
    }
    const auto t = static_cast<TransferId>(out.send_op.size());
    const std::int32_t before = done_[mate];
    if (before == 0 || waits == 0 || before == waits) {
      const std::int32_t h = before != 0 ? before : waits;
      out.deps.insert(out.deps.end(), sets_.begin(h), sets_.end(h));
    } else {
      sets_.unite(before, waits, out.deps);
    }
    out.dep_offsets.push_back(static_cast<std::int64_t>(out.deps.size()));
    out.send_op.push_back(mate);
    out.recv_op.push_back(i);
    done_[i] = SetArena::single(t);
  }
}

GoalMessages Matcher::run() {
  match();
  build_graph();
  sort_topologically();
  GoalMessages out;
  out.num_ranks = g_.num_ranks;
  dependencies(out);
  const std::size_t nt = out.send_op.size();
  if (nt == 0) throw GoalError("the GOAL input has no messages", "", 0);
  out.src.resize(nt);
  out.dst.resize(nt);
  out.tag.resize(nt);
  out.size.resize(nt);
  for (std::size_t t = 0; t < nt; ++t) {
    const std::int32_t s = out.send_op[t], r = out.recv_op[t];
    if (t + 16 < nt) __builtin_prefetch(&g_.rank[out.send_op[t + 16]]);
    out.src[t] = g_.rank[s];
    out.dst[t] = g_.rank[r];
    out.tag[t] = g_.tag[r];
    out.size[t] = g_.size[r];
  }
  return out;
}

}  // namespace

GoalMessages match_goal(const GoalProgram& program) {
  GoalMessages m = Matcher(program).run();
  m.label_offsets = program.label_offsets;
  m.label_text = program.label_text;
  return m;
}

GoalMessages match_goal(GoalProgram&& program) {
  GoalMessages m = Matcher(program).run();
  m.label_offsets = std::move(program.label_offsets);
  m.label_text = std::move(program.label_text);
  return m;
}

std::string goal_labels(const GoalMessages& m) {
  const std::size_t nt = m.send_op.size();
  const auto ops = static_cast<std::int64_t>(m.label_offsets.size()) - 1;
  const bool fits = m.src.size() == nt && m.dst.size() == nt && m.tag.size() == nt &&
                    m.recv_op.size() == nt && ops >= 0 && m.label_offsets[0] == 0 &&
                    m.label_offsets[ops] == static_cast<std::int64_t>(m.label_text.size()) &&
                    std::is_sorted(m.label_offsets.begin(), m.label_offsets.end());
  const auto op_ok = [ops](std::int32_t op) { return op >= 0 && op < ops; };
  if (!fits || !std::all_of(m.send_op.begin(), m.send_op.end(), op_ok) ||
      !std::all_of(m.recv_op.begin(), m.recv_op.end(), op_ok)) {
    throw std::invalid_argument("goal_labels: arrays of different lengths or bad offsets");
  }
  const auto label = [&](std::int32_t op) {
    return std::string_view(m.label_text)
        .substr(static_cast<std::size_t>(m.label_offsets[op]),
                static_cast<std::size_t>(m.label_offsets[op + 1] - m.label_offsets[op]));
  };
  // "rank S LABEL -> rank D LABEL (tag G)": 20 characters of text and three
  // numbers of at most 20 characters each, besides the labels; every
  // operation is the send or the receive of at most one message.
  std::string out(81 * nt + m.label_text.size(), '\0');
  char* p = out.data();
  const auto text = [&p](std::string_view s) {
    std::copy(s.begin(), s.end(), p);
    p += s.size();
  };
  const auto number = [&p](std::int64_t v) { p = std::to_chars(p, p + 20, v).ptr; };
  for (std::size_t t = 0; t < nt; ++t) {
    if (t > 0) *p++ = '\n';
    text("rank ");
    number(m.src[t]);
    text(" ");
    text(label(m.send_op[t]));
    text(" -> rank ");
    number(m.dst[t]);
    text(" ");
    text(label(m.recv_op[t]));
    text(" (tag ");
    number(m.tag[t]);
    text(")");
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
  return out;
}

}  // namespace wafercoll
