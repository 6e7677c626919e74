// Schedules as data: see schedule.hpp for the representation.
//
// A schedule is stored column-wise in CSR form (per-transfer source and op,
// then offset arrays into flat destination, block-range and dependency
// lists), because the consumers (verifier, cost model, simulator) stream
// over millions of transfers and a vector of small objects would cost an
// allocation and a cache miss each. Every way in (add_transfer, add,
// append_csr, from_arrays) checks a transfer completely before appending
// any of it, so a rejected transfer leaves the schedule as it was and the
// error (a ScheduleError with its kind, index and offending value) names
// the field a user has to fix.
#include "wafercoll/schedule/schedule.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "wafercoll/errors.hpp"

namespace wafercoll {

namespace {

// The prefix of every per-transfer message, so they all read alike.
std::string at(std::int64_t index) { return "transfer " + std::to_string(index); }

}  // namespace

const char* to_string(Op op) { return op == Op::copy ? "copy" : "reduce"; }

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::allreduce: return "allreduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::allgather: return "allgather";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::alltoall: return "alltoall";
    case CollectiveKind::alltoallv: return "alltoallv";
    case CollectiveKind::gather: return "gather";
    case CollectiveKind::scatter: return "scatter";
    case CollectiveKind::unknown: return "unknown";
  }
  return "?";
}

Op op_from_string(const std::string& name) {
  if (name == "copy") return Op::copy;
  if (name == "reduce") return Op::reduce;
  throw std::invalid_argument("op must be 'copy' or 'reduce', got '" + name + "'");
}

CollectiveKind collective_from_string(const std::string& name) {
  for (auto k : {CollectiveKind::reduce, CollectiveKind::allreduce,
                 CollectiveKind::reduce_scatter, CollectiveKind::allgather,
                 CollectiveKind::broadcast, CollectiveKind::alltoall,
                 CollectiveKind::alltoallv, CollectiveKind::gather, CollectiveKind::scatter,
                 CollectiveKind::unknown}) {
    if (name == to_string(k)) return k;
  }
  throw std::invalid_argument(
      "collective must be one of 'reduce', 'allreduce', 'reduce_scatter', "
      "'allgather', 'broadcast', 'alltoall', 'alltoallv', 'gather', 'scatter', "
      "'unknown'; got '" + name + "'");
}

Schedule::Schedule(RankId num_ranks, std::vector<Bytes> block_bytes,
                   Collective collective)
    : num_ranks_(num_ranks), block_bytes_(std::move(block_bytes)),
      collective_(std::move(collective)) {
  if (num_ranks < 1 || num_ranks > kMaxRanks)
    throw std::invalid_argument("ranks must be in [1, " + std::to_string(kMaxRanks) +
                                "], got " + std::to_string(num_ranks));
  if (block_bytes_.empty() || static_cast<std::int64_t>(block_bytes_.size()) > kMaxBlocks)
    throw std::invalid_argument("number of blocks must be in [1, " +
                                std::to_string(kMaxBlocks) + "], got " +
                                std::to_string(block_bytes_.size()));
  // Prefix sums make the size of any block range O(1); checked for
  // overflow here so that no later sum can overflow.
  block_prefix_.assign(block_bytes_.size() + 1, 0);
  for (std::size_t b = 0; b < block_bytes_.size(); ++b) {
    if (block_bytes_[b] < 0)
      throw std::invalid_argument("block_bytes[" + std::to_string(b) +
                                  "] must be >= 0, got " + std::to_string(block_bytes_[b]));
    if (block_prefix_[b] > std::numeric_limits<Bytes>::max() - block_bytes_[b])
      throw std::invalid_argument("block_bytes: total size overflows 64 bits");
    block_prefix_[b + 1] = block_prefix_[b] + block_bytes_[b];
  }
  // The collective's description must match its kind: a root only for
  // rooted kinds, one owner per block only for the kinds that scatter or
  // gather by block. Fields that do not apply are cleared, so two equal
  // collectives compare (and serialise) equal.
  auto& c = collective_;
  const bool rooted = c.kind == CollectiveKind::reduce || c.kind == CollectiveKind::broadcast ||
                      c.kind == CollectiveKind::gather || c.kind == CollectiveKind::scatter;
  const bool owned = c.kind == CollectiveKind::reduce_scatter ||
                     c.kind == CollectiveKind::allgather || moves_blocks(c.kind);
  if (!c.participants.empty() && static_cast<RankId>(c.participants.size()) != num_ranks)
    throw std::invalid_argument("participants must have one entry per rank (" +
                                std::to_string(num_ranks) + "), got " +
                                std::to_string(c.participants.size()));
  if (!c.switches.empty()) {
    if (static_cast<RankId>(c.switches.size()) != num_ranks)
      throw std::invalid_argument("switches must have one entry per rank (" +
                                  std::to_string(num_ranks) + "), got " +
                                  std::to_string(c.switches.size()));
    RankId n_switch = 0;
    for (RankId r = 0; r < num_ranks; ++r) {
      if (c.switches[r] == 0) continue;
      ++n_switch;
      if (!c.participants.empty() && c.participants[r] != 0)
        throw std::invalid_argument("rank " + std::to_string(r) +
                                    " is a switch rank and cannot participate (a switch "
                                    "holds no input and needs no output)");
    }
    // No switch: the same schedule as without the field (equal, same JSON).
    if (n_switch == 0) c.switches.clear();
    if (n_switch > 0 && c.kind == CollectiveKind::unknown)
      throw std::invalid_argument(
          "switch ranks do not apply to an unknown collective (it states no input or output)");
    if (n_switch == num_ranks)
      throw std::invalid_argument("switches: at least one rank must not be a switch");
  }
  if (rooted) {
    if (c.root < 0 || c.root >= num_ranks)
      throw std::invalid_argument(std::string("root of a ") + to_string(c.kind) +
                                  " must be in [0, " + std::to_string(num_ranks - 1) +
                                  "], got " + std::to_string(c.root));
    if (!participates(c.root))
      throw std::invalid_argument("root " + std::to_string(c.root) + " must participate");
  } else {
    c.root = -1;
  }
  if (owned) {
    if (c.owners.size() != block_bytes_.size())
      throw std::invalid_argument(std::string("owners of a ") + to_string(c.kind) +
                                  " must have one entry per block (" +
                                  std::to_string(block_bytes_.size()) + "), got " +
                                  std::to_string(c.owners.size()));
    for (std::size_t b = 0; b < c.owners.size(); ++b) {
      if (c.owners[b] < 0 || c.owners[b] >= num_ranks)
        throw std::invalid_argument("owners[" + std::to_string(b) + "] must be in [0, " +
                                    std::to_string(num_ranks - 1) + "], got " +
                                    std::to_string(c.owners[b]));
      if (!participates(c.owners[b]))
        throw std::invalid_argument("owners[" + std::to_string(b) + "] = rank " +
                                    std::to_string(c.owners[b]) + " must participate");
    }
  } else {
    c.owners.clear();
  }
  if (moves_blocks(c.kind)) {
    check_targets();
  } else {
    c.targets.clear();
  }
}

