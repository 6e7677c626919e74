// Building the state of one simulation run, and turning it into the result
// at the end (simulation.hpp). The event loop itself is in event_loop.cpp,
// the dataflow edges are prepared in dataflow.cpp.
//
// The per-transfer records (TransferHot) come filled from prepare().
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "wafercoll/simulate/simulation.hpp"

namespace wafercoll::sim {

Simulation::Simulation(const Schedule& sched, const Topology& topology,
                       const NetworkModel& model, const SimOptions& options,
                       const TaskGraph* tasks)
    : sched_(sched),
      topo_(topology),
      net_(model),
      opt_(options),
      tasks_(tasks),
      slot_rank_(sched.dst_array()),
      queue_(options.queue) {
  Prepared prep = prepare(sched, topology, model, options, /*for_run=*/true);
  dim_.transfers = sched.num_transfers();
  dim_.ranks = sched.num_ranks();
  dim_.endpoints = topology.num_endpoints();
  dim_.links = topology.num_links();
  dim_.channels = model.ports;
  dim_.tasks = tasks ? tasks->num_tasks() : 0;
  if (opt_.record_trace && prep.events > kMaxTraceEvents)
    throw std::invalid_argument("a trace of " + std::to_string(prep.events) +
                                " packet-stage events is too large (limit " +
                                std::to_string(kMaxTraceEvents) + "); trace a smaller run");
  dim_.route_stages_max = prep.route_stages_max;
  dim_.route_stages = prep.route_stages;
  place_ = std::move(prep.place);
  tries_ = std::move(prep.tries);
  prepare_stages();
  prepare_transfers(prep);
  if (costs_.dataflow) prepare_dataflow();
  if (tasks_) prepare_tasks();
  prepare_accounting();
}

// Stage bandwidths and latencies. Links take the model's bandwidth, or
// their own when it is 0; port channels take port_bandwidth_Bps, else the
// model's bandwidth, else the fastest link leaving (injection) or entering
// (ejection) the endpoint, so that a port never slows down the network it
// feeds unless asked to.
void Simulation::prepare_stages() {
  const LinkId L = dim_.links;
  const NodeId E = dim_.endpoints;
  const std::int32_t K = dim_.channels;
  dim_.stages = static_cast<std::int64_t>(L) + 2 * static_cast<std::int64_t>(E) * K;
  // Costs per stage first, then interned into classes below.
  std::vector<StageCost> per(static_cast<std::size_t>(dim_.stages));
  std::vector<double> fastest_out, fastest_in;
  if (K > 0 && net_.port_bandwidth_Bps == 0.0 && net_.bandwidth_Bps == 0.0) {
    fastest_out.assign(E, 0.0);
    fastest_in.assign(E, 0.0);
  }
  for (LinkId l = 0; l < L; ++l) {
    const Link lk = topo_.link(l);
    const double bw = net_.bandwidth_Bps > 0.0 ? net_.bandwidth_Bps : lk.bandwidth_Bps;
    per[l].inv_bw = 1.0 / bw;
    per[l].lat = lk.latency_s + net_.hop_latency_s;
    if (!fastest_out.empty()) {
      if (topo_.is_endpoint(lk.src)) fastest_out[lk.src] = std::max(fastest_out[lk.src], bw);
      if (topo_.is_endpoint(lk.dst)) fastest_in[lk.dst] = std::max(fastest_in[lk.dst], bw);
    }
  }
  if (K > 0) set_port_bandwidths(fastest_out, fastest_in, per);
  intern_stage_costs(per);

  costs_.store_and_forward = net_.switching == Switching::store_and_forward;
  // With one bandwidth everywhere, cut-through needs no lookup of the next
  // stage's bandwidth.
  costs_.uniform_bandwidth = true;
  for (const StageCost& c : stage_costs_)
    costs_.uniform_bandwidth = costs_.uniform_bandwidth && c.inv_bw == stage_costs_.front().inv_bw;
  costs_.packet_bytes = net_.packet_bytes;
  costs_.flit_bytes = net_.flit_bytes;
  costs_.reduce_s_per_byte = net_.gamma_s_per_byte;
  if (net_.switch_overhead_s > 0.0) ejection_used_.assign(static_cast<std::size_t>(E) * K, 0);
}

namespace {
// A cost class's key: the bits of its two doubles (equal costs have equal
// bits; a hash, so that a graph whose links all differ interns in linear
// time).
struct CostBits {
  std::uint64_t inv_bw, lat;
  bool operator==(const CostBits& o) const { return inv_bw == o.inv_bw && lat == o.lat; }
};
struct CostBitsHash {
  std::size_t operator()(const CostBits& k) const {
    return static_cast<std::size_t>((k.inv_bw * 0x9E3779B97F4A7C15ull) ^ (k.lat + (k.lat << 17)));
  }
};
}  // namespace

// Stages of equal cost share a class: a network has a few distinct
// bandwidths and latencies, so the live state the loop waits on stays small.
void Simulation::intern_stage_costs(const std::vector<StageCost>& per) {
  stages_.resize(per.size());
  stage_use_.resize(per.size());
  std::unordered_map<CostBits, std::uint32_t, CostBitsHash> classes;
  for (std::size_t r = 0; r < per.size(); ++r) {
    CostBits key;
    std::memcpy(&key.inv_bw, &per[r].inv_bw, sizeof key.inv_bw);
    std::memcpy(&key.lat, &per[r].lat, sizeof key.lat);
    const auto [it, fresh] =
        classes.try_emplace(key, static_cast<std::uint32_t>(stage_costs_.size()));
    if (fresh) stage_costs_.push_back(per[r]);
    stages_[r].cls = it->second;
  }
}

void Simulation::set_port_bandwidths(const std::vector<double>& fastest_out,
                                     const std::vector<double>& fastest_in,
                                     std::vector<StageCost>& per) {
  const LinkId L = dim_.links;
  const NodeId E = dim_.endpoints;
  const std::int32_t K = dim_.channels;
  for (NodeId e = 0; e < E; ++e) {
    double bin = net_.port_bandwidth_Bps > 0.0 ? net_.port_bandwidth_Bps : net_.bandwidth_Bps;
    double bout = bin;
    if (bin == 0.0) {
      // An endpoint without links in one direction never uses that port.
      bout = fastest_out[e] > 0.0 ? fastest_out[e] : 1.0;
      bin = fastest_in[e] > 0.0 ? fastest_in[e] : 1.0;
    }
    for (std::int32_t c = 0; c < K; ++c) {
      const std::int64_t ri = L + static_cast<std::int64_t>(e) * K + c;
      const std::int64_t re = L + static_cast<std::int64_t>(E) * K + ri - L;
      per[ri].inv_bw = 1.0 / bout;
      per[re].inv_bw = 1.0 / bin;
      per[ri].lat = per[re].lat = net_.port_latency_s;
    }
  }
}

// Per transfer and per destination slot state: hot is taken over from the
// preparation. Destination slots (SlotState) are kept only where they hold
// something beyond a count: ports of several channels (the ejection
// channel) or a processing cost (the destination's endpoint, and a count of
// packets delivered apart from those processed). Otherwise transfers to
// several destinations or dataflow count their packets per slot in
// slot_left.
void Simulation::prepare_transfers(Prepared& prep) {
  const TransferId T = dim_.transfers;
  Progress& pr = progress_;
  pr.hot = std::move(prep.hot);
  pr.sizes = prep.sizes;
  pr.wide_last = std::move(prep.wide_last);
  dim_.dst_slots = static_cast<std::int64_t>(sched_.dst_array().size());
  costs_.dataflow = net_.dependencies == Dependencies::dataflow;
  costs_.unicast = !costs_.dataflow && dim_.dst_slots == T;
  costs_.copy_s_per_byte = net_.copy_s_per_byte;
  costs_.switches = sched_.has_switches();
  costs_.switch_reduce_s_per_byte =
      net_.switch_reduce_Bps > 0.0 ? 1.0 / net_.switch_reduce_Bps : 0.0;
  const bool processing = costs_.reduce_s_per_byte > 0.0 || costs_.copy_s_per_byte > 0.0 ||
                          (costs_.switches && costs_.switch_reduce_s_per_byte > 0.0);
  const bool slots = dim_.channels > 1 || processing;
  costs_.slot_counts = !costs_.unicast && !slots;
  costs_.pending_in_hot = costs_.unicast && dim_.tasks == 0;
  // Dataflow counts its start conditions in prepare_dataflow().
  if (!costs_.pending_in_hot && !costs_.dataflow) pr.pending.resize(T);
  size_times(T);
  // Destinations to count down only where a transfer has several.
  const bool countdown = dim_.dst_slots != T;
  if (countdown) pr.dsts_left.resize(T);
  if (slots) pr.slots.resize(static_cast<std::size_t>(dim_.dst_slots));
  if (costs_.slot_counts) pr.slot_left.resize(static_cast<std::size_t>(dim_.dst_slots));
  if (dim_.channels > 1) pr.inj_chan.assign(T, -1);
  for (TransferId t = 0; t < T; ++t) {
    // (With Costs::unicast, packetize() set TransferHot::left to the
    // packets, which start() sets again in this case.)
    if (costs_.pending_in_hot)
      pr.hot[t].left = static_cast<std::uint32_t>(sched_.num_deps(t));
    else if (!costs_.dataflow)
      pr.pending[t] = static_cast<std::int32_t>(sched_.num_deps(t));
    if (countdown) pr.dsts_left[t] = static_cast<std::int32_t>(sched_.num_dsts(t));
    if (costs_.slot_counts) {
      for (std::int64_t i = sched_.dst_offsets()[t]; i < sched_.dst_offsets()[t + 1]; ++i)
        pr.slot_left[i] = static_cast<std::uint32_t>(npackets(pr.hot[t]));
    }
    if (!slots) continue;
    const auto n = static_cast<std::uint32_t>(npackets(pr.hot[t]));
    for (std::int64_t i = sched_.dst_offsets()[t]; i < sched_.dst_offsets()[t + 1]; ++i)
      pr.slots[i] = SlotState{n, n, -1, place_[sched_.dst_array()[i]]};
  }
  costs_.spray = net_.spray;
  if (net_.spray) sprayed_done_.assign(static_cast<std::size_t>(dim_.dst_slots), 0.0);
  // Dataflow releases through its own edge lists.
  if (!costs_.dataflow) pr.successors = std::move(prep.successors);
}

// Sizes ready and finish for n transfers and tasks (new entries 0): one
// array on the arena, or the result's two when the times are recorded.
void Simulation::size_times(std::int64_t n) {
  Progress& pr = progress_;
  const auto size = static_cast<std::size_t>(n);
  if (opt_.record_transfers) {
    result_.transfer_ready_s.resize(size, 0.0);
    result_.transfer_finish_s.resize(size, 0.0);
    pr.ready = result_.transfer_ready_s.data();
    pr.finish = result_.transfer_finish_s.data();
  } else {
    pr.times.resize(size, 0.0);
    pr.ready = pr.finish = pr.times.data();
  }
}

bool CountedOffsets::assign(const std::uint32_t* pos, std::int64_t n) {
  count.clear();
  sample.clear();
  if (n == 0) return false;
  for (std::int64_t x = 0; x < n; ++x)
    if (pos[x + 1] - pos[x] > std::numeric_limits<std::uint8_t>::max()) return false;
  count.resize(static_cast<std::size_t>(n));
  for (std::int64_t x = 0; x < n; ++x) count[x] = static_cast<std::uint8_t>(pos[x + 1] - pos[x]);
  sample.resize(static_cast<std::size_t>(n >> kSampleShift) + 1);
  for (std::size_t k = 0; k < sample.size(); ++k) sample[k] = pos[k << kSampleShift];
  return true;
}

void SuccessorLists::set_offsets(const std::int64_t* offsets, std::int64_t n,
                                 std::int64_t narrow_limit) {
  counted = CountedOffsets{};
  narrow.clear();
  wide.clear();
  delta.clear();
  if (offsets[n] < narrow_limit)
    narrow.assign(offsets, offsets + n + 1);
  else
    wide.assign(offsets, offsets + n + 1);
}

namespace {
// The lists as fill_successors() builds them, with offsets of one width.
template <typename Offset>
struct SuccessorCsr {
  BigVector<Offset> offsets;
  BigVector<TransferId> list;
};

// The lists with 32-bit offsets, as fill_successors() makes them, in their
// compact forms where they fit (`compact`; SuccessorLists). Beside the
// lists, only the offsets (4 bytes per transfer, mapped: they go back to
// the system when dropped) are made and dropped, or kept when the lists
// need them.
void narrow_successors(const Schedule& s, bool compact, std::int64_t far_limit,
                       SuccessorLists& out) {
  const TransferId n = s.num_transfers();
  ScratchVector<std::uint32_t> pos(static_cast<std::size_t>(n) + 2, 0u);
  std::int64_t farthest = 0;  // the largest |t - d| of an edge d -> t
  count_successors(s, pos, [&farthest](TransferId d, TransferId t) {
    farthest = std::max(farthest, std::abs(std::int64_t{t} - d));
  });
  const std::size_t edges = pos[static_cast<std::size_t>(n) + 1];
  if (compact && farthest <= std::numeric_limits<std::int16_t>::max()) {
    out.delta.resize(edges);
    place_successors(s, pos, [&out](std::uint32_t i, TransferId d, TransferId t) {
      out.delta[i] = static_cast<std::int16_t>(t - d);
    });
  } else if (compact && farthest < std::min(far_limit, kFarSuccessors)) {
    out.delta24.resize(3 * edges + 1);
    std::uint8_t* bytes = out.delta24.data();
    place_successors(s, pos, [bytes](std::uint32_t i, TransferId d, TransferId t) {
      const auto bits = static_cast<std::uint32_t>(t - d);
      bytes[3 * std::size_t{i}] = static_cast<std::uint8_t>(bits);
      bytes[3 * std::size_t{i} + 1] = static_cast<std::uint8_t>(bits >> 8);
      bytes[3 * std::size_t{i} + 2] = static_cast<std::uint8_t>(bits >> 16);
    });
  } else {
    out.list.resize(edges);
    place_successors(s, pos, [&out](std::uint32_t i, TransferId, TransferId t) {
      out.list[i] = t;
    });
  }
  // pos[t] is t's first entry now, for t <= n.
  if (!compact || !out.counted.assign(pos.data(), n))
    out.narrow.assign(pos.data(), pos.data() + n + 1);
}
}  // namespace

// The schedule's successor lists (fill_successors), on the arena.
SuccessorLists successor_lists(const Schedule& s, std::int64_t narrow_limit, bool compact,
                               std::int64_t far_limit) {
  SuccessorLists out;
  if (static_cast<std::int64_t>(s.dep_array().size()) < narrow_limit) {
    narrow_successors(s, compact, far_limit, out);
  } else {
    SuccessorCsr<std::int64_t> csr;
    fill_successors(s, csr);
    out.wide = std::move(csr.offsets);
    out.list = std::move(csr.list);
  }
  return out;
}

// Stream t has injected its last packet: every delivery it forwards has
// arrived and been used, so its run state goes back to the pool (emptied:
// its lists keep their storage).
void Simulation::end_stream(TransferId t) {
  std::uint32_t& w = progress_.hot[t].stream;
  live_run(w).next = -1;  // as a fresh entry (start() sets the pace)
  (StreamWord::queues(w) == 2 ? dataflow_.free_pairs : dataflow_.free_runs)
      .push_back(StreamWord::live(w));
  w = StreamWord::with_live(w, -1);
}

void Simulation::prepare_accounting() {
  result_.rank_finish_s.assign(dim_.ranks, 0.0);
  // Compute units only when processing or a compute task costs anything.
  bool computes = costs_.reduce_s_per_byte > 0.0 || costs_.copy_s_per_byte > 0.0 ||
                  (costs_.switches && costs_.switch_reduce_s_per_byte > 0.0);
  for (std::int64_t k = 0; !computes && k < dim_.tasks; ++k) computes = tasks_->rank[k] >= 0;
  // Switch ranks compute on their routers (node ids past the endpoints).
  const NodeId units = costs_.switches ? topo_.num_nodes() : dim_.endpoints;
  compute_.resize(computes ? static_cast<std::size_t>(units) : 0);
  if (opt_.record_timeline) {
    timeline_.open_start.assign(dim_.links, -1.0);
    timeline_.open_end.assign(dim_.links, -1.0);
  }
}

// Busy times per link and per endpoint port (summed over its channels),
// compute busy times, and the optional records.
SimResult Simulation::collect() {
  // The run is over: its largest state goes back (to the arena, for the
  // next run).
  Progress& pr = progress_;
  BigVector<TransferHot>().swap(pr.hot);
  BigVector<std::int32_t>().swap(pr.pending);
  BigVector<std::int32_t>().swap(pr.dsts_left);
  BigVector<SlotState>().swap(pr.slots);
  BigVector<std::uint32_t>().swap(pr.slot_left);
  pr.successors = SuccessorLists{};
  tries_ = StageTries{};
  queue_.release();
  const LinkId L = dim_.links;
  const NodeId E = dim_.endpoints;
  const std::int32_t K = dim_.channels;
  result_.compute_busy_s.assign(E, 0.0);
  for (NodeId e = 0; e < std::min(E, static_cast<NodeId>(compute_.size())); ++e)
    result_.compute_busy_s[e] = compute_[e].busy;
  if (costs_.switches) {
    // Per rank: a switch rank's reduction time on its router, else 0.
    result_.switch_busy_s.assign(dim_.ranks, 0.0);
    for (RankId r = 0; r < dim_.ranks; ++r)
      if (sched_.is_switch(r) && !compute_.empty())
        result_.switch_busy_s[r] = compute_[place_[r]].busy;
  }
  result_.link_busy_s.resize(L);
  result_.link_bytes.resize(L);
  for (LinkId l = 0; l < L; ++l) {
    result_.link_busy_s[l] = stage_use_[l].busy;
    result_.link_bytes[l] = stage_use_[l].bytes;
  }
  result_.injection_busy_s.assign(E, 0.0);
  result_.ejection_busy_s.assign(E, 0.0);
  for (NodeId e = 0; e < E && K > 0; ++e)
    for (std::int32_t c = 0; c < K; ++c) {
      result_.injection_busy_s[e] += stage_use_[L + static_cast<std::int64_t>(e) * K + c].busy;
      result_.ejection_busy_s[e] += stage_use_[L + static_cast<std::int64_t>(E + e) * K + c].busy;
    }
  const TransferId T = dim_.transfers;
  const Seconds* finish = pr.finish;
  if (dim_.tasks > 0) {
    result_.task_start_s = std::move(pr.task_start);
    result_.task_finish_s.assign(finish + T, finish + T + dim_.tasks);
  }
  if (opt_.record_transfers) {  // filled in place; the tasks' entries go
    result_.transfer_ready_s.resize(static_cast<std::size_t>(T));
    result_.transfer_finish_s.resize(static_cast<std::size_t>(T));
  }
  if (opt_.record_timeline) collect_timeline();
  return std::move(result_);
}

// The busy intervals of all links as one step function: +1 at each start,
// -1 at each end, sorted; marks at the same time merge into one step (the
// last count wins), and the function ends with 0 at the makespan.
void Simulation::collect_timeline() {
  Timeline& tl = timeline_;
  for (LinkId l = 0; l < dim_.links; ++l)
    if (tl.open_end[l] > tl.open_start[l]) tl.closed.emplace_back(tl.open_start[l], tl.open_end[l]);
  std::vector<std::pair<double, int>> marks;
  marks.reserve(2 * tl.closed.size());
  for (const auto& [a, b] : tl.closed) {
    marks.emplace_back(a, +1);
    marks.emplace_back(b, -1);
  }
  std::sort(marks.begin(), marks.end());
  result_.timeline_t.push_back(0.0);
  result_.timeline_busy.push_back(0);
  std::int32_t busy = 0;
  for (const auto& [x, delta] : marks) {
    busy += delta;
    if (x == result_.timeline_t.back()) {
      result_.timeline_busy.back() = busy;
    } else {
      result_.timeline_t.push_back(x);
      result_.timeline_busy.push_back(busy);
    }
  }
  if (result_.timeline_t.back() < result_.time_s) {
    result_.timeline_t.push_back(result_.time_s);
    result_.timeline_busy.push_back(0);
  }
}

}  // namespace wafercoll::sim
