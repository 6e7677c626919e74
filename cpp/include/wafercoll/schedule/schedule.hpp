// The schedule: the one data structure every analysis of wafercoll consumes.
//
//   ranks 0..P-1, each holding a vector cut into the same B blocks:
//
//        block:    0      1      2           B-1
//   rank 0      [ b0  |  b1  |  b2  | ... | bB-1 ]   block_bytes[b] bytes each
//   rank 1      [ b0  |  b1  |  b2  | ... | bB-1 ]
//   ...
//
// A transfer moves a set of blocks (sorted, disjoint half-open ranges) from one
// source rank to one or more destination ranks (multicast), either copying
// them over the destination's blocks or reducing (adding) into them, and it
// depends on earlier transfers. Data semantics (followed by the verifier, the
// executors and the simulator alike):
//
//  * A transfer starts when all of its dependencies have completed and reads
//    its source blocks as they stand at that moment: exactly the writes that
//    happen-before it (its transitive dependencies). It writes its destination
//    blocks when it completes.
//  * Writes to one block of one rank must be ordered by dependencies.
//  * A read may overlap a concurrent write to the same block only when the
//    writer cannot complete before the reader starts, i.e. every dependency of
//    the reader happens-before the writer (a pairwise exchange in one step is
//    the typical case). Under these rules every execution order the
//    dependencies allow computes the same values.
//
// The schedule states the collective it implements, which ranks participate
// (hold input and need the output) and, per collective, the root or the block
// owners.
//
// Switch ranks (in-network reduction and multicast: NVLink SHARP, InfiniBand
// SHARP). A rank may be of kind *switch*: it runs on a switch (a topology's
// hidden router), owns no data, holds no input and needs no output, so it
// never participates. It receives, reduces what it receives into its
// buffer and forwards (often multicasts) the result. The one difference
// from an ordinary non-participant relay is timing: a switch accumulates
// atomically, so reductions into one of its cells need not be ordered among
// themselves (verify.hpp states the rules that keep the proof sound).
//
// Storage is struct-of-arrays (CSR) so that schedules with millions of
// transfers stay compact. The offsets into the destination, block-range and
// dependency lists are CsrOffsets (csr_offsets.hpp): not stored at all while
// every transfer has one destination (one range) or, for the dependencies,
// while a first run of transfers has none and every later one the same
// number; else 32-bit while a list holds fewer than 2^31 entries. The block
// ranges are a BlockRangeList (block_ranges.hpp). A unicast transfer with
// one range of one block and two dependencies then takes 4 (src) + 1 (op) +
// 4 (dst) + 4 (range: its first block) + 8 (deps) + 4 (dependency offset,
// none when they are regular) = 25 or 21 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wafercoll/schedule/block_ranges.hpp"
#include "wafercoll/schedule/csr_offsets.hpp"
#include "wafercoll/units.hpp"

namespace wafercoll {

enum class Op : std::uint8_t { copy = 0, reduce = 1 };

enum class CollectiveKind : std::uint8_t {
  reduce = 0,          // root ends with the sum of all participants' vectors
  allreduce = 1,       // every participant ends with the sum
  reduce_scatter = 2,  // the owner of each block ends with that block's sum
  allgather = 3,       // every participant ends with every block of its owner
  broadcast = 4,       // every participant ends with the root's vector
  // The block-moving kinds: block b starts at owners[b] and must end, once,
  // at targets[b]; nothing is reduced.
  alltoall = 5,        // block i*p + j: rank i's block j, ends at rank j's slot i
  alltoallv = 6,       // alltoall with per-pair byte counts (block_bytes)
  gather = 7,          // block i: rank i's vector, ends at the root
  scatter = 8,         // block j: part j of the root's vector, ends at rank j
  unknown = 9,         // not stated (an imported message program): the
                       // transfers are all there is; nothing to verify
};

// Whether a kind moves blocks from owners to targets (alltoall(v), gather,
// scatter) rather than reducing or replicating them.
constexpr bool moves_blocks(CollectiveKind k) {
  return k == CollectiveKind::alltoall || k == CollectiveKind::alltoallv ||
         k == CollectiveKind::gather || k == CollectiveKind::scatter;
}

const char* to_string(Op op);
const char* to_string(CollectiveKind kind);
Op op_from_string(const std::string& name);
CollectiveKind collective_from_string(const std::string& name);

struct Collective {
  CollectiveKind kind = CollectiveKind::allreduce;
  RankId root = -1;                    // reduce, broadcast
  std::vector<RankId> owners;          // per block: reduce_scatter, allgather and
                                       // the block-moving kinds (where it starts)
  std::vector<RankId> targets;         // per block: the block-moving kinds (where it ends)
  std::vector<std::uint8_t> participants;  // per rank (1 = participates); empty = all
  std::vector<std::uint8_t> switches;      // per rank (1 = a switch rank); empty = none
};

class Schedule {
 public:
  // Hard limits that keep a malformed request from exhausting memory.
  static constexpr std::int64_t kMaxRanks = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 26;
  static constexpr std::int64_t kMaxTransfers = std::int64_t{1} << 26;