// The block-moving kinds: one target per block, a participant; a gather's
// blocks all end at the root and a scatter's all start there.
void Schedule::check_targets() const {
  const auto& c = collective_;
  const std::string kind = to_string(c.kind);
  if (c.targets.size() != block_bytes_.size())
    throw std::invalid_argument("targets of a " + kind + " must have one entry per block (" +
                                std::to_string(block_bytes_.size()) + "), got " +
                                std::to_string(c.targets.size()));
  for (std::size_t b = 0; b < c.targets.size(); ++b) {
    const RankId t = c.targets[b];
    if (t < 0 || t >= num_ranks_)
      throw std::invalid_argument("targets[" + std::to_string(b) + "] must be in [0, " +
                                  std::to_string(num_ranks_ - 1) + "], got " +
                                  std::to_string(t));
    if (!participates(t))
      throw std::invalid_argument("targets[" + std::to_string(b) + "] = rank " +
                                  std::to_string(t) + " must participate");
    if (c.kind == CollectiveKind::gather && t != c.root)
      throw std::invalid_argument("every block of a gather ends at the root " +
                                  std::to_string(c.root) + ", but targets[" +
                                  std::to_string(b) + "] = " + std::to_string(t));
    if (c.kind == CollectiveKind::scatter && c.owners[b] != c.root)
      throw std::invalid_argument("every block of a scatter starts at the root " +
                                  std::to_string(c.root) + ", but owners[" +
                                  std::to_string(b) + "] = " + std::to_string(c.owners[b]));
  }
}

// Builders that know their size up front reserve once; two dependencies per
// transfer is the common case (previous step on both sides).
void Schedule::reserve(std::int64_t transfers, std::int64_t ranges_per_transfer) {
  src_.reserve(transfers);
  op_.reserve(transfers);
  dst_off_.reserve(transfers);
  dst_.reserve(transfers);
  range_off_.reserve(transfers);
  ranges_.grow(std::max<std::int64_t>(0, transfers * ranges_per_transfer - ranges_.size()));
  dep_off_.reserve(transfers);
  dep_.reserve(transfers * 2);
}

