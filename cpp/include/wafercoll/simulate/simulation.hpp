// Internal to the simulator (not part of the public API): the state of one
// run and the class that owns it. simulate() in simulate.hpp is the public
// entry; this header is shared by its units:
//
//   simulate.cpp    the model's enums and checks, prepare(), simulate()
//   routes.cpp      placement and the stage tries (routes.hpp)
//   event_queue.cpp the event queues (event_queue.hpp)
//   simulation.cpp  building the run state (stages, transfers) and
//                   collecting the result
//   dataflow.cpp    the dataflow edges, order gates and streams
//   event_loop.cpp  the event loop: Simulation::run and its handlers
//   edge_csr.hpp    lists by key with compact offsets (dataflow edges,
//                   successor lists)
//
// Memory: the per-transfer state (TransferHot, 24 bytes), the per-destination
// state (SlotState, 16 bytes, only where a run needs it) and the trie nodes
// (TrieNode, 24 bytes) are what a large run is made of; their sizes are part
// of the design (README, "what the misses need") and are checked below. A
// transfer to one destination on a topology that computes its routes
// (routes.hpp, "Computed routes") has no trie nodes: its route costs nothing
// per transfer, where a trie costs 24 bytes per stage (hops + 2 with ports).
// When every transfer has one destination (complete mode), its destination's
// countdown lives in its TransferHot, and no per-destination records are kept
// unless ports with several channels or a processing cost need them; without
// those, other runs (dataflow, several destinations) keep a 4-byte count per
// destination (Progress::slot_left) instead of a SlotState. Per
// such transfer the run then holds TransferHot (24, which also counts the
// dependencies not yet met until the transfer starts, without a task
// graph), one time (8: when it can start, then when it finished; 16 when
// the times are recorded, in the result's arrays) and the successor lists
// (usually 1.25 per transfer plus 2 per dependency edge; SuccessorLists):
// about 33 bytes plus 2 per dependency, beside the schedule's own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"
#include "wafercoll/simulate/edge_csr.hpp"
#include "wafercoll/simulate/event_queue.hpp"
#include "wafercoll/simulate/huge_alloc.hpp"
#include "wafercoll/simulate/routes.hpp"
#include "wafercoll/simulate/simulate.hpp"
#include "wafercoll/topology/topology.hpp"

