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
//    from x with tag g (LogGOPSim's rule, without wildcards). Keys are taken
//    in the order they first appear (rank-major), so that of several
//    mismatches the first in that order is reported.
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

// (src, dst, tag) -> key id, ids in order of first appearance.
class KeyTable {
 public:
  explicit KeyTable(std::size_t keys) {
    std::size_t cap = 16;
    while (cap < 2 * keys) cap *= 2;
    slots_.assign(cap, -1);
  }
  std::int32_t id(RankId src, RankId dst, std::int64_t tag) {
    const std::size_t mask = slots_.size() - 1;
    const std::uint64_t pair =
        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) |
        static_cast<std::uint32_t>(dst);
    std::size_t s = mix(pair * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(tag)) & mask;
    while (slots_[s] >= 0) {
      const auto k = static_cast<std::size_t>(slots_[s]);
      if (src_[k] == src && dst_[k] == dst && tag_[k] == tag) return slots_[s];
      s = (s + 1) & mask;
    }
    slots_[s] = static_cast<std::int32_t>(src_.size());
    src_.push_back(src);
    dst_.push_back(dst);
    tag_.push_back(tag);
    return slots_[s];
  }
  std::size_t size() const { return src_.size(); }
  RankId src(std::size_t k) const { return src_[k]; }
  RankId dst(std::size_t k) const { return dst_[k]; }
  std::int64_t tag(std::size_t k) const { return tag_[k]; }

 private:
  std::vector<std::int32_t> slots_;
  std::vector<RankId> src_, dst_;
  std::vector<std::int64_t> tag_;
};

// Sorted sets of transfer ids, append-only; handle 0 is the empty set.
class SetArena {
 public:
  SetArena() : off_{0, 0} {}
  const TransferId* begin(std::int32_t h) const { return data_.data() + off_[h]; }
  const TransferId* end(std::int32_t h) const { return data_.data() + off_[h + 1]; }
  std::int64_t size(std::int32_t h) const { return off_[h + 1] - off_[h]; }
  std::int32_t add(const TransferId* b, const TransferId* e) {
    data_.insert(data_.end(), b, e);
    off_.push_back(static_cast<std::int64_t>(data_.size()));
    return static_cast<std::int32_t>(off_.size() - 2);
  }
  // The union of the sets; one of them when it holds all the others.
  std::int32_t merge(std::vector<std::int32_t>& handles, std::vector<TransferId>& scratch) {
    handles.erase(std::remove(handles.begin(), handles.end(), 0), handles.end());
    std::sort(handles.begin(), handles.end());
    handles.erase(std::unique(handles.begin(), handles.end()), handles.end());
    if (handles.empty()) return 0;
    if (handles.size() == 1) return handles[0];
    scratch.clear();
    if (handles.size() == 2) {  // the common case: a linear union
      const std::int32_t a = handles[0], b = handles[1];
      std::set_union(begin(a), end(a), begin(b), end(b), std::back_inserter(scratch));
      const std::int64_t kept = std::max(size(a), size(b));
      if (static_cast<std::int64_t>(scratch.size()) == kept) return size(a) == kept ? a : b;
      return add(scratch.data(), scratch.data() + scratch.size());
    }
    std::int32_t largest = handles[0];
    for (std::int32_t h : handles) {
      scratch.insert(scratch.end(), begin(h), end(h));
      if (size(h) > size(largest)) largest = h;
    }
    std::sort(scratch.begin(), scratch.end());
    scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    if (static_cast<std::int64_t>(scratch.size()) == size(largest)) return largest;
    return add(scratch.data(), scratch.data() + scratch.size());
  }

 private:
  std::vector<TransferId> data_;
  std::vector<std::int64_t> off_;
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

// Appends decimal digits of v at p, returns the end.
char* put_int(char* p, std::int64_t v) { return std::to_chars(p, p + 20, v).ptr; }
char* put_text(char* p, std::string_view s) {
  std::copy(s.begin(), s.end(), p);
  return p + s.size();
}

class Matcher {
 public:
  explicit Matcher(const GoalProgram& g) : g_(g), n_(g.num_ops()) {}
  GoalMessages run(bool op_labels);

