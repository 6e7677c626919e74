// Textbook MPI collectives as schedules: ring and recursive-doubling
// allreduce, Rabenseifner's reduce-scatter + allgather, binomial reduce and
// broadcast. See generic.hpp for the list.
//
// Every transfer goes through Progress::send, which adds the dependencies a
// message-passing program would impose (program order on both ranks), so
// these schedules verify under the schedule semantics without builder-
// specific reasoning and simulate like the MPI implementations they model.
// Non-powers of two fold onto the largest power of two (Fold), as MPICH
// does, instead of special-casing each algorithm.
#include "wafercoll/algorithms/generic.hpp"

#include <stdexcept>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

namespace wafercoll {

namespace {

// Builders refuse sizes whose schedules would not fit in memory (a transfer
// takes about 60 bytes): the ring has 2p(p-1) transfers (33.5 M at p = 4096),
// recursive doubling and Rabenseifner about 2p log2 p (42 M at p = 2^20).
constexpr std::int64_t kMaxRingRanks = 4096;
constexpr std::int64_t kMaxLogRanks = std::int64_t{1} << 20;

void check_common(RankId p, Bytes size_bytes, std::int64_t max_ranks) {
  if (p < 1 || p > max_ranks)
    throw std::invalid_argument("ranks must be in [1, " + std::to_string(max_ranks) +
                                "], got " + std::to_string(p));
  if (size_bytes < 0)
    throw std::invalid_argument("size_bytes must be >= 0, got " + std::to_string(size_bytes));
}

void check_root(RankId p, RankId root) {
  if (root < 0 || root >= p)
    throw std::invalid_argument("root must be in [0, " + std::to_string(p - 1) + "], got " +
                                std::to_string(root));
}

// Message-passing progress of every rank: its last send and last receive. A
// transfer from a to b waits for both ranks' previous sends and receives, as
// a send/receive pair posted in program order on both sides would (MPI's
// Sendrecv steps). Writes into a rank are then ordered, forwarded data has
// arrived, and a rank's sends form a chain that orders its reads before later
// writes into it.
struct Progress {
  explicit Progress(RankId p) : in(p, -1), out(p, -1) {}
  // Add the transfer a -> b over blocks [lo, hi) (the step's bookkeeping is
  // left to commit(), so that transfers of one step do not wait for each other).
  TransferId send(Schedule& s, RankId a, RankId b, BlockId lo, BlockId hi, Op op) const {
    return s.add(a, b, lo, hi, op, {in[a], out[a], in[b], out[b]});
  }
  void commit(RankId a, RankId b, TransferId t) {
    out[a] = t;
    in[b] = t;
  }
  std::vector<TransferId> in;
  std::vector<TransferId> out;
};

// The collective a builder promises (the verifier checks the promise).
Collective make(CollectiveKind kind, RankId root = -1) {
  Collective c;
  c.kind = kind;
  c.root = root;
  return c;
}

// Folding of a non-power-of-two rank count onto q = 2^floor(log2 p) ranks.
struct Fold {
  explicit Fold(RankId p) {
    q = 1;
    while (2 * q <= p) q *= 2;
    extra = p - q;
  }
  // Real rank of virtual rank v in [0, q).
  RankId real(RankId v) const { return v < extra ? 2 * v + 1 : v + extra; }
  RankId q;
  RankId extra;
};

}  // namespace

Schedule ring_allreduce(RankId p, Bytes size_bytes) {
  check_common(p, size_bytes, kMaxRingRanks);
  Schedule s(p, even_blocks(size_bytes, p), make(CollectiveKind::allreduce));
  s.name = "ring(p=" + std::to_string(p) + ")";
  if (p == 1) return s;
  s.reserve(2 * static_cast<std::int64_t>(p) * (p - 1));
  Progress pr(p);
  std::vector<TransferId> step(p);
  for (int phase = 0; phase < 2; ++phase) {
    const Op op = phase == 0 ? Op::reduce : Op::copy;
    for (RankId k = 0; k < p - 1; ++k) {
      for (RankId r = 0; r < p; ++r) {
        // Reduce-scatter sends block r-k; the allgather forwards block r+1-k,
        // the one completed (or received) in the previous step.
        const BlockId b = static_cast<BlockId>(((r - k + phase) % p + p) % p);
        step[r] = pr.send(s, r, (r + 1) % p, b, b + 1, op);
      }
      for (RankId r = 0; r < p; ++r) pr.commit(r, (r + 1) % p, step[r]);
    }
  }
  return s;
}

namespace {

// Pairwise exchanges of one step between virtual ranks v and v ^ mask; each
// side sends [lo, hi) given by `range(v)`.
template <typename Range>
void exchange(Schedule& s, Progress& pr, const Fold& f, RankId mask, Op op, Range range) {
  std::vector<TransferId> step(f.q);
  for (RankId v = 0; v < f.q; ++v) {
    const auto [lo, hi] = range(v);
    step[v] = pr.send(s, f.real(v), f.real(v ^ mask), lo, hi, op);
  }
  for (RankId v = 0; v < f.q; ++v) pr.commit(f.real(v), f.real(v ^ mask), step[v]);
}

// Ranks 2v (v < extra) hand their vector to 2v+1 before the power-of-two part.
void fold_in(Schedule& s, Progress& pr, const Fold& f, BlockId blocks) {
  for (RankId v = 0; v < f.extra; ++v)
    pr.commit(2 * v, 2 * v + 1, pr.send(s, 2 * v, 2 * v + 1, 0, blocks, Op::reduce));
}

void fold_out(Schedule& s, Progress& pr, const Fold& f, BlockId blocks) {
  for (RankId v = 0; v < f.extra; ++v)
    pr.commit(2 * v + 1, 2 * v, pr.send(s, 2 * v + 1, 2 * v, 0, blocks, Op::copy));
}

}  // namespace

// log2 q steps of whole-vector exchanges: few steps (latency-bound
// vectors), q log2 q whole-vector transfers in all.
Schedule recursive_doubling_allreduce(RankId p, Bytes size_bytes) {
  check_common(p, size_bytes, kMaxLogRanks);
  Schedule s(p, {size_bytes}, make(CollectiveKind::allreduce));
  s.name = "recursive_doubling(p=" + std::to_string(p) + ")";
  const Fold f(p);
  Progress pr(p);
  fold_in(s, pr, f, 1);
  for (RankId mask = 1; mask < f.q; mask *= 2)
    exchange(s, pr, f, mask, Op::reduce, [](RankId) { return std::pair<BlockId, BlockId>{0, 1}; });
  fold_out(s, pr, f, 1);
  return s;
}

// Recursive halving (reduce-scatter) then recursive doubling (allgather)
// over q blocks: bandwidth-optimal for large vectors while keeping log q
// steps per phase.
Schedule rabenseifner_allreduce(RankId p, Bytes size_bytes) {
  check_common(p, size_bytes, kMaxLogRanks);
  const Fold f(p);
  Schedule s(p, even_blocks(size_bytes, f.q), make(CollectiveKind::allreduce));
  s.name = "rabenseifner(p=" + std::to_string(p) + ")";
  int log_q = 0;
  while ((RankId{1} << log_q) < f.q) ++log_q;
  s.reserve(2 * static_cast<std::int64_t>(f.q) * log_q + 2 * f.extra);
  Progress pr(p);
  fold_in(s, pr, f, f.q);
  // Blocks [lo[v], hi[v]) are virtual rank v's responsibility.
  std::vector<BlockId> lo(f.q, 0), hi(f.q, f.q);
  for (RankId mask = 1; mask < f.q; mask *= 2) {  // reduce-scatter, recursive halving
    // Partners share a range; the lower one keeps its lower half and sends
    // the upper half, the upper one the reverse.
    auto half = [&](RankId v, bool keep) {
      const BlockId mid = lo[v] + (hi[v] - lo[v]) / 2;
      const bool lower = ((v & mask) == 0) == keep;
      return lower ? std::pair<BlockId, BlockId>{lo[v], mid}
                   : std::pair<BlockId, BlockId>{mid, hi[v]};
    };
    exchange(s, pr, f, mask, Op::reduce, [&](RankId v) { return half(v, false); });
    for (RankId v = 0; v < f.q; ++v) std::tie(lo[v], hi[v]) = half(v, true);
  }
  for (RankId mask = f.q / 2; mask >= 1; mask /= 2) {  // allgather, recursive doubling
    exchange(s, pr, f, mask, Op::copy,
             [&](RankId v) { return std::pair<BlockId, BlockId>{lo[v], hi[v]}; });
    for (RankId v = 0; v < f.q; ++v) {
      const RankId u = v ^ mask;
      if (v < u) {
        lo[v] = lo[u] = std::min(lo[v], lo[u]);
        hi[v] = hi[u] = std::max(hi[v], hi[u]);
      }
    }
  }
  fold_out(s, pr, f, f.q);
  return s;
}

// Ranks are relabelled relative to the root (rel = rank - root mod p), so
// one tree shape serves every root: in step `mask`, each rel that is an odd
// multiple of mask sends to rel - mask.
Schedule binomial_reduce(RankId p, Bytes size_bytes, RankId root) {
  check_common(p, size_bytes, Schedule::kMaxRanks);
  check_root(p, root);
  Schedule s(p, {size_bytes}, make(CollectiveKind::reduce, root));
  s.name = "binomial_reduce(p=" + std::to_string(p) + ", root=" + std::to_string(root) + ")";
  Progress pr(p);
  auto real = [&](RankId rel) { return (rel + root) % p; };
  for (RankId mask = 1; mask < p; mask *= 2) {
    for (RankId rel = mask; rel < p; rel += 2 * mask) {
      const RankId a = real(rel), b = real(rel - mask);
      pr.commit(a, b, pr.send(s, a, b, 0, 1, Op::reduce));
    }
  }
  return s;
}

// The reduce's tree run backwards: the largest distance first, so the
// number of ranks holding the data doubles every step.
Schedule binomial_broadcast(RankId p, Bytes size_bytes, RankId root) {
  check_common(p, size_bytes, Schedule::kMaxRanks);
  check_root(p, root);
  Schedule s(p, {size_bytes}, make(CollectiveKind::broadcast, root));
  s.name = "binomial_broadcast(p=" + std::to_string(p) + ", root=" + std::to_string(root) + ")";
  Progress pr(p);
  auto real = [&](RankId rel) { return (rel + root) % p; };
  RankId top = 1;
  while (top < p) top *= 2;
  for (RankId mask = top / 2; mask >= 1; mask /= 2) {
    for (RankId rel = 0; rel + mask < p; rel += 2 * mask) {
      const RankId a = real(rel), b = real(rel + mask);
      pr.commit(a, b, pr.send(s, a, b, 0, 1, Op::copy));
    }
  }
  return s;
}

}  // namespace wafercoll