// Source and destinations of one transfer: in range, at least one
// destination, none equal to the source, none twice (a multicast names each
// destination once; quadratic in the destinations, which are few).
// Templated over the integer type of the caller's arrays (RankId, or the
// kit's int64), so values are checked before anything narrows them.
template <typename I>
void Schedule::check_transfer_fields(std::int64_t index, I src, const I* dbegin,
                                     const I* dend) const {
  if (src < 0 || src >= num_ranks_)
    throw ScheduleError("field", at(index) + ": field 'src' must be a rank in [0, " +
                                     std::to_string(num_ranks_ - 1) + "], got " +
                                     std::to_string(src), index, src);
  if (dbegin == dend)
    throw ScheduleError("field", at(index) + ": field 'dst' must list at least one rank",
                        index, src);
  // A long list (a broadcast to a whole wafer) is checked for repeats
  // against a bitmap of the ranks seen, a short one pairwise; either way the
  // first rank that repeats an earlier one is reported.
  constexpr std::ptrdiff_t kPairwise = 64;
  std::vector<bool> seen;
  if (dend - dbegin > kPairwise) seen.assign(static_cast<std::size_t>(num_ranks_), false);
  for (const I* d = dbegin; d != dend; ++d) {
    if (*d < 0 || *d >= num_ranks_)
      throw ScheduleError("field", at(index) + ": field 'dst' holds rank " +
                                       std::to_string(*d) + ", outside [0, " +
                                       std::to_string(num_ranks_ - 1) + "]", index, *d);
    if (*d == src)
      throw ScheduleError("field", at(index) + ": field 'dst' contains the source rank " +
                                       std::to_string(src), index, src);
    bool repeat = false;
    if (seen.empty()) {
      for (const I* e = dbegin; e != d && !repeat; ++e) repeat = *e == *d;
    } else {
      repeat = seen[static_cast<std::size_t>(*d)];
      seen[static_cast<std::size_t>(*d)] = true;
    }
    if (repeat)
      throw ScheduleError("field", at(index) + ": field 'dst' lists rank " +
                                       std::to_string(*d) + " twice", index, *d);
  }
}

// Appends a transfer's block ranges in canonical form: sorted, overlapping
// ranges rejected (a block sent twice in one message is a bug in a
// builder), adjacent ranges merged. Canonical ranges make two transfers that
// move the same blocks compare equal, which the simulator's stream
// detection relies on. Everything is checked before anything is appended,
// so a rejected transfer leaves no range behind (append_csr keeps the
// transfers of a batch before a bad one).
namespace {

ScheduleError bad_range(const std::string& where, std::int64_t index, std::int64_t lo,
                        std::int64_t hi, std::int64_t nb) {
  return ScheduleError("field", where + ": field 'blocks' holds range [" +
                                    std::to_string(lo) + ", " + std::to_string(hi) +
                                    "), which is empty or outside [0, " +
                                    std::to_string(nb) + ")", index, -1, lo);
}

}  // namespace

void Schedule::append_ranges(std::int64_t index, std::vector<BlockRange>& ranges) {
  if (ranges.empty())
    throw ScheduleError("field", at(index) + ": field 'blocks' must not be empty", index);
  const BlockId nb = num_blocks();
  for (const auto& r : ranges) {
    if (r.lo < 0 || r.hi > nb || r.lo >= r.hi) throw bad_range(at(index), index, r.lo, r.hi, nb);
  }
  if (ranges.size() > 1)
    std::sort(ranges.begin(), ranges.end(),
              [](const BlockRange& a, const BlockRange& b) { return a.lo < b.lo; });
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].lo < ranges[i - 1].hi)
      throw ScheduleError("field", at(index) + ": field 'blocks' names block " +
                                       std::to_string(ranges[i].lo) + " twice", index, -1,
                          ranges[i].lo);
  // adjacent ranges are merged: [0, 2) and [2, 3) are kept as [0, 3)
  std::size_t kept = 0;
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].lo == ranges[kept].hi)
      ranges[kept].hi = ranges[i].hi;
    else
      ranges[++kept] = ranges[i];
  }
  for (std::size_t i = 0; i <= kept; ++i) ranges_.push_back(ranges[i]);
  range_off_.push(ranges_.size());
}