  Schedule(RankId num_ranks, std::vector<Bytes> block_bytes, Collective collective);

  // Append a transfer. dsts: distinct ranks != src. ranges: non-empty, within
  // [0, num_blocks); they are sorted, and adjacent ones merged; overlapping
  // ranges are rejected. deps: distinct, each an existing transfer (< index of
  // the new one), so schedules built this way are acyclic by construction.
  TransferId add_transfer(RankId src, const std::vector<RankId>& dsts,
                          std::vector<BlockRange> ranges, Op op,
                          const std::vector<TransferId>& deps);
  // Builders' fast path: one destination, one range; deps < 0 are ignored and
  // duplicates removed.
  TransferId add(RankId src, RankId dst, BlockId lo, BlockId hi, Op op,
                 std::initializer_list<TransferId> deps);

  // Bulk append of n transfers in CSR form: the kit's fast path, which adds
  // one step of a program at a time without building intermediate arrays.
  // Offsets are relative to this batch (they start at 0); a null offsets
  // pointer means one destination (or one range) per transfer. Every transfer
  // is checked as by add_transfer; dependencies must be earlier transfers.
  // With dep_off == nullptr, deps is an n x dep_width matrix of candidates:
  // entries < 0 are skipped and repeats dropped, the rest kept in increasing
  // order (the kit's fixed-width dependency rules). On an error the transfers
  // of the batch before the bad one stay added.
  void append_csr(std::int64_t n, const RankId* src, const std::uint8_t* op,
                  const std::int64_t* dst_off, const RankId* dsts,
                  const std::int64_t* rng_off, const BlockId* lo, const BlockId* hi,
                  const std::int64_t* dep_off, const TransferId* deps,
                  std::int64_t dep_width = 0);
  // The same from 64-bit values (NumPy's default integers), read in place:
  // every value is checked against its range before it is narrowed to the
  // schedule's 32-bit types, so no converted copy of the arrays is needed.
  void append_csr(std::int64_t n, const std::int64_t* src, const std::uint8_t* op,
                  const std::int64_t* dst_off, const std::int64_t* dsts,
                  const std::int64_t* rng_off, const std::int64_t* lo,
                  const std::int64_t* hi, const std::int64_t* dep_off,
                  const std::int64_t* deps, std::int64_t dep_width = 0);

  // Bulk append of `chunks` copies of one chunk's program (the pipelining
  // of a schedule over chunks of its data, written once): n transfers of one
  // destination and one block range each; copy c moves blocks [lo + c s,
  // hi + c s) for s = block_stride. Copy 0 depends on first (CSR, first_off
  // relative to the batch), copy 1 on later (later_off likewise), both as
  // ids of the whole schedule; copy c >= 2 on copy 1's lists shifted by
  // (c - 1) n. Copies 0 and 1 are checked as by append_csr. A shift keeps a
  // list distinct, increasing and below its own transfer, so once the last
  // copy's blocks are checked to lie in range the later copies are written
  // without a check per transfer.
  void append_tiled(std::int64_t n, std::int64_t chunks, std::int64_t block_stride,
                    const std::int64_t* src, const std::uint8_t* op, const std::int64_t* dst,
                    const std::int64_t* lo, const std::int64_t* hi,
                    const std::int64_t* first_off, const std::int64_t* first,
                    const std::int64_t* later_off, const std::int64_t* later);

  // Bulk append of `steps` steps of the kit's "sendrecv" rule (step j is
  // transfers step_off[j] .. step_off[j + 1] - 1 of the arrays; one
  // destination and one range each): a transfer a -> b depends on the last
  // earlier step's receive into and send from a and b, as last_in and
  // last_out (one id per rank, -1 for none) say; after each step the
  // step's sends and receives take their place (the later of two in one
  // step). Both arrays are updated in place. Checked as by append_csr.
  void append_sendrecv(std::int64_t n, const std::int64_t* src, const std::uint8_t* op,
                       const std::int64_t* dst, const std::int64_t* lo,
                       const std::int64_t* hi, std::int64_t steps,
                       const std::int64_t* step_off, std::int64_t* last_in,
                       std::int64_t* last_out);

