// Dataflow runs (simulate.hpp, Dependencies::dataflow): every dependency
// edge classified, and the edge lists, order gates and streams the event
// loop reads built from them (simulation.hpp, DataflowEdges).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <future>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "wafercoll/simulate/simulation.hpp"

namespace wafercoll::sim {

// The destination slot of transfer t at rank r, or -1.
std::int64_t Simulation::slot_of(TransferId t, RankId r) const {
  for (std::int64_t i = sched_.dst_offsets()[t]; i < sched_.dst_offsets()[t + 1]; ++i)
    if (sched_.dst_array()[i] == r) return i;
  return -1;
}

// A key that names the physical stage of a trie node across transfers:
// the link id, or a negative key per endpoint for a port whose channel is
// chosen at run time (kInjPort, kEjPort).
std::int64_t Simulation::resource_key(TransferId t, std::int64_t node) const {
  const TrieNode& nd = tries_.nodes[node];
  if (nd.resource >= 0) return nd.resource;
  if (nd.resource == kInjPort) return -2 - 2 * std::int64_t{place_[sched_.src(t)]};
  return -3 - 2 * std::int64_t{place_[sched_.dst_array()[nd.term]]};
}

namespace {

std::atomic<bool> g_serial_dataflow{false};

}  // namespace

void force_serial_dataflow(bool on) { g_serial_dataflow.store(on); }

// What classify() finds in its share of the transfers, edge lists in the
// order of t (slots, transfers and gate indices all fit 32 bits: prepare()
// and kMaxGates bound them). Stream edges are not listed: they are marked
// by their place in the schedule's dependency list (one bit each, where a
// list of the edges would take 12 bytes per edge and the CSR form, beside
// it, 8 more: TTO 16x16, 24 M edges, 0.5 GB at once), and replayed from
// there.
struct DataflowShare {
  // Mapped (mapped_alloc.hpp): the large blocks go back to the system when
  // freed, where a second thread's heap would keep them (TTO 16x16: 40 MB
  // still resident at the run's peak).
  ScratchVector<std::pair<TransferId, TransferId>> complete;  // (d, t)
  ScratchVector<std::pair<std::int32_t, TransferId>> data;    // (d slot, t)
  ScratchVector<std::pair<std::int32_t, std::int32_t>> gate;  // (d gate, t gate)
  std::vector<bool> stream_dep;  // by place in the dependency list, or empty
  std::int64_t stream_edges = 0;
  std::int32_t max_queue = 0;           // the largest queue index of a stream edge
  std::size_t pairs = 0, singles = 0;   // streams of two stream dependencies, and others
  std::vector<std::pair<TransferId, std::int32_t>> more_queues;  // DataflowEdges'