TransferId Schedule::add_transfer(RankId src, const std::vector<RankId>& dsts,
                                  std::vector<BlockRange> ranges, Op op,
                                  const std::vector<TransferId>& deps) {
  const std::int64_t index = num_transfers();
  if (index >= kMaxTransfers)
    throw std::length_error("a schedule holds at most " + std::to_string(kMaxTransfers) +
                            " transfers");
  check_transfer_fields(index, src, dsts.data(), dsts.data() + dsts.size());
  if (op != Op::copy && op != Op::reduce)
    throw ScheduleError("field", at(index) + ": field 'op' must be copy or reduce", index);
  for (std::size_t i = 0; i < deps.size(); ++i) {
    if (deps[i] < 0 || deps[i] >= index)
      throw ScheduleError("dependency", at(index) + ": field 'deps' holds " +
                                            std::to_string(deps[i]) +
                                            "; a dependency must be an earlier transfer in [0, " +
                                            std::to_string(index - 1) + "]", index);
    for (std::size_t j = 0; j < i; ++j)
      if (deps[j] == deps[i])
        throw ScheduleError("dependency", at(index) + ": field 'deps' lists transfer " +
                                              std::to_string(deps[i]) + " twice", index);
  }
  append_ranges(index, ranges);
  src_.push_back(src);
  op_.push_back(static_cast<std::uint8_t>(op));
  dst_.insert(dst_.end(), dsts.begin(), dsts.end());
  dst_off_.push(static_cast<std::int64_t>(dst_.size()));
  dep_.insert(dep_.end(), deps.begin(), deps.end());
  dep_off_.push(static_cast<std::int64_t>(dep_.size()));
  return static_cast<TransferId>(index);
}

// The builders' short form: negative ids mean "no dependency" (the first
// step of a chain) and repeated ids collapse, so builders need not special-
// case either.
TransferId Schedule::add(RankId src, RankId dst, BlockId lo, BlockId hi, Op op,
                         std::initializer_list<TransferId> deps) {
  std::vector<TransferId> d;
  d.reserve(deps.size());
  for (TransferId x : deps)
    if (x >= 0 && std::find(d.begin(), d.end(), x) == d.end()) d.push_back(x);
  return add_transfer(src, {dst}, {BlockRange{lo, hi}}, op, d);
}

// Bulk append from the Python kit's arrays. Dependencies come either as CSR
// (dep_off) or as fixed-width padded rows (-1 padding, duplicates allowed),
// which NumPy code produces more easily; rows are normalised to the
// distinct dependencies, sorted.
void Schedule::append_csr(std::int64_t n, const RankId* src, const std::uint8_t* op,
                          const std::int64_t* dst_off, const RankId* dsts,
                          const std::int64_t* rng_off, const BlockId* lo, const BlockId* hi,
                          const std::int64_t* dep_off, const TransferId* deps,
                          std::int64_t dep_width) {
  append_csr_from(n, src, op, dst_off, dsts, rng_off, lo, hi, dep_off, deps, dep_width);
}

void Schedule::append_csr(std::int64_t n, const std::int64_t* src, const std::uint8_t* op,
                          const std::int64_t* dst_off, const std::int64_t* dsts,
                          const std::int64_t* rng_off, const std::int64_t* lo,
                          const std::int64_t* hi, const std::int64_t* dep_off,
                          const std::int64_t* deps, std::int64_t dep_width) {
  append_csr_from(n, src, op, dst_off, dsts, rng_off, lo, hi, dep_off, deps, dep_width);
}