// Internal to the library: hidden symbols are resolved within it, so calls
// between the simulator's parts are direct and the compiler may optimise
// across them as it does for functions local to one file.
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::sim {

// Memory guards for what grows while the simulation runs (32 bytes per
// queued event; 16 per timeline interval, twice more to sort them).
constexpr std::size_t kMaxQueued = std::size_t{1} << 26;
// Schedules of at least this many transfers have their preparation split
// over two threads (prepare(), prepare_dataflow()). Measured on ring
// allreduce over ring(1024), one packet per transfer (2 M transfers), on a
// 2-core machine shared with other jobs: the whole run 1.17-1.34x as fast
// while a core was free (the split part up to 1.7x), 1.0x at a load of 2,
// and 0.6-0.97x at a load of 4-5 (both halves are memory-bound and then
// share a core).
constexpr TransferId kParallelTransfers = TransferId{1} << 16;
constexpr std::int64_t kMaxTraceEvents = std::int64_t{1} << 25;  // 36 bytes each
constexpr std::size_t kMaxTimelineIntervals = std::size_t{1} << 26;
// Dataflow: gate indices (DataflowEdges) in all, trie nodes included (12
// bytes each beside a trie node's own, 16 once packets park: 4 GiB).
constexpr std::int64_t kMaxGates = std::int64_t{1} << 28;

// How TransferHot::sizes holds a transfer's packet count and the size of
// its last packet: (count << shift) | last size, where `shift` is the width
// of the run's largest last packet (the packet size when messages are cut,
// 31 bits otherwise) and the counts fit the bits above it. When some count
// or size does not fit (a transfer of 2^15 packets of 64 KiB or more, or a
// message of 2 GiB not cut into packets), shift is 0: sizes is the count,
// and every last size is in Progress::wide_last (8 bytes per transfer).
struct SizeCode {
  int shift = 0;
  std::uint32_t mask = 0;  // (1 << shift) - 1
  std::uint32_t npackets(std::uint32_t sizes) const { return sizes >> shift; }
};

// Per transfer, what the event loop touches for every packet, together.
// 24 bytes per transfer: packets per transfer below 2^32 (packetize), nodes
// below 2^27 (kMaxNodes), transfers below 2^26 (kCanonBits). A port's
// injection channel, chosen per transfer only with several channels, is in
// Progress::inj_chan.
struct TransferHot {
  // The tie key of the first packet: the position of its data in the vector
  // in packets (blocks when messages are not cut; saturated at kMaxPos)
  // above the transfer's rank in the canonical order (kCanonBits bits).
  // Ties between packets that reach a stage at the same time go by the
  // position (plus the packet index), so the same data cut into more or
  // fewer transfers is served in the same order, then by the rank.
  std::uint64_t tie0;
  std::uint32_t sizes;       // packets and the last one's size (SizeCode)
  // First trie node, or for a computed route (routes.hpp) -1 - the
  // destination's node.
  std::int32_t base;
  NodeId src;                // the source's node
  union {
    // Dataflow: the transfer's stream word (StreamWord), 0 for no stream.
    std::uint32_t stream;
    // Complete mode when every transfer has one destination
    // (Costs::unicast): the packets still to be done there; before t
    // starts, with Costs::pending_in_hot, its dependencies not yet met.
    std::uint32_t left;
  };
  bool computed() const { return base < 0; }
  NodeId dst() const { return -1 - base; }  // computed routes only
  std::uint64_t key0() const { return tie0 >> kCanonBits; }
  std::uint32_t canon() const {
    return static_cast<std::uint32_t>(tie0 & ((std::uint64_t{1} << kCanonBits) - 1));
  }
  // The tie key of packet `packet` (its position saturates at kMaxPos).
  std::uint64_t tie_key(std::int64_t packet) const {
    const std::uint64_t pos = std::min(key0() + static_cast<std::uint64_t>(packet), kMaxPos);
    return (pos << kCanonBits) | canon();
  }
};
static_assert(sizeof(TransferHot) == 24, "per-transfer state is documented as 24 bytes");

// Successor lists of the dependency DAG in CSR form, as schedule.hpp's
// Successors, but on the arena (huge_alloc.hpp), so that a run reuses the
// last one's memory, and compact: the transfers (and tasks) waiting for t
// are entry(i, t) for i in range(t). Offsets take 32 bits while the list
// holds fewer than kNarrowSuccessors entries (else 64); when, besides, no
// transfer has more than 255 successors, a count of one byte per transfer
// and every kSampleEvery-th offset stand for them (1.25 bytes per transfer
// instead of 4). Entries are 16-bit differences to t when every successor
// lies within 2^15 of its transfer in index (the usual: a schedule's steps
// follow one another), 24-bit ones within 2^23 (recursive doubling, whose
// successors are up to 1.5 p away), else ids: 2, 3 or 4 bytes per edge.
constexpr std::int64_t kNarrowSuccessors = std::int64_t{1} << 32;
constexpr std::int64_t kFarSuccessors = std::int64_t{1} << 23;
struct SuccessorLists {
  CountedOffsets counted;           // the offsets where they fit, else empty
  BigVector<std::uint32_t> narrow;  // else the offsets while they fit, else empty
  BigVector<std::int64_t> wide;     // else the offsets
  BigVector<std::int16_t> delta;    // entries minus their transfer, else empty
  // else the same in 3 bytes each, little-endian (one byte of padding at the
  // end, so that every entry reads as one 4-byte load), else empty
  BigVector<std::uint8_t> delta24;
  BigVector<TransferId> list;       // else the entries
  std::int64_t offset(std::int64_t t) const {
    if (!counted.empty()) return counted.offset(t);
    return wide.empty() ? std::int64_t{narrow[static_cast<std::size_t>(t)]}
                        : wide[static_cast<std::size_t>(t)];
  }
  // t's entries: [first, second).
  std::pair<std::int64_t, std::int64_t> range(std::int64_t t) const {
    if (!counted.empty()) return counted.range(t);
    return {offset(t), offset(t + 1)};
  }
  // Entry i, one of t's.
  std::int64_t entry(std::int64_t i, std::int64_t t) const {
    if (!delta.empty()) return t + delta[static_cast<std::size_t>(i)];
    if (delta24.empty()) return list[static_cast<std::size_t>(i)];
    std::uint32_t bits;
    std::memcpy(&bits, delta24.data() + 3 * i, sizeof bits);
    return t + (static_cast<std::int32_t>(bits << 8) >> 8);  // sign-extend 24 bits
  }
  // Takes offsets [0, n] (the last the list's size), narrow when they fit
  // below narrow_limit; the entries are `list`'s.
  void set_offsets(const std::int64_t* offsets, std::int64_t n, std::int64_t narrow_limit);
};
// `narrow_limit`: lists of at least this many entries take 64-bit offsets;
// `compact`: counts and differences where they fit; `far_limit`: successors
// this far from their transfer or farther take ids (parameters for the tests).
SuccessorLists successor_lists(const Schedule& s,
                               std::int64_t narrow_limit = kNarrowSuccessors,
                               bool compact = true,
                               std::int64_t far_limit = kFarSuccessors);

// Everything the run needs that does not change while it runs, computed
// before any run state is allocated (so simulation_events() can stop here).
// The per-transfer results are written straight into the records the event
// loop reads (hot), in place, rather than into arrays copied there later.
struct Prepared {
  std::vector<NodeId> place;    // rank -> endpoint
  StageTries tries;             // the stages of transfers without computed routes
  BigVector<TransferHot> hot;   // per transfer
  SizeCode sizes;               // how hot[t].sizes reads
  BigVector<Bytes> wide_last;   // per transfer when SizeCode::shift is 0, else empty
  SuccessorLists successors;    // complete mode, for a run: who waits for whom
  std::int64_t events = 0;      // packet-stage services the run will perform
  // Computed routes: the most stages of one (hops and ports), and their sum.
  std::int32_t route_stages_max = 0;
  std::int64_t route_stages = 0;
};

// Checks the inputs and computes the above (simulate.cpp); for a run
// (`for_run`) in complete mode also the successor lists.
Prepared prepare(const Schedule& s, const Topology& topo, const NetworkModel& net,
                 const SimOptions& opt, bool for_run = false);

// Per stage, what a service waits on: when the stage is free, and its cost
// class (an index into the run's few distinct bandwidth and latency pairs).
// 16 bytes, so the whole network's stages stay in cache on large grids
// (98 k stages on a 128 x 128 wafer: 1.6 MB, against 3.9 MB when the costs
// and the accounting lived in the same record).
struct StageLive {
  Seconds free_at = 0.0;
  std::uint32_t cls = 0;
};
static_assert(sizeof(StageLive) == 16, "a stage's live state is documented as 16 bytes");

// A cost class: seconds per byte and the latency to the next stage.
struct StageCost {
  double inv_bw = 0.0, lat = 0.0;
};

// Per stage, what a service adds up (written, never waited on).
struct StageUse {
  Seconds busy = 0.0;
  Bytes bytes = 0;
};

// Per destination slot, what every delivered packet touches, together:
// packets still to be processed (left) and delivered (deliv), and the
// ejection channel once chosen. 16 bytes per destination (packets per
// transfer below 2^32).
struct SlotState {
  std::uint32_t left, deliv;
  std::int32_t ej_chan;  // ejection channel once chosen, else -1
  NodeId endpoint;       // of the destination
};
static_assert(sizeof(SlotState) == 16, "per-destination state is documented as 16 bytes");
static_assert(sizeof(TrieNode) == 24, "a trie node is documented as 24 bytes");
static_assert(sizeof(Event) == 32, "a queued event is documented as 32 bytes");

// A first-in first-out list of times that lives inside its owner while it
// holds at most kInline entries (the usual case: a stream rarely runs more
// than a few packets ahead), so a stream's state is one contiguous record;
// beyond that it spills to a vector that keeps its storage once drained
// (std::deque would allocate a 512-byte block per stream). A stream of two
// dependencies keeps its bookkeeping in the room left (`lead`, `matched`;
// StreamRun).
struct Fifo {
  enum : std::uint32_t { kInline = 4 };
  // The entries after the inline ones, from `head` on.
  struct Spill {
    std::vector<Seconds> entries;
    std::size_t head = 0;
  };
  Seconds buf[kInline];
  std::uint8_t head = 0, count = 0;  // ring over buf
  std::uint8_t lead = 0;             // a pair's: see StreamRun
  std::uint32_t matched = 0;         // a pair's: see StreamRun
  std::unique_ptr<Spill> spill;
  bool empty() const { return count == 0; }
  Seconds front() const { return buf[head]; }
  bool spilled() const { return spill && spill->head < spill->entries.size(); }
  std::size_t size() const {
    return count + (spilled() ? spill->entries.size() - spill->head : 0);
  }
  // Entry i from the front (i < size()).
  Seconds& at(std::size_t i) {
    if (i < count) return buf[(head + i) % kInline];
    return spill->entries[spill->head + (i - count)];
  }
  void push_back(Seconds x) {
    if (count < kInline && !spilled()) {
      buf[(head + count++) % kInline] = x;
    } else {
      // The spill keeps its storage once drained: a stream that ran ahead
      // once tends to do so again.
      if (!spill) spill = std::make_unique<Spill>();
      spill->entries.push_back(x);
    }
  }
  void pop_front() {
    head = static_cast<std::uint8_t>((head + 1) % kInline);
    --count;
    if (spilled()) {  // refill in order
      buf[(head + count++) % kInline] = spill->entries[spill->head++];
      if (spill->head == spill->entries.size()) {
        spill->entries.clear();
        spill->head = 0;
      }
    }
  }
};
static_assert(sizeof(Fifo) == 48, "a stream's queue of times is documented as 48 bytes");

// Stream forwarding (dataflow): t forwards d's packets one by one when it
// sends exactly the blocks d delivered to its source, in as many packets,
// from a single first stage. Per such t, from its first delivery until it
// has injected its last packet: the delivery times of d's packets not yet
// matched by every stream dependency, and the packets ready to go. Only the
// streams in progress hold one (a pool reused as streams end); beyond that a
// stream costs nothing (StreamWord). A stream that starts before
// its first packet has arrived takes its run with that packet (its start is
// ready[t] + alpha), not at its start: a pipeline of chunks (TTO) starts
// most of its streams at once, long before their data comes.
// 64 bytes: one cache line. A stream of more than two stream dependencies
// keeps their times in DataflowEdges::run_queues, one queue per dependency
// (a single dependency's times are its ready times).
//
// A stream of two dependencies (TTO's usual one) keeps both in `ready`:
// packet k can go once both have delivered it, at the later of the two
// times. Its first `ready.matched` entries are such times (packets both
// delivered, not yet injected); the entries after them are the times of the
// packets only one dependency (`ready.lead`) has delivered so far, in order,
// each made the later of the two when the other delivers it. (Two queues,
// one per dependency, took 112 bytes: two or three cache lines per stream,
// over a million streams in progress at once on TTO 16x16.)
struct StreamRun {
  Fifo ready;                 // packet k can go from this time (a pair: see above)
  std::int64_t next = -1;     // packet to inject; -1 not started, -2 in flight
  Seconds pace = 0.0;         // first stage free again
};
static_assert(sizeof(StreamRun) == 64, "a stream's run state is documented as 64 bytes");

// Per stream, for the whole run, in its TransferHot::stream (so that the
// forwarding transfer's record, which the loop reads anyway, leads straight
// to its run state): how many stream dependencies it has, one, two or more
// (kMore; the exact count is in DataflowEdges::more_queues), in the low two
// bits, and above them 1 + the index of its run state in its pool while it
// is in progress, else 0. A transfer that is no stream has 0. Pool indices
// are below the streams, so below 2^26 (kCanonBits): the word fits 28 bits.
struct StreamWord {
  static constexpr std::uint32_t kMore = 3;
  static std::uint32_t queues(std::uint32_t w) { return w & 3u; }
  static std::int32_t live(std::uint32_t w) { return static_cast<std::int32_t>(w >> 2) - 1; }
  static std::uint32_t with_live(std::uint32_t w, std::int32_t live) {
    return (w & 3u) | (static_cast<std::uint32_t>(live + 1) << 2);
  }
};

struct ComputeUnit {
  Seconds free_at = 0.0, busy = 0.0;
};

// Sizes of the run.
struct Dimensions {
  TransferId transfers = 0;
  RankId ranks = 0;
  NodeId endpoints = 0;
  LinkId links = 0;
  std::int32_t channels = 0;  // per port (the model's ports; 0: no port stages)
  // Stages: links, then endpoints*channels injection channels, then as many
  // ejection channels.
  std::int64_t stages = 0;
  std::int64_t dst_slots = 0;  // destinations of all transfers
  std::int64_t tasks = 0;      // of the task graph (ids after the transfers)
  // Computed routes (Prepared): the most stages of one, and their sum.
  std::int32_t route_stages_max = 0;
  std::int64_t route_stages = 0;
};

// The model's constants in the form the event loop uses.
struct Costs {
  bool store_and_forward = false;
  bool uniform_bandwidth = true;  // every stage has the same bandwidth
  Bytes packet_bytes = 0, flit_bytes = 0;
  double reduce_s_per_byte = 0.0, copy_s_per_byte = 0.0;
  double switch_reduce_s_per_byte = 0.0;  // 1 / switch_reduce_Bps (0: free)
  bool switches = false;                  // the schedule has switch ranks
  bool dataflow = false;  // Dependencies::dataflow
  // Complete mode and every transfer has one destination: the countdown of
  // its packets is TransferHot::left, and no dsts_left is kept.
  bool unicast = false;
  // Not unicast, no port of several channels and no processing: the
  // destinations' countdowns are Progress::slot_left, and no SlotState is kept.
  bool slot_counts = false;
  // Unicast without a task graph: until a transfer starts, the dependencies
  // it waits for are counted in TransferHot::left (its packets are counted
  // there only from its start), and no pending array is kept.
  bool pending_in_hot = false;
  bool spray = false;     // NetworkModel::spray (the tries hold SprayChoices)
  // Dataflow: some computed route's stages carry order gates
  // (DataflowEdges::gate_stride or gate_base is set).
  bool computed_gates = false;
};

// What the transfers and their destinations have done so far.
struct Progress {
  // pending, ready and finish: per transfer, then per task of the task graph.
  BigVector<std::int32_t> pending;      // dependencies (or gates) not yet met
                                        // (empty with Costs::pending_in_hot, and
                                        // in dataflow while no transfer waits
                                        // to start: see unmet())
  BigVector<std::int32_t> dsts_left;    // per transfer: destinations not yet done
                                        // (empty when every transfer has one)
  // When each can start, and when it finished. Unless the times are
  // recorded, one array (times) serves as both: a transfer's start is read
  // once, when its last dependency is met, and every later time is no
  // earlier, so finish = max(ready, packets done) equals the max over its
  // packets alone. Recorded, they are the result's own arrays
  // (SimResult::transfer_ready_s and transfer_finish_s), filled in place.
  BigVector<Seconds> times;
  Seconds* ready = nullptr;
  Seconds* finish = nullptr;
  BigVector<TransferHot> hot;           // per transfer
  SizeCode sizes;                       // how hot[t].sizes reads
  BigVector<Bytes> wide_last;           // see SizeCode
  BigVector<std::int32_t> inj_chan;     // per transfer with several channels per port
  BigVector<SlotState> slots;           // per destination slot, where needed (see above)
  // Per destination slot when no slot needs a SlotState's channel or
  // endpoint (Costs::slot_counts): the packets still to come there, 4 bytes
  // per slot instead of 16. Nothing is processed then, so a packet is
  // delivered and done at once, and one count serves as both left and deliv.
  BigVector<std::uint32_t> slot_left;
  SuccessorLists successors;            // complete mode: who waits for whom
  TransferId completed = 0;
  std::int64_t tasks_completed = 0;
  std::vector<Seconds> task_start;      // per task
};

// Dataflow mode: the dependency edges by kind (simulate.hpp, Dependencies),
// each in CSR form.
//
// Order gates sit on the stages of routes, numbered by one gate index: a
// trie node's own number, and after the trie nodes the stages of computed
// routes (routes.hpp), in one of two layouts chosen per run
// (Simulation::computed_gate_stride). Where the routes' lengths vary
// little, every transfer's stages have gate indices t * gate_stride + stage
// (after the trie nodes), gated or not, and nothing per transfer is kept;
// otherwise only a route that takes part in an order edge is numbered, on
// first use, from gate_base[t] on (4 bytes per transfer). The gates still
// closed are counted in TrieNode::gate for trie nodes and in stage_gate (by
// gate index minus the trie nodes) for computed stages: a gate index costs
// 4 bytes there and 1.25 in the gate lists' offsets, against a trie's 24 +
// 5.25.
struct DataflowEdges {
  // The streams of more than two stream dependencies (StreamWord::kMore):
  // (t, their count), by t.
  std::vector<std::pair<TransferId, std::int32_t>> more_queues;
  std::vector<StreamRun> runs;               // the pool of streams in progress
  std::vector<std::int32_t> free_runs;       // entries of runs not in use
  // By entry of runs, for a stream of more than two stream dependencies:
  // their times, one queue each (grown as such streams take entries).
  std::vector<std::vector<Fifo>> run_queues;
  std::vector<StreamRun> pairs;              // ... of those with two stream dependencies
  std::vector<std::int32_t> free_pairs;      // entries of pairs not in use
  // By d's slot: t and its queue (the dependency's place among t's stream
  // dependencies), as (t << stream_shift) | queue when every item fits 32
  // bits, else t alone with the queues in stream_queue, item by item: 4
  // bytes per stream edge instead of 8 (see stream_edge()).
  EdgeCsr<std::uint32_t> stream;
  BigVector<std::int32_t> stream_queue;
  int stream_shift = 0;
  EdgeCsr<TransferId> complete;                         // by d: t
  EdgeCsr<TransferId> data;                             // by d's slot: t
  EdgeCsr<std::int32_t> gate;                           // by d's gate index: t's
  std::int64_t gates = 0;                               // gate indices in all
  // Computed routes, numbered by stride: the stride (the most stages of a
  // route), else 0; numbered on first use: per transfer its first entry of
  // stage_gate, or -1 (empty when no computed route takes part in an order
  // edge). Per numbered stage its gate word (Parking).
  std::int32_t gate_stride = 0;
  BigVector<std::int32_t> gate_base;
  std::vector<std::int32_t> stage_gate;
};

// The transfer of an event of a computed route (node >= kComputedNode).
inline TransferId computed_transfer(const Event& e) { return e.node & (kComputedNode - 1); }

// Stream edge i of df.stream: (t, queue).
inline std::pair<TransferId, std::int32_t> stream_edge(const DataflowEdges& df, std::int64_t i) {
  const std::uint32_t item = df.stream.list[static_cast<std::size_t>(i)];
  const std::uint32_t mask = (std::uint32_t{1} << df.stream_shift) - 1;
  return {static_cast<TransferId>(item >> df.stream_shift),
          df.stream_queue.empty() ? static_cast<std::int32_t>(item & mask)
                                  : df.stream_queue[static_cast<std::size_t>(i)]};
}

// The stream edges into df.stream (and stream_queue, stream_shift) by d's
// slot: replay(emit) calls emit(slot, t, queue) for each edge, each slot's
// in order, the same edges every time (it is called two to four times),
// with slots below `slots`, t below `transfers`, queues up to max_queue and
// at most max_edges edges. Items take `bits` bits (32; a parameter for the
// tests).
template <typename Replay>
void set_stream_edges(Replay&& replay, std::int64_t slots, TransferId transfers,
                      std::int32_t max_queue, std::int64_t max_edges, DataflowEdges& df,
                      int bits = 32) {
  int shift = 0;
  while (shift < 31 && (std::int64_t{1} << shift) <= max_queue) ++shift;
  int t_bits = 0;
  while (t_bits < 31 && (std::int64_t{1} << t_bits) < transfers) ++t_bits;
  const bool packed = t_bits + shift <= bits;
  df.stream_shift = packed ? shift : 0;
  df.stream_queue.clear();
  if (!packed) {  // the queues in their own list, in the same order
    EdgeCsr<std::int32_t> q;
    fill_edge_csr(slots, max_edges, [&replay](auto&& emit) {
      replay([&emit](std::int32_t slot, TransferId, std::int32_t queue) { emit(slot, queue); });
    }, q);
    df.stream_queue = std::move(q.list);
  }
  const int s = df.stream_shift;
  fill_edge_csr(slots, max_edges, [&replay, s, packed](auto&& emit) {
    replay([&emit, s, packed](std::int32_t slot, TransferId t, std::int32_t queue) {
      emit(slot, (static_cast<std::uint32_t>(t) << s) |
                     (packed ? static_cast<std::uint32_t>(queue) : 0u));
    });
  }, df.stream);
}

// Dataflow mode: packets waiting at a stage whose order gates are still
// closed. A gate index's word (TrieNode::gate, DataflowEdges::stage_gate)
// is the count of its gates still closed while no packet waits there (0:
// open), and -1 - i once packets wait, in parked list i, which then keeps
// the count: no array per gate index beside the counts (TTO 16x16: 67 MB).
struct ParkedList {
  std::int32_t closed = 0;  // gates still closed
  std::vector<Event> events;
};
struct Parking {
  std::vector<ParkedList> lists;
  std::vector<std::int32_t> free_lists;
};

// The busy-link timeline while it is recorded: per link the open busy
// interval [open_start, open_end), closed ones in a list.
struct Timeline {
  std::vector<double> open_start, open_end;
  std::vector<std::pair<double, double>> closed;
};

#if defined(__GNUC__)
#define WAFERCOLL_LOOP_INLINE __attribute__((always_inline))
#else
#define WAFERCOLL_LOOP_INLINE
#endif

struct DataflowShare;  // dataflow.cpp

// Testing only: with `on`, the dataflow edges of a large schedule are
// classified on one thread (prepare_dataflow), to check that two give the
// same results. Not thread-safe with simulations running.
void force_serial_dataflow(bool on);

// std::call_once with a flag read first. libstdc++'s call_once stores two
// thread-local pointers (each through __tls_get_addr in a shared library)
// and enters pthread_once on every call, done or not: asked once per order
// edge while TTO 16x16's dataflow edges were classified, it drew about 5 %
// of the simulation's samples (with the calls around it; 0.3 % after).
class OnceOnly {
 public:
  template <class F>
  void operator()(F&& f) {
    if (done_.load(std::memory_order_acquire)) return;
    std::call_once(flag_, [&] {
      f();
      done_.store(true, std::memory_order_release);
    });
  }

 private:
  std::atomic<bool> done_{false};
  std::once_flag flag_;
};

// One run of the simulator, in three phases: the constructor and the
// prepare_* functions build the state (stages, transfers and destination
// slots, the dataflow edges), run() is the event loop, collect() turns the
// state into the SimResult.
class Simulation {
 public:
  Simulation(const Schedule& sched, const Topology& topology, const NetworkModel& model,
             const SimOptions& options, const TaskGraph* tasks = nullptr);

  void run();
  SimResult collect();

 private:
  // Building the state (simulation.cpp).
  void prepare_stages();
  void set_port_bandwidths(const std::vector<double>& fastest_out,
                           const std::vector<double>& fastest_in, std::vector<StageCost>& per);
  void intern_stage_costs(const std::vector<StageCost>& per);
  void prepare_transfers(Prepared& prep);
  void prepare_dataflow();
  // prepare_dataflow()'s loop over transfers [lo, hi) (dataflow.cpp).
  void classify(TransferId lo, TransferId hi, DataflowShare& out);
  bool streams_from(TransferId t, TransferId d) const;
  std::int64_t slot_of(TransferId t, RankId r) const;
  std::int64_t resource_key(TransferId t, std::int64_t node) const;
  std::int32_t computed_stages(TransferId t) const;
  std::int64_t computed_key(TransferId t, std::int32_t stage) const;
  std::int64_t computed_gate_base(TransferId t);
  std::int32_t computed_gate_stride() const;
  void add_order_gates(TransferId d, TransferId t,
                       ScratchVector<std::pair<std::int32_t, std::int32_t>>& gates,
                       std::vector<std::pair<std::int64_t, std::int64_t>>& d_stages);
  void size_times(std::int64_t n);  // ready and finish for n transfers and tasks
  void prepare_tasks();  // tasks.cpp
  void prepare_accounting();
  void collect_timeline();

  // The event loop (event_loop.cpp), defined and used only in that unit.
  // The loop's speed depends on its body being one function, as it was when
  // these handlers were lambdas: the handlers are forced inline, except
  // push and packet_done (called from many places; out of line as before).
  inline std::int64_t packet_of(const Event& e) const WAFERCOLL_LOOP_INLINE;
  inline void push(Seconds t, std::int64_t packet, TransferId tr, std::int32_t node,
                   std::uint32_t kind, Seconds head);
  inline void push_computed(Seconds t, std::int64_t packet, TransferId tr, std::int32_t stage,
                            std::uint32_t kind, Seconds head) WAFERCOLL_LOOP_INLINE;
  inline void requeue(const Event& ev, Seconds t, std::int64_t packet, TransferId tr,
                      std::uint32_t kind, Seconds head) WAFERCOLL_LOOP_INLINE;
  inline void enqueue(const Event& e);
  void start_task(std::int64_t k);
  void run_task(std::int64_t k, Seconds at);
  inline void start(TransferId t) WAFERCOLL_LOOP_INLINE;
  // Size of transfer t's last packet.
  Bytes last_bytes(TransferId t, const TransferHot& h) const {
    return progress_.wide_last.empty() ? Bytes{h.sizes & progress_.sizes.mask}
                                       : progress_.wide_last[t];
  }
  // Packets of transfer t.
  std::int64_t npackets(const TransferHot& h) const { return progress_.sizes.npackets(h.sizes); }
  inline void try_inject(TransferId t) WAFERCOLL_LOOP_INLINE;
  inline StreamRun& stream_run(TransferId t) WAFERCOLL_LOOP_INLINE;
  // The run state of a stream in progress (its StreamWord w has one).
  StreamRun& live_run(std::uint32_t w) {
    const auto live = static_cast<std::size_t>(StreamWord::live(w));
    return StreamWord::queues(w) == 2 ? dataflow_.pairs[live] : dataflow_.runs[live];
  }
  void end_stream(TransferId t);  // out of line, in simulation.cpp
  // Out of line: only sprayed transfers call them.
  std::int64_t next_sprayed(TransferId t, std::int32_t node, std::int64_t packet) const;
  Seconds sprayed_latest(std::int64_t slot, Seconds when);
  inline void release(TransferId x, Seconds when) WAFERCOLL_LOOP_INLINE;
  // Start conditions of transfer t not yet met (none counted: 0).
  std::int32_t unmet(TransferId t) const {
    if (costs_.pending_in_hot) return static_cast<std::int32_t>(progress_.hot[t].left);
    return progress_.pending.empty() ? 0 : progress_.pending[t];
  }
  inline void complete(TransferId t) WAFERCOLL_LOOP_INLINE;
  inline void packet_done(TransferId t, std::int64_t slot, Seconds when);
  inline void stream_delivered(std::int64_t slot, Seconds when) WAFERCOLL_LOOP_INLINE;
  inline void delivered(std::int64_t slot, Seconds when) WAFERCOLL_LOOP_INLINE;
  inline void open_gates(std::int64_t gate, Seconds when) WAFERCOLL_LOOP_INLINE;
  inline void park(const Event& ev, std::int64_t gate) WAFERCOLL_LOOP_INLINE;
  // The entry of stage_gate of stage 0 of t's computed route (by stride or
  // from gate_base), or -1 when it has none.
  std::int64_t first_stage_gate(TransferId t) const {
    const DataflowEdges& df = dataflow_;
    return df.gate_stride > 0 ? std::int64_t{t} * df.gate_stride : df.gate_base[t];
  }
  // The gate word (Parking) of gate index `gate`.
  std::int32_t& gate_word(std::int64_t gate) {
    const auto nodes = static_cast<std::int64_t>(tries_.nodes.size());
    return gate < nodes ? tries_.nodes[gate].gate
                        : dataflow_.stage_gate[static_cast<std::size_t>(gate - nodes)];
  }
  inline std::int64_t pick_channel(std::int64_t first) const WAFERCOLL_LOOP_INLINE;
  inline void process(const Event& ev) WAFERCOLL_LOOP_INLINE;
  inline void prefetch_ahead() WAFERCOLL_LOOP_INLINE;
  inline void process_delivery(Seconds at, TransferId t, std::int64_t slot,
                               Bytes bytes) WAFERCOLL_LOOP_INLINE;
  // One service: when it started and finished, when the head moved on, the
  // wire bytes and the stage's seconds per byte and latency.
  struct Service {
    Seconds start, head, finish, latency;
    Bytes wire;
    double inv_bw;
  };
  inline Service serve(const Event& ev, TransferId t, std::int64_t k, Bytes m, std::int64_t r,
                       Seconds avail) WAFERCOLL_LOOP_INLINE;
  inline Seconds cut_through_arrival(Seconds head_left, Seconds end, Bytes wire,
                                     double inv_bw, double ibn, Seconds latency,
                                     Seconds& head) const WAFERCOLL_LOOP_INLINE;
  inline double ejection_inv_bw(NodeId e) const WAFERCOLL_LOOP_INLINE;
  // Stage r's cost class.
  const StageCost& stage_cost(std::int64_t r) const { return stage_costs_[stages_[r].cls]; }
  // Computed routes (routes.hpp).
  inline void process_computed(const Event& ev) WAFERCOLL_LOOP_INLINE;
  inline std::int64_t computed_stage(TransferId t, std::int32_t stage, std::int64_t packet,
                                     Seconds& avail, bool& last) WAFERCOLL_LOOP_INLINE;
  double computed_inv_bw(TransferId t, std::int32_t stage) const;
  static constexpr std::int64_t kParked = -2;
  std::int64_t computed_gate(const Event& ev, TransferId t, std::int32_t stage);
  void open_computed_gates(std::int64_t gate, Seconds when);
  // Seconds per byte of processing transfer t's data at destination slot
  // `slot`: a switch rank reduces at its own rate and stores a copy for free.
  double processing_cost(TransferId t, std::int64_t slot) const {
    const bool reduce = sched_.op(t) == Op::reduce;
    if (costs_.switches && sched_.is_switch(slot_rank_[slot]))
      return reduce ? costs_.switch_reduce_s_per_byte : 0.0;
    return reduce ? costs_.reduce_s_per_byte : costs_.copy_s_per_byte;
  }
  inline std::int64_t resolve_stage(const Event& ev, TransferId t, std::int64_t packet,
                                    Seconds& avail) WAFERCOLL_LOOP_INLINE;
  inline void record_service(TransferId t, std::int64_t packet, std::int64_t stage,
                             Seconds start, Seconds end, Seconds dur) WAFERCOLL_LOOP_INLINE;
  // `spray`: the packet belongs to a sprayed transfer (a constant at each
  // call, so the branches on it fold away).
  inline void left_first_stage(const Event& ev, TransferId t, std::int64_t packet,
                               Seconds end, bool spray) WAFERCOLL_LOOP_INLINE;
  inline void forward(const Event& ev, TransferId t, std::int64_t packet, Seconds head_left,
                      Seconds end, Bytes wire, double inv_bw, Seconds latency,
                      bool spray) WAFERCOLL_LOOP_INLINE;
  inline void reach_destination(const Event& ev, TransferId t, std::int64_t packet,
                                std::int64_t term, Bytes bytes, Seconds at,
                                bool spray) WAFERCOLL_LOOP_INLINE;
  void sprayed_moves_on(const Event& ev, TransferId t, std::int64_t k, Seconds hs, Seconds fin,
                        Bytes w, double ib, Seconds l, Bytes m);

  // The inputs.
  const Schedule& sched_;
  const Topology& topo_;
  const NetworkModel& net_;
  const SimOptions& opt_;
  const TaskGraph* tasks_;                // or nullptr
  const std::vector<RankId>& slot_rank_;  // destination rank per slot

  Dimensions dim_;
  Costs costs_;
  std::vector<NodeId> place_;  // rank -> endpoint
  StageTries tries_;
  BigVector<StageLive> stages_;
  std::vector<StageCost> stage_costs_;  // per cost class
  BigVector<StageUse> stage_use_;
  // Per ejection channel, whether a transfer has entered it (switch overhead).
  std::vector<std::uint8_t> ejection_used_;
  Progress progress_;
  DataflowEdges dataflow_;
  // While the dataflow edges are classified (on two threads for a large
  // schedule): the lazily made pending counts and stride-numbered gates.
  OnceOnly pending_once_, stage_gates_once_;
  Parking parking_;
  // Accounting: the result being filled, compute units, the link timeline.
  SimResult result_;
  BigVector<ComputeUnit> compute_;
  Timeline timeline_;
  EventQueue queue_;
  bool top_consumed_ = true;  // whether the event being processed left the queue
  // Spraying: per destination slot, the latest time a packet was done there.
  std::vector<Seconds> sprayed_done_;
};

}  // namespace wafercoll::sim

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