 private:
  void match();
  void build_graph();
  void sort_topologically();
  void dependencies(GoalMessages& out);
  void labels(GoalMessages& out, bool op_labels) const;
  std::string who(std::int64_t op) const {
    return "rank " + std::to_string(g_.rank[op]) + " " + std::string(g_.label(op));
  }
  [[noreturn]] void fail(std::int64_t op, const std::string& message) const {
    throw GoalError(message, kind_name(g_.kind[op]), g_.line[op]);
  }

  const GoalProgram& g_;
  std::int64_t n_;
  std::vector<std::int32_t> partner_;  // the matching send / receive (-1: calc)
  std::vector<std::int64_t> pred_off_, succ_off_;
  std::vector<std::int32_t> pred_, succ_;
  std::vector<std::int32_t> order_;
  std::vector<std::int32_t> send_op_, recv_op_;  // per transfer
};

void Matcher::match() {
  std::int64_t messages = 0;
  for (std::int64_t i = 0; i < n_; ++i) messages += g_.kind[i] != GoalOpKind::calc;
  KeyTable keys(static_cast<std::size_t>(messages));
  std::vector<std::int32_t> key_of(static_cast<std::size_t>(n_), -1);
  std::vector<std::int64_t> sends{0}, recvs{0};  // counts per key, then offsets
  for (std::int64_t i = 0; i < n_; ++i) {
    const GoalOpKind k = g_.kind[i];
    if (k == GoalOpKind::calc) continue;
    const bool send = k == GoalOpKind::send;
    const RankId src = send ? g_.rank[i] : g_.peer[i];
    const RankId dst = send ? g_.peer[i] : g_.rank[i];
    const std::int32_t id = keys.id(src, dst, g_.tag[i]);
    key_of[i] = id;
    if (static_cast<std::size_t>(id) + 1 >= sends.size()) {
      sends.push_back(0);
      recvs.push_back(0);
    }
    ++(send ? sends : recvs)[static_cast<std::size_t>(id) + 1];
  }
  const std::size_t nk = keys.size();
  for (std::size_t k = 0; k < nk; ++k) {
    sends[k + 1] += sends[k];
    recvs[k + 1] += recvs[k];
  }
  std::vector<std::int32_t> slist(static_cast<std::size_t>(sends[nk]));
  std::vector<std::int32_t> rlist(static_cast<std::size_t>(recvs[nk]));
  {
    std::vector<std::int64_t> s_at(sends.begin(), sends.end() - 1);
    std::vector<std::int64_t> r_at(recvs.begin(), recvs.end() - 1);
    for (std::int64_t i = 0; i < n_; ++i) {
      const std::int32_t id = key_of[i];
      if (id < 0) continue;
      if (g_.kind[i] == GoalOpKind::send) slist[s_at[id]++] = static_cast<std::int32_t>(i);
      else rlist[r_at[id]++] = static_cast<std::int32_t>(i);
    }
  }
  partner_.assign(static_cast<std::size_t>(n_), -1);
  for (std::size_t k = 0; k < nk; ++k) {
    const std::int64_t ns = sends[k + 1] - sends[k], nr = recvs[k + 1] - recvs[k];
    for (std::int64_t j = 0; j < std::min(ns, nr); ++j) {
      const std::int32_t a = slist[sends[k] + j], b = rlist[recvs[k] + j];
      if (g_.size[a] != g_.size[b]) {
        fail(b, who(a) + " sends " + std::to_string(g_.size[a]) +
                    " bytes; the matching receive, " + who(b) + ", takes " +
                    std::to_string(g_.size[b]));
      }
      partner_[a] = b;
      partner_[b] = a;
    }
    if (ns != nr) {
      const std::int32_t extra = ns > nr ? slist[sends[k] + nr] : rlist[recvs[k] + ns];
      fail(extra, who(extra) + " (" + kind_name(g_.kind[extra]) + ") has no match: rank " +
                      std::to_string(keys.src(k)) + " sends " + std::to_string(ns) +
                      " messages with tag " + std::to_string(keys.tag(k)) + " to rank " +
                      std::to_string(keys.dst(k)) + ", which receives " +
                      std::to_string(nr));
    }
  }
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

void Matcher::dependencies(GoalMessages& out) {
  SetArena sets;
  std::vector<std::int32_t> done(static_cast<std::size_t>(n_), 0);
  std::vector<std::int32_t> handles;
  std::vector<TransferId> scratch;
  for (const std::int32_t i : order_) {
    const GoalOpKind kind = g_.kind[i];
    const std::int32_t mate = partner_[i];
    // The sets of the predecessors; most operations see one distinct set
    // (or none), which is then shared rather than merged.
    handles.clear();
    std::int32_t one = 0;
    for (std::int64_t e = pred_off_[i]; e < pred_off_[i + 1]; ++e) {
      const std::int32_t j = pred_[e];
      // a receive waits for its own send's start, not for what it completes
      if (kind == GoalOpKind::recv && j == mate) continue;
      const std::int32_t h = done[j];
      if (h == 0 || h == one) continue;
      if (one != 0) handles.push_back(one);
      one = h;
    }
    std::int32_t after = one;
    if (!handles.empty()) {
      handles.push_back(one);
      after = sets.merge(handles, scratch);
    }
    if (kind != GoalOpKind::recv) {
      done[i] = after;
      continue;
    }
    const auto t = static_cast<TransferId>(send_op_.size());
    std::int32_t deps = done[mate];
    if (after != 0 && after != deps) {
      handles.assign({deps, after});
      deps = sets.merge(handles, scratch);
    }
    out.deps.insert(out.deps.end(), sets.begin(deps), sets.end(deps));
    out.dep_offsets.push_back(static_cast<std::int64_t>(out.deps.size()));
    send_op_.push_back(mate);
    recv_op_.push_back(i);
    done[i] = sets.add(&t, &t + 1);
  }
}

void Matcher::labels(GoalMessages& out, bool op_labels) const {
  const std::size_t nt = send_op_.size();
  // "rank S LABEL -> rank D LABEL (tag G)": 20 characters of text and three
  // numbers of at most 20 digits each, besides the labels.
  // Every operation is the send or the receive of at most one message.
  out.labels.resize(81 * nt + g_.label_text.size());
  char* p = out.labels.data();
  for (std::size_t t = 0; t < nt; ++t) {
    const std::int32_t s = send_op_[t], r = recv_op_[t];
    if (t > 0) *p++ = '\n';
    p = put_int(put_text(p, "rank "), g_.rank[s]);
    p = put_text(put_text(p, " "), g_.label(s));
    p = put_int(put_text(p, " -> rank "), g_.rank[r]);
    p = put_text(put_text(p, " "), g_.label(r));
    p = put_text(put_int(put_text(p, " (tag "), g_.tag[r]), ")");
  }
  out.labels.resize(static_cast<std::size_t>(p - out.labels.data()));
  if (!op_labels) return;
  for (std::size_t t = 0; t < nt; ++t) {
    if (t > 0) {
      out.send_labels += '\n';
      out.recv_labels += '\n';
    }
    out.send_labels += g_.label(send_op_[t]);
    out.recv_labels += g_.label(recv_op_[t]);
  }
}

GoalMessages Matcher::run(bool op_labels) {
  match();
  build_graph();
  sort_topologically();
  GoalMessages out;
  out.num_ranks = g_.num_ranks;
  dependencies(out);
  if (send_op_.empty()) throw GoalError("the GOAL input has no messages", "", 0);
  const std::size_t nt = send_op_.size();
  out.src.resize(nt);
  out.dst.resize(nt);
  out.tag.resize(nt);
  out.size.resize(nt);
  for (std::size_t t = 0; t < nt; ++t) {
    out.src[t] = g_.rank[send_op_[t]];
    out.dst[t] = g_.rank[recv_op_[t]];
    out.tag[t] = g_.tag[recv_op_[t]];
    out.size[t] = g_.size[recv_op_[t]];
  }
  labels(out, op_labels);
  return out;
}

}  // namespace

GoalMessages match_goal(const GoalProgram& program, bool op_labels) {
  return Matcher(program).run(op_labels);
}

}  // namespace wafercoll