// The inline path of append_csr_from (schedule.hpp): transfers with one
// destination and one range, their candidate dependencies sorted in a small
// array, written into the arrays sized for the batch at once. Returns how
// many it appended: it stops at the first transfer that fails a check.
template <typename I>
std::int64_t Schedule::append_simple(std::int64_t n, const I* src, const std::uint8_t* op,
                                     const I* dsts, const I* lo, const I* hi,
                                     const std::int64_t* dep_off, const I* deps,
                                     std::int64_t dep_width) {
  // (destinations and dependencies may run ahead of the transfers: a
  // multicast has several, a transfer any number of dependencies)
  const std::size_t t0 = src_.size(), d0 = dst_.size(), e0 = dep_.size();
  const std::int64_t most = dep_off ? dep_off[n] - dep_off[0] : n * dep_width;
  src_.resize(t0 + static_cast<std::size_t>(n));
  op_.resize(t0 + static_cast<std::size_t>(n));
  dst_.resize(d0 + static_cast<std::size_t>(n));
  dep_.resize(e0 + static_cast<std::size_t>(most));
  RankId* out_src = src_.data() + t0;
  std::uint8_t* out_op = op_.data() + t0;
  RankId* out_dst = dst_.data() + d0;
  TransferId* out_dep = dep_.data() + e0;
  const std::int64_t nr = num_ranks_, nb = num_blocks();
  std::int64_t i = 0, e = 0;
  for (; i < n; ++i) {
    const std::int64_t index = static_cast<std::int64_t>(t0) + i;
    const std::int64_t sr = src[i], ds = dsts[i], l = lo[i], h = hi[i];
    bool ok = sr >= 0 && sr < nr && ds >= 0 && ds < nr && sr != ds && l >= 0 && l < h &&
              h <= nb && op[i] <= 1;
    I cand[kFastWidth];
    const I* dl = cand;
    std::int64_t k = 0;
    if (dep_off) {
      dl = deps + dep_off[i];
      k = dep_off[i + 1] - dep_off[i];
    } else if (dep_width == 2) {
      // The common width (a rank's last send and last receive), in order
      // without the insertion sort's branches, which the data's order made
      // unpredictable: the smaller and the larger when they are distinct
      // candidates, else the larger alone (if a candidate).
      const I a = deps[2 * i], b = deps[2 * i + 1];
      const I small = std::min(a, b), large = std::max(a, b);
      if (large >= 0) {
        const bool two = small >= 0 && small != large;
        cand[0] = two ? small : large;
        cand[1] = large;
        k = two ? 2 : 1;
      }
    } else {
      // distinct candidates >= 0, sorted (insertion sort: a few at most)
      for (std::int64_t a = i * dep_width; a < (i + 1) * dep_width; ++a) {
        const I x = deps[a];
        if (x < 0) continue;
        std::int64_t j = k;
        while (j > 0 && cand[j - 1] > x) --j;
        if (j > 0 && cand[j - 1] == x) continue;
        for (std::int64_t m = k; m > j; --m) cand[m] = cand[m - 1];
        cand[j] = x;
        ++k;
      }
    }
    for (std::int64_t a = 0; a < k && ok; ++a)
      ok = dl[a] >= 0 && dl[a] < index && (a == 0 || dl[a] > dl[a - 1]);
    if (!ok) break;
    out_src[i] = static_cast<RankId>(sr);
    out_op[i] = op[i];
    out_dst[i] = static_cast<RankId>(ds);
    dst_off_.push(static_cast<std::int64_t>(d0) + i + 1);
    ranges_.push_back(BlockRange{static_cast<BlockId>(l), static_cast<BlockId>(h)});
    range_off_.push(ranges_.size());
    for (std::int64_t a = 0; a < k; ++a) out_dep[e + a] = static_cast<TransferId>(dl[a]);
    e += k;
    dep_off_.push(static_cast<std::int64_t>(e0) + e);
  }
  src_.resize(t0 + static_cast<std::size_t>(i));
  op_.resize(t0 + static_cast<std::size_t>(i));
  dst_.resize(d0 + static_cast<std::size_t>(i));
  dep_.resize(e0 + static_cast<std::size_t>(e));
  return i;
}