  // Bulk construction from CSR arrays (JSON import). Dependencies may point
  // forward (cycles are reported by the verifier); everything else is checked
  // like add_transfer, with errors naming the transfer index and field.
  static Schedule from_arrays(RankId num_ranks, std::vector<Bytes> block_bytes,
                              Collective collective, const std::vector<RankId>& src,
                              const std::vector<std::uint8_t>& op,
                              const std::vector<std::int64_t>& dst_offsets,
                              const std::vector<RankId>& dsts,
                              const std::vector<std::int64_t>& range_offsets,
                              const std::vector<BlockId>& range_lo,
                              const std::vector<BlockId>& range_hi,
                              const std::vector<std::int64_t>& dep_offsets,
                              const std::vector<TransferId>& deps);

  RankId num_ranks() const { return num_ranks_; }
  BlockId num_blocks() const { return static_cast<BlockId>(block_bytes_.size()); }
  TransferId num_transfers() const { return static_cast<TransferId>(src_.size()); }
  const std::vector<Bytes>& block_bytes() const { return block_bytes_; }
  Bytes total_bytes() const { return block_prefix_.back(); }
  // Bytes of blocks [lo, hi).
  Bytes range_bytes(BlockId lo, BlockId hi) const {
    return block_prefix_[hi] - block_prefix_[lo];
  }
  const Collective& collective() const { return collective_; }
  bool participates(RankId r) const {
    return (collective_.participants.empty() || collective_.participants[r] != 0) &&
           !is_switch(r);
  }
  // Whether rank r is a switch rank (see the header comment).
  bool is_switch(RankId r) const {
    return !collective_.switches.empty() && collective_.switches[r] != 0;
  }
  bool has_switches() const { return !collective_.switches.empty(); }
  // Whether cell (r, b) starts with rank r's input (else it starts empty/0):
  // participants hold every block of a reduce / allreduce / reduce_scatter
  // (and of an unknown collective), the root holds a broadcast, owners hold
  // their allgather blocks and the blocks that the moving kinds (alltoall,
  // gather, scatter) carry.
  bool holds_input(RankId r, BlockId b) const;
  std::string name;  // free-form label (builder name and parameters)

  RankId src(TransferId t) const { return src_[t]; }
  Op op(TransferId t) const { return static_cast<Op>(op_[t]); }
  const RankId* dsts_begin(TransferId t) const { return dst_.data() + dst_off_[t]; }
  const RankId* dsts_end(TransferId t) const { return dst_.data() + dst_off_[t + 1]; }
  std::int64_t num_dsts(TransferId t) const { return dst_off_[t + 1] - dst_off_[t]; }
  RangeIter ranges_begin(TransferId t) const { return RangeIter(&ranges_, range_off_[t]); }
  RangeIter ranges_end(TransferId t) const { return RangeIter(&ranges_, range_off_[t + 1]); }
  const TransferId* deps_begin(TransferId t) const { return dep_.data() + dep_off_[t]; }
  const TransferId* deps_end(TransferId t) const { return dep_.data() + dep_off_[t + 1]; }
  std::int64_t num_deps(TransferId t) const { return dep_off_[t + 1] - dep_off_[t]; }
  Bytes transfer_bytes(TransferId t) const;  // payload of one message
  std::int64_t transfer_blocks(TransferId t) const;

  // Raw CSR views (for bindings and bulk analyses). The offsets are the
  // compact CsrOffsets: index them (dst_offsets()[t]) or copy_to() an array.
  const std::vector<RankId>& src_array() const { return src_; }
  const std::vector<std::uint8_t>& op_array() const { return op_; }
  const CsrOffsets& dst_offsets() const { return dst_off_; }
  const std::vector<RankId>& dst_array() const { return dst_; }
  const CsrOffsets& range_offsets() const { return range_off_; }
  const BlockRangeList& range_list() const { return ranges_; }
  const CsrOffsets& dep_offsets() const { return dep_off_; }
  const std::vector<TransferId>& dep_array() const { return dep_; }
  // Bytes held by the per-transfer arrays (by size, not capacity): what the
  // transfers cost to keep, without the per-block and per-rank fields.
  std::int64_t transfer_array_bytes() const;

  // True when every dependency points to an earlier index (then index order is
  // a topological order).
  bool deps_point_backward() const { return backward_deps_; }

  void reserve(std::int64_t transfers, std::int64_t ranges_per_transfer = 1);