  // Takes the next share's counts, marks and streams of more than two
  // dependencies (of later transfers) after its own; the edge lists stay
  // apart (joined by to_csr(), never copied).
  void absorb(DataflowShare& next) {
    more_queues.insert(more_queues.end(), next.more_queues.begin(), next.more_queues.end());
    if (stream_dep.empty()) {
      stream_dep.swap(next.stream_dep);
    } else if (!next.stream_dep.empty()) {
      for (std::size_t i = 0; i < stream_dep.size(); ++i)
        if (next.stream_dep[i]) stream_dep[i] = true;
    }
    std::vector<bool>().swap(next.stream_dep);
    stream_edges += next.stream_edges;
    max_queue = std::max(max_queue, next.max_queue);
    pairs += next.pairs;
    singles += next.singles;
  }
};

namespace {

// One kind of edge (`list`) of every share, in order, by its first element
// (< n): each list comes out sorted by t, the loop that made it. The
// shares' lists are emptied.
template <typename List, typename Item>
void to_csr(std::vector<DataflowShare>& shares, List DataflowShare::*list, std::int64_t n,
            EdgeCsr<Item>& csr) {
  std::int64_t items = 0;
  for (const DataflowShare& sh : shares) items += static_cast<std::int64_t>((sh.*list).size());
  fill_edge_csr(n, items, [&shares, list](auto&& emit) {
    for (const DataflowShare& sh : shares)
      for (const auto& e : sh.*list) emit(e.first, e.second);
  }, csr);
  for (DataflowShare& sh : shares) List().swap(sh.*list);
}

}  // namespace

// Dataflow mode: classify every dependency edge d -> t (see simulate.hpp).
// complete edges release t when d completes; data edges when d's slot for
// src(t) is delivered; stream edges let t forward d's packets one by one;
// order edges (a shared destination, no data) gate t's stages: a packet of t
// enters a stage that d also uses only after d's last packet has entered it
// (routers keep the streams in order; a stream held at one router holds
// everything behind it). pending[t] counts only what must happen before t
// starts (complete and data edges); gates are counted on the nodes.
//
// A large schedule is classified in two halves, one per thread, when what
// the loop writes beside its own lists belongs to one transfer (its pending
// count, its stream word, its trie's gate counts, and its stages' gate
// counts when they are numbered by stride): the halves' lists, joined in
// order, are the serial loop's. Numbering on first use is serial.
void Simulation::prepare_dataflow() {
  const TransferId T = dim_.transfers;
  DataflowEdges& df = dataflow_;
  df.gate_stride = computed_gate_stride();
  const bool serial_gates = dim_.route_stages > 0 && df.gate_stride == 0;
  std::vector<DataflowShare> shares(1);
  if (T >= kParallelTransfers && std::thread::hardware_concurrency() > 1 && !serial_gates &&
      !g_serial_dataflow.load()) {
    const TransferId mid = T / 2;
    shares.resize(2);
    DataflowShare& second = shares[1];
    std::future<void> side =
        std::async(std::launch::async, [this, mid, T, &second] { classify(mid, T, second); });
    classify(0, mid, shares[0]);  // an error in the first half is the one reported
    side.get();
  } else {
    classify(0, T, shares[0]);
  }
  if (df.stage_gate.empty()) df.gate_stride = 0;  // no computed stage is gated
  to_csr(shares, &DataflowShare::complete, T, df.complete);
  to_csr(shares, &DataflowShare::data, dim_.dst_slots, df.data);
  df.gates = static_cast<std::int64_t>(tries_.nodes.size() + df.stage_gate.size());
  to_csr(shares, &DataflowShare::gate, df.gates, df.gate);
  DataflowShare& all = shares[0];
  if (shares.size() > 1) all.absorb(shares[1]);
  costs_.computed_gates = df.gate_stride > 0 || !df.gate_base.empty();
  df.more_queues = std::move(all.more_queues);
  // The stream edges last, when the other lists are gone: (d's slot, (t,
  // its queue)) from the marked dependencies, in the order of the loop.
  if (all.stream_edges > 0) {
    const TransferId* const deps = sched_.dep_array().data();
    auto replay = [&](auto&& emit) {
      for (TransferId t = 0; t < T; ++t) {
        if (progress_.hot[t].stream == 0) continue;
        std::int32_t q = 0;
        for (const TransferId* dp = sched_.deps_begin(t); dp != sched_.deps_end(t); ++dp)
          if (all.stream_dep[static_cast<std::size_t>(dp - deps)])
            emit(static_cast<std::int32_t>(slot_of(*dp, sched_.src(t))), t, q++);
      }
    };
    set_stream_edges(replay, dim_.dst_slots, T, all.max_queue, all.stream_edges, df);
  }
  // Room for every stream in progress at once (address space until used):
  // growing the pool would move the runs in progress, and a pipeline of
  // chunks (TTO) has most of its streams in progress.
  df.runs.reserve(all.singles);
  df.pairs.reserve(all.pairs);
}

// prepare_dataflow()'s loop, over transfers [lo, hi).
void Simulation::classify(TransferId lo, TransferId hi, DataflowShare& out) {
  const TransferId* const deps = sched_.dep_array().data();
  std::vector<std::pair<std::int64_t, std::int64_t>> d_stages;  // (key, stage of d)
  for (TransferId t = lo; t < hi; ++t) {
    std::int64_t start_gates = 0;
    std::int32_t nq = 0;  // t's stream dependencies so far
    for (const TransferId* dp = sched_.deps_begin(t); dp != sched_.deps_end(t); ++dp) {
      const TransferId d = *dp;
      const std::int64_t data_slot = slot_of(d, sched_.src(t));
      if (data_slot >= 0) {  // d delivered data to t's source
        if (streams_from(t, d)) {
          if (out.stream_dep.empty()) out.stream_dep.resize(sched_.dep_array().size());
          out.stream_dep[static_cast<std::size_t>(dp - deps)] = true;
          out.max_queue = std::max(out.max_queue, nq++);
          ++out.stream_edges;
          continue;
        }
        out.data.emplace_back(static_cast<std::int32_t>(data_slot), t);
        ++start_gates;
        continue;
      }
      bool shared = false;
      for (const RankId* x = sched_.dsts_begin(t); !shared && x != sched_.dsts_end(t); ++x)
        shared = slot_of(d, *x) >= 0;
      if (!shared) {
        out.complete.emplace_back(d, t);
        ++start_gates;
        continue;
      }
      add_order_gates(d, t, out.gate, d_stages);
    }
    // Only a run in which some transfer waits to start keeps the counts
    // (TTO's transfers all start at once: 4 bytes per transfer saved).
    if (start_gates > 0) {
      pending_once_([this] {
        progress_.pending.assign(static_cast<std::size_t>(dim_.transfers), 0);
      });
      progress_.pending[t] = static_cast<std::int32_t>(start_gates);
    }
    if (nq > 0) {
      progress_.hot[t].stream = std::min(static_cast<std::uint32_t>(nq), StreamWord::kMore);
      if (nq > 2) out.more_queues.emplace_back(t, nq);
      (nq == 2 ? out.pairs : out.singles) += 1;
    }
  }
}

// Order edge d -> t: gate every stage of t that d also crosses (the first
// of d's stages with that key, by gate index, when d crosses it more than
// once). A trie node is its own gate; a computed route's stages are
// numbered (computed_gate_base) only when one is gated or gates.
void Simulation::add_order_gates(TransferId d, TransferId t,
                                 ScratchVector<std::pair<std::int32_t, std::int32_t>>& gates,
                                 std::vector<std::pair<std::int64_t, std::int64_t>>& d_stages) {
  const bool d_computed = progress_.hot[d].computed();
  const bool t_computed = progress_.hot[t].computed();
  d_stages.clear();
  if (d_computed) {
    for (std::int32_t i = 0, n = computed_stages(d); i < n; ++i)
      d_stages.emplace_back(computed_key(d, i), i);
  } else {
    for (std::int64_t n = tries_.base[d]; n < tries_.base[d + 1]; ++n)
      d_stages.emplace_back(resource_key(d, n), n);
  }
  std::sort(d_stages.begin(), d_stages.end());
  const std::int64_t first = t_computed ? 0 : tries_.base[t];
  const std::int64_t end = t_computed ? computed_stages(t) : tries_.base[t + 1];
  for (std::int64_t n = first; n < end; ++n) {
    const std::int64_t key =
        t_computed ? computed_key(t, static_cast<std::int32_t>(n)) : resource_key(t, n);
    auto it = std::lower_bound(d_stages.begin(), d_stages.end(),
                               std::make_pair(key, std::int64_t{-1}));
    if (it == d_stages.end() || it->first != key) continue;
    const auto from = static_cast<std::int32_t>(
        d_computed ? computed_gate_base(d) + it->second : it->second);
    if (t_computed) {
      const std::int64_t to = computed_gate_base(t) + n;
      gates.emplace_back(from, static_cast<std::int32_t>(to));
      ++dataflow_.stage_gate[static_cast<std::size_t>(to) - tries_.nodes.size()];
    } else {
      gates.emplace_back(from, static_cast<std::int32_t>(n));
      ++tries_.nodes[n].gate;
    }
  }
}

// Stages of t's computed route: its hops, and its ports when the model has any.
std::int32_t Simulation::computed_stages(TransferId t) const {
  const TransferHot& h = progress_.hot[t];
  std::int32_t hops = 0;
  topo_.route_link_unchecked(h.src, h.dst(), 0, &hops);
  return hops + static_cast<std::int32_t>(port_stages(net_));
}

// resource_key() of stage `stage` of t's computed route (the key its trie
// node would have).
std::int64_t Simulation::computed_key(TransferId t, std::int32_t stage) const {
  const TransferHot& h = progress_.hot[t];
  const std::int32_t K = dim_.channels;
  const std::int32_t p = K > 0 ? 1 : 0;
  if (stage < p) return K == 1 ? std::int64_t{dim_.links} + h.src : -2 - 2 * std::int64_t{h.src};
  const LinkId l = topo_.route_link_unchecked(h.src, h.dst(), stage - p, nullptr);
  if (l >= 0) return l;
  return K == 1 ? std::int64_t{dim_.links} + dim_.endpoints + h.dst()
                : -3 - 2 * std::int64_t{h.dst()};
}

// How the order gates on computed stages are numbered (DataflowEdges): by
// stride (returned), when the slots that shorter routes leave unused would
// cost no more than the first-use numbering's 4 bytes per transfer
// (gate_base) cost at least (each slot costs 5.25: its gate word and its
// offset in the gate lists), and the trie nodes and every slot fit
// kMaxGates; else on first use (0). TTO's routes are all one hop: by
// stride, 4 bytes per transfer fewer (TTO 16x16: 67 MB). The gate words are
// made with the first gate.
std::int32_t Simulation::computed_gate_stride() const {
  const std::int64_t T = dim_.transfers;
  const std::int64_t slots = T * dim_.route_stages_max;
  const std::int64_t unused = slots - dim_.route_stages;
  const bool fits = static_cast<std::int64_t>(tries_.nodes.size()) + slots <= kMaxGates;
  return dim_.route_stages_max > 0 && unused * 21 <= T * 16 && fits  // unused * 5.25 <= T * 4
             ? dim_.route_stages_max
             : 0;
}

// The gate index of stage 0 of t's computed route: by stride, or numbering
// its stages after those numbered so far on first use (serial).
std::int64_t Simulation::computed_gate_base(TransferId t) {
  DataflowEdges& df = dataflow_;
  const auto nodes = static_cast<std::int64_t>(tries_.nodes.size());
  if (df.gate_stride > 0) {
    stage_gates_once_([this, &df] {
      df.stage_gate.assign(static_cast<std::size_t>(dim_.transfers) * df.gate_stride, 0);
    });
    return nodes + std::int64_t{t} * df.gate_stride;
  }
  if (df.gate_base.empty()) df.gate_base.assign(static_cast<std::size_t>(dim_.transfers), -1);
  std::int32_t& base = df.gate_base[t];
  if (base < 0) {
    const std::size_t n = df.stage_gate.size() + static_cast<std::size_t>(computed_stages(t));
    if (tries_.nodes.size() + n > static_cast<std::size_t>(kMaxGates))
      throw std::invalid_argument("the order gates of this dataflow run are on more than " +
                                  std::to_string(kMaxGates) + " stages; simulate it in "
                                  "complete mode or with fewer transfers");
    base = static_cast<std::int32_t>(df.stage_gate.size());
    df.stage_gate.resize(n, 0);
  }
  return nodes + base;
}

// A data edge d -> t becomes a stream edge when t sends exactly the blocks
// d delivered, in as many packets (more than one), from a single first
// stage: then t forwards each packet as soon as it has arrived from every
// stream dependency, instead of waiting for all of d.
bool Simulation::streams_from(TransferId t, TransferId d) const {
  const Schedule& s = sched_;
  const bool same_blocks =
      s.ranges_end(d) - s.ranges_begin(d) == s.ranges_end(t) - s.ranges_begin(t) &&
      std::equal(s.ranges_begin(d), s.ranges_end(d), s.ranges_begin(t),
                 [](const BlockRange& a, const BlockRange& b) {
                   return a.lo == b.lo && a.hi == b.hi;
                 });
  const bool one_top =
      progress_.hot[t].computed() || tries_.nodes[tries_.base[t]].next_sibling < 0;
  const BigVector<TransferHot>& hot = progress_.hot;
  return same_blocks && one_top && npackets(hot[d]) == npackets(hot[t]) && npackets(hot[t]) > 1;
}

}  // namespace wafercoll::sim