template <typename I>
void Schedule::append_csr_from(std::int64_t n, const I* src, const std::uint8_t* op,
                               const std::int64_t* dst_off, const I* dsts,
                               const std::int64_t* rng_off, const I* lo, const I* hi,
                               const std::int64_t* dep_off, const I* deps,
                               std::int64_t dep_width) {
  if (n < 0) throw std::invalid_argument("append_csr: negative transfer count");
  std::vector<I> picked;  // padded rows: the distinct candidates, sorted
  if (num_transfers() + n > kMaxTransfers)
    throw std::length_error("a schedule holds at most " + std::to_string(kMaxTransfers) +
                            " transfers");
  // Room for the batch at once, grown geometrically: reserving the exact
  // size on every batch would make a long program quadratic, and letting
  // the vectors grow element by element copies a batch of 16 M transfers
  // some 25 times.
  grow(src_, n);
  grow(op_, n);
  grow(dst_, dst_off ? dst_off[n] : n);
  ranges_.grow(rng_off ? rng_off[n] : n);
  grow(dep_, dep_off ? dep_off[n] : n * dep_width);
  std::vector<BlockRange> ranges;
  // The common transfers (append_simple), in sub-batches whose arrays stay
  // small; from the first that fails a check on, the general path below,
  // which reports the fault.
  std::int64_t done = 0;
  if (!dst_off && !rng_off && (dep_off || dep_width <= kFastWidth)) {
    constexpr std::int64_t kSub = std::int64_t{1} << 16;
    while (done < n) {
      const std::int64_t m = std::min(n - done, kSub);
      const std::int64_t got = append_simple(
          m, src + done, op + done, dsts + done, lo + done, hi + done,
          dep_off ? dep_off + done : nullptr, dep_off ? deps : deps + done * dep_width,
          dep_width);
      done += got;
      if (got < m) break;
    }
  }
  for (std::int64_t i = done; i < n; ++i) {
    const std::int64_t index = num_transfers();
    const std::int64_t d0 = dst_off ? dst_off[i] : i, d1 = dst_off ? dst_off[i + 1] : i + 1;
    check_transfer_fields(index, src[i], dsts + d0, dsts + d1);
    if (op[i] > 1)
      throw ScheduleError("field", at(index) + ": field 'op' must be copy or reduce", index);
    const I* dl = deps;
    std::int64_t k0 = 0, k1 = 0;
    if (dep_off) {
      k0 = dep_off[i];
      k1 = dep_off[i + 1];
    } else {
      picked.clear();
      for (std::int64_t a = i * dep_width; a < (i + 1) * dep_width; ++a)
        if (deps[a] >= 0 && std::find(picked.begin(), picked.end(), deps[a]) == picked.end())
          picked.push_back(deps[a]);
      std::sort(picked.begin(), picked.end());
      dl = picked.data();
      k1 = static_cast<std::int64_t>(picked.size());
    }
    // Increasing lists within range (what the kit and the readers hand over)
    // are fine in one pass; anything else is checked pair by pair, so that
    // the first fault in list order is the one reported.
    bool fine = true;
    for (std::int64_t a = k0; a < k1 && fine; ++a)
      fine = dl[a] >= 0 && dl[a] < index && (a == k0 || dl[a] > dl[a - 1]);
    for (std::int64_t a = k0; a < k1 && !fine; ++a) {
      if (dl[a] < 0 || dl[a] >= index)
        throw ScheduleError("dependency", at(index) + ": field 'deps' holds " +
                                              std::to_string(dl[a]) +
                                              "; a dependency must be an earlier transfer "
                                              "in [0, " +
                                              std::to_string(index - 1) + "]", index);
      for (std::int64_t b = k0; b < a; ++b)
        if (dl[b] == dl[a])
          throw ScheduleError("dependency", at(index) + ": field 'deps' lists transfer " +
                                                std::to_string(dl[a]) + " twice", index);
    }
    const std::int64_t r0 = rng_off ? rng_off[i] : i, r1 = rng_off ? rng_off[i + 1] : i + 1;
    ranges.clear();
    for (std::int64_t r = r0; r < r1; ++r) {
      // wider values are checked here, before they narrow (same message)
      if constexpr (sizeof(I) > sizeof(BlockId))
        if (lo[r] < 0 || hi[r] > num_blocks() || lo[r] >= hi[r])
          throw bad_range(at(index), index, lo[r], hi[r], num_blocks());
      ranges.push_back(BlockRange{static_cast<BlockId>(lo[r]), static_cast<BlockId>(hi[r])});
    }
    append_ranges(index, ranges);
    src_.push_back(static_cast<RankId>(src[i]));
    op_.push_back(op[i]);
    dst_.insert(dst_.end(), dsts + d0, dsts + d1);
    dst_off_.push(static_cast<std::int64_t>(dst_.size()));
    dep_.insert(dep_.end(), dl + k0, dl + k1);
    dep_off_.push(static_cast<std::int64_t>(dep_.size()));
  }
}

// Copies 0 and 1 through append_csr's checks, the rest shifted (schedule.hpp).
void Schedule::append_tiled(std::int64_t n, std::int64_t chunks, std::int64_t block_stride,
                            const std::int64_t* src, const std::uint8_t* op,
                            const std::int64_t* dst, const std::int64_t* lo,
                            const std::int64_t* hi, const std::int64_t* first_off,
                            const std::int64_t* first, const std::int64_t* later_off,
                            const std::int64_t* later) {
  if (n < 0 || chunks < 0 || block_stride < 0)
    throw std::invalid_argument("append_tiled: negative count, chunks or block stride");
  if (n == 0 || chunks == 0) return;
  if (chunks > 1 && block_stride > num_blocks())
    throw std::invalid_argument("append_tiled: block_stride beyond the schedule's blocks");
  if (chunks > kMaxTransfers / n || num_transfers() + n * chunks > kMaxTransfers)
    throw std::length_error("a schedule holds at most " + std::to_string(kMaxTransfers) +
                            " transfers");
  // the last copy's blocks, checked before anything is added (a range
  // that is malformed in copy 0 already is reported by copy 0's append)
  const std::int64_t shift = (chunks - 1) * block_stride;
  for (std::int64_t i = 0; i < n; ++i)
    if (lo[i] >= 0 && lo[i] < hi[i] && hi[i] > num_blocks() - shift) {
      const std::int64_t index = num_transfers() + (chunks - 1) * n + i;
      throw bad_range(at(index), index, lo[i] + shift, hi[i] + shift, num_blocks());
    }
  append_csr_from(n, src, op, nullptr, dst, nullptr, lo, hi, first_off, first, 0);
  if (chunks == 1) return;
  std::vector<std::int64_t> lo1(lo, lo + n), hi1(hi, hi + n);
  for (std::int64_t i = 0; i < n; ++i) {
    lo1[static_cast<std::size_t>(i)] += block_stride;
    hi1[static_cast<std::size_t>(i)] += block_stride;
  }
  append_csr_from(n, src, op, nullptr, dst, nullptr, lo1.data(), hi1.data(), later_off, later,
                  0);
  // copies 2 .. chunks - 1, into arrays sized at once: each value is one
  // checked in copy 0 or 1, or shifted within the bounds checked above
  const auto rest = static_cast<std::size_t>((chunks - 2) * n);
  const std::size_t t0 = src_.size(), d0 = dst_.size(), e0 = dep_.size();
  const auto per_copy = static_cast<std::size_t>(later_off[n]);
  src_.resize(t0 + rest);
  op_.resize(t0 + rest);
  dst_.resize(d0 + rest);
  dep_.resize(e0 + static_cast<std::size_t>(chunks - 2) * per_copy);
  ranges_.grow(static_cast<std::int64_t>(rest));
  std::size_t t = t0, d = d0, e = e0;
  for (std::int64_t c = 2; c < chunks; ++c) {
    const auto blocks = static_cast<BlockId>(c * block_stride);
    const auto ids = static_cast<TransferId>((c - 1) * n);
    for (std::int64_t i = 0; i < n; ++i, ++t, ++d) {
      src_[t] = static_cast<RankId>(src[i]);
      op_[t] = op[i];
      dst_[d] = static_cast<RankId>(dst[i]);
      dst_off_.push(static_cast<std::int64_t>(d) + 1);
      ranges_.push_back(BlockRange{static_cast<BlockId>(lo[i]) + blocks,
                                   static_cast<BlockId>(hi[i]) + blocks});
      range_off_.push(ranges_.size());
      for (std::int64_t a = later_off[i]; a < later_off[i + 1]; ++a)
        dep_[e++] = static_cast<TransferId>(later[a]) + ids;
      dep_off_.push(static_cast<std::int64_t>(e));
    }
  }
}