 private:
  void check_targets() const;
  template <typename I>
  void append_csr_from(std::int64_t n, const I* src, const std::uint8_t* op,
                       const std::int64_t* dst_off, const I* dsts,
                       const std::int64_t* rng_off, const I* lo, const I* hi,
                       const std::int64_t* dep_off, const I* deps, std::int64_t dep_width);
  // Candidate dependencies per transfer that append_simple sorts inline.
  static constexpr std::int64_t kFastWidth = 8;
  template <typename I>
  std::int64_t append_simple(std::int64_t n, const I* src, const std::uint8_t* op,
                             const I* dsts, const I* lo, const I* hi,
                             const std::int64_t* dep_off, const I* deps,
                             std::int64_t dep_width);
  template <typename I>
  void check_transfer_fields(std::int64_t index, I src, const I* dbegin,
                             const I* dend) const;
  void append_ranges(std::int64_t index, std::vector<BlockRange>& ranges);

  RankId num_ranks_;
  std::vector<Bytes> block_bytes_;
  std::vector<Bytes> block_prefix_;
  Collective collective_;
  std::vector<RankId> src_;
  std::vector<std::uint8_t> op_;
  CsrOffsets dst_off_;
  std::vector<RankId> dst_;
  CsrOffsets range_off_;
  BlockRangeList ranges_;
  CsrOffsets dep_off_;
  std::vector<TransferId> dep_;
  bool backward_deps_ = true;
};

// Derived views that need no topology.
struct ScheduleStats {
  std::vector<std::int32_t> step;          // per transfer: longest dependency chain before it
  std::int32_t num_steps = 0;              // 1 + max step (0 without transfers)
  std::vector<std::int64_t> messages_sent;     // per rank
  std::vector<std::int64_t> messages_received; // per rank
  std::vector<Bytes> bytes_sent;               // per rank (a multicast counts once)
  std::vector<Bytes> bytes_received;           // per rank
};

// Successor lists of the dependency DAG in CSR form: the transfers that
// depend on t are list[offsets[t] .. offsets[t+1]).
struct Successors {
  std::vector<std::int64_t> offsets;
  std::vector<TransferId> list;
};
Successors successors(const Schedule& s);

// The two passes of fill_successors' counting sort of the dependency edges
// by their first transfer, for storage of any form. count_successors: with
// `offsets` n + 2 zeros (any indexable storage), counts each d's successors
// at offsets[d + 2] and sums them, so that offsets[d + 1] is the start of
// d's list; seen(d, t) is called for every edge. place_successors then
// calls put(i, d, t) for successor t of d at position i, advancing offsets[d + 1] to the end
// of d's list (the start of d + 1's), so that offsets[0 .. n] are the
// lists' offsets and every list is in increasing index.
template <typename Offsets, typename Seen>
void count_successors(const Schedule& s, Offsets& offsets, Seen seen) {
  const TransferId n = s.num_transfers();
  for (TransferId t = 0; t < n; ++t)
    for (const TransferId* d = s.deps_begin(t); d != s.deps_end(t); ++d) {
      ++offsets[*d + 2];
      seen(*d, t);
    }
  for (TransferId t = 2; t <= n + 1; ++t) offsets[t] += offsets[t - 1];
}
template <typename Offsets, typename Put>
void place_successors(const Schedule& s, Offsets& offsets, Put put) {
  const TransferId n = s.num_transfers();
  for (TransferId t = 0; t < n; ++t)
    for (const TransferId* d = s.deps_begin(t); d != s.deps_end(t); ++d)
      put(offsets[*d + 1]++, *d, t);
}

// Fills out.offsets and out.list (any vector-like storage of int64 offsets
// and TransferId entries, such as the simulator's arena-backed lists) with
// the successor lists (count_successors, place_successors).
template <typename Lists>
void fill_successors(const Schedule& s, Lists& out) {
  const TransferId n = s.num_transfers();
  out.offsets.assign(static_cast<std::size_t>(n) + 2, 0);
  count_successors(s, out.offsets, [](TransferId, TransferId) {});
  out.list.resize(static_cast<std::size_t>(out.offsets[n + 1]));
  place_successors(s, out.offsets, [&out](auto i, TransferId, TransferId t) { out.list[i] = t; });
  out.offsets.pop_back();
}

// Topological order of the transfers (deterministic: Kahn's algorithm taking
// the smallest ready index first). Throws ScheduleError("cycle") naming a
// transfer on a cycle and ScheduleError("dependency") for out-of-range deps.
std::vector<TransferId> topological_order(const Schedule& s);

ScheduleStats schedule_stats(const Schedule& s);

// Blocks of nearly equal size: the first (total % n) blocks get one extra byte.
std::vector<Bytes> even_blocks(Bytes total_bytes, std::int64_t n);

}  // namespace wafercoll