// Per step: its candidate rows for append_csr, the step, then the ranks'
// last events (a rank out of range gets no candidate; the append reports it).
void Schedule::append_sendrecv(std::int64_t n, const std::int64_t* src,
                               const std::uint8_t* op, const std::int64_t* dst,
                               const std::int64_t* lo, const std::int64_t* hi,
                               std::int64_t steps, const std::int64_t* step_off,
                               std::int64_t* last_in, std::int64_t* last_out) {
  if (steps < 0 || step_off[0] != 0 || step_off[steps] != n)
    throw std::invalid_argument("append_sendrecv: step offsets must run from 0 to n");
  std::vector<std::int64_t> cand;
  const std::int64_t nr = num_ranks_;
  auto last = [nr](const std::int64_t* v, std::int64_t r) {
    return r >= 0 && r < nr ? v[r] : std::int64_t{-1};
  };
  for (std::int64_t j = 0; j < steps; ++j) {
    const std::int64_t a = step_off[j], m = step_off[j + 1] - a;
    if (m < 0) throw std::invalid_argument("append_sendrecv: step offsets must not decrease");
    cand.resize(static_cast<std::size_t>(4 * m));
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t s_ = src[a + i], d = dst[a + i];
      std::int64_t* c = cand.data() + 4 * i;
      c[0] = last(last_in, s_);
      c[1] = last(last_out, s_);
      c[2] = last(last_in, d);
      c[3] = last(last_out, d);
    }
    append_csr_from(m, src + a, op + a, nullptr, dst + a, nullptr, lo + a, hi + a, nullptr,
                    cand.data(), 4);
    const std::int64_t first = num_transfers() - m;
    for (std::int64_t i = 0; i < m; ++i) {
      last_out[src[a + i]] = first + i;
      last_in[dst[a + i]] = first + i;
    }
  }
}

// A whole schedule from arrays (deserialisation, interop). Unlike the other
// ways in, a dependency may point forward here (imported schedules need not
// be in dependency order): backward_deps_ records whether every dependency
// points back, which lets topological_order() and the simulator skip the
// sort and the cycle check.
Schedule Schedule::from_arrays(RankId num_ranks, std::vector<Bytes> block_bytes,
                               Collective collective, const std::vector<RankId>& src,
                               const std::vector<std::uint8_t>& op,
                               const std::vector<std::int64_t>& dst_offsets,
                               const std::vector<RankId>& dsts,
                               const std::vector<std::int64_t>& range_offsets,
                               const std::vector<BlockId>& range_lo,
                               const std::vector<BlockId>& range_hi,
                               const std::vector<std::int64_t>& dep_offsets,
                               const std::vector<TransferId>& deps) {
  Schedule s(num_ranks, std::move(block_bytes), std::move(collective));
  const std::int64_t n = static_cast<std::int64_t>(src.size());
  if (n > kMaxTransfers)
    throw std::invalid_argument("a schedule holds at most " + std::to_string(kMaxTransfers) +
                                " transfers");
  auto check_offsets = [n](const std::vector<std::int64_t>& off, std::size_t len,
                           const char* what) {
    if (static_cast<std::int64_t>(off.size()) != n + 1 || off.front() != 0 ||
        off.back() != static_cast<std::int64_t>(len))
      throw std::invalid_argument(std::string("malformed ") + what + " offsets");
    for (std::int64_t i = 0; i < n; ++i)
      if (off[i + 1] < off[i])
        throw std::invalid_argument(std::string("malformed ") + what + " offsets at " +
                                    std::to_string(i));
  };
  if (static_cast<std::int64_t>(op.size()) != n || range_lo.size() != range_hi.size())
    throw std::invalid_argument("transfer arrays have different lengths");
  check_offsets(dst_offsets, dsts.size(), "dst");
  check_offsets(range_offsets, range_lo.size(), "blocks");
  check_offsets(dep_offsets, deps.size(), "deps");
  s.reserve(n);
  std::vector<BlockRange> ranges;
  for (std::int64_t t = 0; t < n; ++t) {
    s.check_transfer_fields(t, src[t], dsts.data() + dst_offsets[t],
                            dsts.data() + dst_offsets[t + 1]);
    if (op[t] > 1)
      throw ScheduleError("field", at(t) + ": field 'op' must be 'copy' or 'reduce'", t);
    for (std::int64_t i = dep_offsets[t]; i < dep_offsets[t + 1]; ++i) {
      const TransferId d = deps[i];
      if (d < 0 || d >= n)
        throw ScheduleError("dependency", at(t) + ": field 'deps' holds " +
                                              std::to_string(d) + ", outside [0, " +
                                              std::to_string(n - 1) + "]", t);
      if (d == t)
        throw ScheduleError("cycle", at(t) + ": field 'deps' lists the transfer itself", t);
      for (std::int64_t j = dep_offsets[t]; j < i; ++j)
        if (deps[j] == d)
          throw ScheduleError("dependency", at(t) + ": field 'deps' lists transfer " +
                                                std::to_string(d) + " twice", t);
      if (d > t) s.backward_deps_ = false;
    }
    ranges.clear();
    for (std::int64_t i = range_offsets[t]; i < range_offsets[t + 1]; ++i)
      ranges.push_back(BlockRange{range_lo[i], range_hi[i]});
    s.append_ranges(t, ranges);
    s.src_.push_back(src[t]);
    s.op_.push_back(op[t]);
    s.dst_.insert(s.dst_.end(), dsts.begin() + dst_offsets[t],
                  dsts.begin() + dst_offsets[t + 1]);
    s.dst_off_.push(static_cast<std::int64_t>(s.dst_.size()));
    s.dep_.insert(s.dep_.end(), deps.begin() + dep_offsets[t],
                  deps.begin() + dep_offsets[t + 1]);
    s.dep_off_.push(static_cast<std::int64_t>(s.dep_.size()));
  }
  return s;
}

std::int64_t Schedule::transfer_array_bytes() const {
  return static_cast<std::int64_t>(src_.size() * sizeof(RankId) + op_.size() +
                                   dst_.size() * sizeof(RankId) +
                                   dep_.size() * sizeof(TransferId)) +
         dst_off_.stored_bytes() + range_off_.stored_bytes() + ranges_.stored_bytes() +
         dep_off_.stored_bytes();
}

Bytes Schedule::transfer_bytes(TransferId t) const {
  Bytes total = 0;
  for (auto r = ranges_begin(t); r != ranges_end(t); ++r)
    total += range_bytes(r->lo, r->hi);
  return total;
}

std::int64_t Schedule::transfer_blocks(TransferId t) const {
  std::int64_t total = 0;
  for (auto r = ranges_begin(t); r != ranges_end(t); ++r) total += r->hi - r->lo;
  return total;
}

bool Schedule::holds_input(RankId r, BlockId b) const {
  if (!participates(r)) return false;
  switch (collective_.kind) {
    case CollectiveKind::broadcast: return r == collective_.root;
    case CollectiveKind::allgather: return collective_.owners[b] == r;
    case CollectiveKind::alltoall:
    case CollectiveKind::alltoallv:
    case CollectiveKind::gather:
    case CollectiveKind::scatter: return collective_.owners[b] == r;
    default: return true;
  }
}

// n blocks whose sizes differ by at most one byte, the larger first.
std::vector<Bytes> even_blocks(Bytes total_bytes, std::int64_t n) {
  if (total_bytes < 0)
    throw std::invalid_argument("size_bytes must be >= 0, got " + std::to_string(total_bytes));
  if (n < 1) throw std::invalid_argument("number of blocks must be >= 1");
  std::vector<Bytes> blocks(static_cast<std::size_t>(n), total_bytes / n);
  for (std::int64_t b = 0; b < total_bytes % n; ++b) blocks[b] += 1;
  return blocks;
}

}  // namespace wafercoll
