// The simulator's event loop: Simulation::run and the handlers it calls.
// See simulate.hpp for the model and simulation.hpp for the state.
//
// Why it is correct to treat every stage as a plain FCFS server: events are
// processed in time order, so when a packet reaches a stage every packet
// that reached it earlier has already been given its slot, and the arriving
// packet's service simply starts at max(arrival, stage free time). One
// event per packet per trie node (or stage of a computed route, routes.hpp);
// a packet's follow-up event (its next stage, or the next packet of its
// stream) usually replaces the event just taken in the queue (top_consumed_),
// which saves a pop and a push.
//
// Event ties are broken by (position of the packet's data in the vector,
// canonical transfer rank, local trie node, kind): never by transfer index,
// so that renumbering the transfers does not change any result. A computed
// route's stage number is the local node its trie path would have (a path's
// nodes are numbered from its first), so both kinds of route tie alike.
//
// Every handler below is small and called from one or two places in this
// unit; keeping them in one translation unit lets the compiler inline them
// into the loop as it did when they were lambdas.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/packets.hpp"
#include "wafercoll/simulate/simulation.hpp"

namespace wafercoll::sim {

// The packet index of an event: its data position minus its transfer's
// first (positions saturate only beyond 2^38 packets, which max_events
// refuses long before).
std::int64_t Simulation::packet_of(const Event& e) const {
  return static_cast<std::int64_t>((e.tie_key >> kCanonBits) -
                                   progress_.hot[tries_.nodes[e.node].transfer()].key0());
}

// Queues packet `packet` of transfer tr at trie node `node`. The first event
// scheduled while handling an event takes that event's place in the queue.
void Simulation::push(Seconds t, std::int64_t packet, TransferId tr, std::int32_t node,
                      std::uint32_t kind, Seconds head) {
  const TransferHot& h = progress_.hot[tr];
  enqueue(Event{t, h.tie_key(packet), head,
                (static_cast<std::uint32_t>(node - h.base) << 1) | kind, node});
}

// Queues packet `packet` of transfer tr, whose route is computed, at stage
// `stage` of its path (the trie node it would have, relative to the first).
void Simulation::push_computed(Seconds t, std::int64_t packet, TransferId tr,
                               std::int32_t stage, std::uint32_t kind, Seconds head) {
  const TransferHot& h = progress_.hot[tr];
  enqueue(Event{t, h.tie_key(packet), head,
                (static_cast<std::uint32_t>(stage) << 1) | kind, kComputedNode | tr});
}

// Queues packet `packet` of transfer tr at the stage of event ev (a trie
// node or a computed stage): as push() with ev's node.
void Simulation::requeue(const Event& ev, Seconds t, std::int64_t packet, TransferId tr,
                         std::uint32_t kind, Seconds head) {
  const TransferHot& h = progress_.hot[tr];
  enqueue(Event{t, h.tie_key(packet), head, (ev.local_key & ~1u) | kind, ev.node});
}

void Simulation::enqueue(const Event& e) {
  if (!top_consumed_) {
    queue_.replace_top(e);
    top_consumed_ = true;
  } else {
    if (queue_.size() >= kMaxQueued)
      throw std::invalid_argument(
          "more than " + std::to_string(kMaxQueued) +
          " packets are queued in the network at once (2 GiB of events); "
          "use a larger packet_bytes");
    queue_.push(e);
  }
}

// Inject the next packet of a forwarding transfer once it is started, its
// first stage has let the previous packet go, and the packet has arrived
// (from both dependencies of a pair: StreamRun).
void Simulation::try_inject(TransferId t) {
  const TransferHot& h = progress_.hot[t];
  StreamRun& st = stream_run(t);
  const bool pair = StreamWord::queues(h.stream) == 2;
  if (st.next < 0 || st.next >= npackets(h) || (pair ? st.ready.matched == 0 : st.ready.empty()))
    return;
  const Seconds go = std::max(st.pace, st.ready.front());
  if (h.computed())
    push_computed(go, st.next, t, 0, kArrive, go);
  else
    push(go, st.next, t, static_cast<std::int32_t>(h.base), kArrive, go);
  st.ready.pop_front();
  if (pair) --st.ready.matched;
  st.next = -2;  // in flight until it leaves the first stage
}

namespace {

// An entry of `pool` for a stream that starts: a free one, else a new one.
template <typename Run>
std::int32_t take_run(std::vector<Run>& pool, std::vector<std::int32_t>& free) {
  if (free.empty()) {
    pool.emplace_back();
    return static_cast<std::int32_t>(pool.size() - 1);
  }
  const std::int32_t i = free.back();
  free.pop_back();
  return i;
}

}  // namespace

// The run state of stream t, taken from the pool when it first needs one
// (at its first delivery).
StreamRun& Simulation::stream_run(TransferId t) {
  std::uint32_t& w = progress_.hot[t].stream;
  if (StreamWord::live(w) >= 0) return live_run(w);
  DataflowEdges& df = dataflow_;
  const std::uint32_t nq = StreamWord::queues(w);
  w = StreamWord::with_live(
      w, nq == 2 ? take_run(df.pairs, df.free_pairs) : take_run(df.runs, df.free_runs));
  StreamRun& r = live_run(w);
  if (nq == StreamWord::kMore) {
    const auto it = std::lower_bound(df.more_queues.begin(), df.more_queues.end(),
                                     std::make_pair(t, std::int32_t{0}));
    const auto live = static_cast<std::size_t>(StreamWord::live(w));
    if (df.run_queues.size() <= live) df.run_queues.resize(live + 1);
    df.run_queues[live].resize(static_cast<std::size_t>(it->second));
  }
  return r;
}

// A transfer whose dependencies are met: its first packet reaches its first
// stage(s) alpha later. A stream instead paces its packets itself. Ids from
// dim_.transfers on are tasks (tasks.cpp).
void Simulation::start(TransferId t) {
  if (t >= dim_.transfers) {
    start_task(t - dim_.transfers);
    return;
  }
  const Seconds a = progress_.ready[t] + net_.alpha_s;
  TransferHot& h = progress_.hot[t];
  result_.packets += npackets(h);
  if (costs_.pending_in_hot) h.left = static_cast<std::uint32_t>(npackets(h));  // from dependencies to packets
  if (costs_.dataflow && h.stream != 0) {
    // Until a packet has arrived the stream has nothing to pace: its run
    // state is taken with the first (stream_delivered), which reads the
    // start from ready[t].
    if (StreamWord::live(h.stream) < 0) return;
    StreamRun& st = stream_run(t);
    st.next = 0;
    st.pace = a;
    try_inject(t);
    return;
  }
  if (h.computed()) {
    push_computed(a, 0, t, 0, kArrive, a);
    return;
  }
  const bool parts = costs_.spray && tries_.spray_root[t].ways > 0;
  for (std::int32_t c = tries_.base[t]; c >= 0;
       c = tries_.nodes[c].next_sibling)
    push(a, parts ? next_sprayed(t, c, -1) : 0, t, c, kArrive, a);
}

// A sprayed transfer whose packets part at their first stage: the packet
// after `packet` that first stage `node` takes (npackets or more: none).
// Each first stage paces its own packets.
std::int64_t Simulation::next_sprayed(TransferId t, std::int32_t node, std::int64_t packet) const {
  const SprayChoice& c = tries_.spray_root[t];
  const LinkId link = tries_.nodes[node].resource;
  std::int64_t k = packet + 1;
  while (tries_.spray_link(c, k) != link) ++k;  // within one sequence length
  return k;
}

// A packet was delivered at destination slot `slot`: the streams that
// forward it may have their next packet ready. With several stream
// dependencies a packet is ready once it has arrived from all of them.
void Simulation::stream_delivered(std::int64_t slot, Seconds when) {
  const EdgeCsr<std::uint32_t>& streams = dataflow_.stream;
  if (streams.empty()) return;
  const auto [first, end] = streams.range(slot);
  for (std::int64_t i = first; i < end; ++i) {
    const auto [t, q] = stream_edge(dataflow_, i);
    const std::uint32_t w = progress_.hot[t].stream;
    const std::uint32_t nq = StreamWord::queues(w);
    const bool fresh = StreamWord::live(w) < 0;
    StreamRun& st = stream_run(t);
    if (fresh && unmet(t) == 0) {  // started before its first packet came
      st.next = 0;
      st.pace = progress_.ready[t] + net_.alpha_s;
    }
    if (nq == 1) {
      st.ready.push_back(when);
      if (st.next >= 0) try_inject(t);
      continue;
    }
    if (nq == 2) {
      Fifo& f = st.ready;
      const auto lead = static_cast<std::uint8_t>(q);
      if (f.matched == f.size()) {  // q goes ahead
        f.push_back(when);
        f.lead = lead;
      } else if (f.lead == lead) {  // q stays ahead
        f.push_back(when);
      } else {  // q delivers a packet the other one had
        Seconds& at = f.at(f.matched++);
        at = std::max(at, when);
        if (st.next >= 0) try_inject(t);
      }
      continue;
    }
    std::vector<Fifo>& queues =
        dataflow_.run_queues[static_cast<std::size_t>(StreamWord::live(progress_.hot[t].stream))];
    queues[q].push_back(when);
    bool all = true;
    for (const auto& dq : queues) all = all && !dq.empty();
    if (!all) continue;
    Seconds latest = 0.0;
    for (auto& dq : queues) {
      latest = std::max(latest, dq.front());
      dq.pop_front();
    }
    st.ready.push_back(latest);
    if (st.next >= 0) try_inject(t);
  }
}

// One of x's start conditions is met at `when`; x starts with the last.
void Simulation::release(TransferId x, Seconds when) {
  progress_.ready[x] = std::max(progress_.ready[x], when);
  if (costs_.pending_in_hot ? --progress_.hot[x].left == 0 : --progress_.pending[x] == 0)
    start(x);
}

void Simulation::complete(TransferId t) {
  Progress& pr = progress_;
  if (t < dim_.transfers)
    ++pr.completed;
  else
    ++pr.tasks_completed;
  result_.time_s = std::max(result_.time_s, pr.finish[t]);
  if (costs_.dataflow) {
    const EdgeCsr<TransferId>& next = dataflow_.complete;
    if (next.empty()) return;
    const auto [first, end] = next.range(t);
    for (std::int64_t i = first; i < end; ++i) release(next.list[i], pr.finish[t]);
  } else {
    const auto [first, end] = pr.successors.range(t);
    for (std::int64_t i = first; i < end; ++i)
      release(static_cast<TransferId>(pr.successors.entry(i, t)), pr.finish[t]);
  }
}

// Dataflow only: the last packet of slot `slot` was delivered, which
// releases the transfers that take its data.
void Simulation::delivered(std::int64_t slot, Seconds when) {
  // With slot counts, packet_done() counts this packet down right after
  // (nothing is processed): the slot is delivered when it is the last.
  if (costs_.slot_counts ? progress_.slot_left[slot] != 1 : --progress_.slots[slot].deliv != 0)
    return;
  const EdgeCsr<TransferId>& next = dataflow_.data;
  if (next.empty()) return;
  const auto [first, end] = next.range(slot);
  for (std::int64_t i = first; i < end; ++i) release(next.list[i], when);
}

// Dataflow only: the last packet of a transfer entered the stage of gate
// index `gate` (DataflowEdges), so the stages it gates may open; their
// parked packets go on from `when` (arrivals again, with the same keys).
void Simulation::open_gates(std::int64_t gate, Seconds when) {
  Parking& pk = parking_;
  const EdgeCsr<std::int32_t>& gated = dataflow_.gate;
  if (gated.empty()) return;
  const auto [first, end] = gated.range(gate);
  for (std::int64_t i = first; i < end; ++i) {
    std::int32_t& word = gate_word(gated.list[i]);
    if (word > 0) {  // nothing parked there
      --word;
      continue;
    }
    const std::int32_t park = -1 - word;
    ParkedList& list = pk.lists[static_cast<std::size_t>(park)];
    if (--list.closed != 0) continue;
    for (const Event& e : list.events)
      enqueue(Event{std::max(e.time, when), e.tie_key, std::max(e.head, when),
                    (e.local_key & ~1u) | kArrive, e.node});
    list.events.clear();
    pk.free_lists.push_back(park);
    word = 0;
  }
}

// Dataflow only: a packet waits at a stage (of gate index `gate`) whose
// gates are still closed (an earlier stream on it has not passed yet).
void Simulation::park(const Event& ev, std::int64_t gate) {
  Parking& pk = parking_;
  std::int32_t& word = gate_word(gate);
  if (word > 0) {  // the first packet to wait here: the list takes the count
    std::int32_t park;
    if (pk.free_lists.empty()) {
      park = static_cast<std::int32_t>(pk.lists.size());
      pk.lists.emplace_back();
    } else {
      park = pk.free_lists.back();
      pk.free_lists.pop_back();
    }
    pk.lists[static_cast<std::size_t>(park)].closed = word;
    word = -1 - park;
  }
  pk.lists[static_cast<std::size_t>(-1 - word)].events.push_back(ev);
}

// A packet of t is done at destination slot `slot` (delivered and
// processed); the destination is done after its last, the transfer after
// its last destination.
void Simulation::packet_done(TransferId t, std::int64_t slot, Seconds when) {
  if (costs_.unicast) {
    if (--progress_.hot[t].left != 0) return;
  } else if (costs_.slot_counts) {
    if (--progress_.slot_left[slot] != 0) return;
  } else if (--progress_.slots[slot].left != 0) {
    return;
  }
  const RankId d = slot_rank_[slot];
  result_.rank_finish_s[d] = std::max(result_.rank_finish_s[d], when);
  progress_.finish[t] = std::max(progress_.finish[t], when);
  if (progress_.dsts_left.empty() || --progress_.dsts_left[t] == 0) complete(t);
}

// The channel of a port (stages first .. first + channels - 1) that frees
// up first; the lowest on a tie.
std::int64_t Simulation::pick_channel(std::int64_t first) const {
  std::int64_t best = first;
  for (std::int32_t c = 1; c < dim_.channels; ++c)
    if (stages_[first + c].free_at < stages_[best].free_at) best = first + c;
  return best;
}

// With a compute cost and several ejection channels packets may reach the
// destination out of processing order, so processing waits for its own
// event (kDeliver) and the compute unit serves them FCFS.
void Simulation::process_delivery(Seconds at, TransferId t, std::int64_t slot, Bytes bytes) {
  const NodeId e = place_[slot_rank_[slot]];
  const Seconds cs = std::max(at, compute_[e].free_at);
  const Seconds dur = processing_cost(t, slot) * static_cast<double>(bytes);
  compute_[e].free_at = cs + dur;
  compute_[e].busy += dur;
  packet_done(t, slot, cs + dur);
}

// Sprayed packets end on different stages, so not in the order they are
// delivered: the latest delivery to destination slot `slot` so far. (Booked
// processing is done in booking order, so only unprocessed deliveries need
// this.)
Seconds Simulation::sprayed_latest(std::int64_t slot, Seconds when) {
  Seconds& latest = sprayed_done_[static_cast<std::size_t>(slot)];
  latest = std::max(latest, when);
  return latest;
}

// The stage an arriving packet is served by: the node's link, or a port
// channel (chosen once per transfer for injection, once per destination
// for ejection, when its first packet arrives). Sets `avail` to the switch
// overhead when a new transfer takes over an ejection channel.
std::int64_t Simulation::resolve_stage(const Event& ev, TransferId t, std::int64_t packet,
                                       Seconds& avail) {
  const TrieNode& nd = tries_.nodes[ev.node];
  const LinkId L = dim_.links;
  const NodeId E = dim_.endpoints;
  const std::int32_t K = dim_.channels;
  std::int64_t r = nd.resource;
  if (r == kInjPort) {
    const std::int64_t first = L + static_cast<std::int64_t>(place_[sched_.src(t)]) * K;
    std::int32_t& inj = progress_.inj_chan[t];
    if (inj < 0) inj = static_cast<std::int32_t>(pick_channel(first) - first);
    r = first + inj;
  } else if (r == kEjPort) {
    const std::int64_t first = L + static_cast<std::int64_t>(E) * K +
                               static_cast<std::int64_t>(place_[slot_rank_[nd.term]]) * K;
    std::int32_t& ej = progress_.slots[nd.term].ej_chan;
    if (ej < 0) ej = static_cast<std::int32_t>(pick_channel(first) - first);
    r = first + ej;
  }
  const std::int64_t ej_first = L + static_cast<std::int64_t>(E) * K;
  if (packet == 0 && !ejection_used_.empty() && r >= ej_first) {
    // A transfer's first packet (packets enter a stage in order) at an
    // ejection channel: a switch if another transfer came in before.
    std::uint8_t& used = ejection_used_[static_cast<std::size_t>(r - ej_first)];
    if (used) avail = net_.switch_overhead_s;
    used = 1;
  }
  return r;
}

// The optional records of one service: the trace, and the link's busy
// interval (extended when the link stays busy, else a new one).
void Simulation::record_service(TransferId t, std::int64_t packet, std::int64_t stage,
                                Seconds start, Seconds end, Seconds dur) {
  if (opt_.record_trace) {
    result_.trace_transfer.push_back(t);
    result_.trace_packet.push_back(packet);
    result_.trace_stage.push_back(stage);
    result_.trace_start_s.push_back(start);
    result_.trace_finish_s.push_back(end);
  }
  if (!(opt_.record_timeline && stage < dim_.links && dur > 0.0)) return;
  Timeline& tl = timeline_;
  if (tl.open_end[stage] == start) {
    tl.open_end[stage] = end;
    return;
  }
  if (tl.open_end[stage] > tl.open_start[stage]) {
    if (tl.closed.size() >= kMaxTimelineIntervals)
      throw std::invalid_argument(
          "the busy-link timeline has more than " + std::to_string(kMaxTimelineIntervals) +
          " separate intervals; simulate without timeline=True or with a "
          "larger packet_bytes");
    tl.closed.emplace_back(tl.open_start[stage], tl.open_end[stage]);
  }
  tl.open_start[stage] = start;
  tl.open_end[stage] = end;
}

// A packet left its transfer's first stage at `end`: the source presents
// the next packet (fair sharing of the first stage), or, after the last,
// the source rank is done sending.
void Simulation::left_first_stage(const Event& ev, TransferId t, std::int64_t packet,
                                  Seconds end, bool spray) {
  const bool stream = costs_.dataflow && progress_.hot[t].stream != 0;
  if (stream) {
    StreamRun& st = stream_run(t);
    st.pace = end;
    st.next = packet + 1;
    if (st.next >= npackets(progress_.hot[t]))
      end_stream(t);
    else
      try_inject(t);
  }
  const std::int64_t next = spray && tries_.spray_root[t].ways > 0
                               ? next_sprayed(t, ev.node, packet)
                               : packet + 1;
  if (next < npackets(progress_.hot[t])) {
    if (!stream) requeue(ev, end, next, t, kArrive, end);
  } else {
    const RankId src = sched_.src(t);
    result_.rank_finish_s[src] = std::max(result_.rank_finish_s[src], end);
  }
}

// The packet moves on to every child stage. Store-and-forward: it arrives
// whole, latency after it finished here. Cut-through: its head arrives
// latency (plus one flit) after it passed here, and its service there may
// not end before its tail has arrived.
void Simulation::forward(const Event& ev, TransferId t, std::int64_t packet, Seconds head_left,
                         Seconds end, Bytes wire, double inv_bw, Seconds latency,
                         bool spray) {
  // The packet's arrival at child stage c.
  auto to = [&](std::int32_t c) WAFERCOLL_LOOP_INLINE {
    if (costs_.store_and_forward) {
      const Seconds a = end + latency;
      push(a, packet, t, c, kArrive, a);
      return;
    }
    double ibn = inv_bw;  // the next stage's, when stages differ
    if (!costs_.uniform_bandwidth) {
      const std::int32_t cr = tries_.nodes[c].resource;
      // Else an ejection channel, all alike per endpoint.
      ibn = cr >= 0 ? stage_cost(cr).inv_bw
                    : ejection_inv_bw(place_[slot_rank_[tries_.nodes[c].term]]);
    }
    Seconds head;
    const Seconds a = cut_through_arrival(head_left, end, wire, inv_bw, ibn, latency, head);
    push(a, packet, t, c, kArrive, head);
  };
  if (spray && tries_.spray[ev.node].ways > 0) {
    // A sprayed packet takes one of the children.
    const LinkId link = tries_.spray_link(tries_.spray[ev.node], packet);
    std::int32_t c = tries_.nodes[ev.node].first_child;
    while (tries_.nodes[c].resource != link) c = tries_.nodes[c].next_sibling;
    to(c);
    return;
  }
  for (std::int32_t c = tries_.nodes[ev.node].first_child; c >= 0;
       c = tries_.nodes[c].next_sibling)
    to(c);
}

// The packet reached the end of a destination's route at `at`. Dataflow
// streams and data edges learn of it now; processing (reduce or copy) then
// follows, booked at once when there is one ejection channel (packets then
// reach the endpoint in processing order), else through a kDeliver event.
void Simulation::reach_destination(const Event& ev, TransferId t, std::int64_t packet,
                                   std::int64_t term, Bytes bytes, Seconds at, bool spray) {
  if (costs_.dataflow) {
    stream_delivered(term, at);
    delivered(term, at);
  }
  const double cost = processing_cost(t, term);
  if (cost > 0.0 && dim_.channels == 1) {
    const NodeId e = progress_.slots[term].endpoint;
    const Seconds cs = std::max(at, compute_[e].free_at);
    const Seconds dur = cost * static_cast<double>(bytes);
    compute_[e].free_at = cs + dur;
    compute_[e].busy += dur;
    packet_done(t, term, cs + dur);
  } else if (cost > 0.0) {
    requeue(ev, at, packet, t, kDeliver, at);
  } else {
    packet_done(t, term, spray ? sprayed_latest(term, at) : at);
  }
}

// One event: a delivery to process, a packet to park, or a packet served by
// its stage and sent on.
void Simulation::process(const Event& ev) {
  if (ev.node < 0) {  // a compute task (tasks.cpp)
    run_task(-1 - static_cast<std::int64_t>(ev.node), ev.time);
    return;
  }
  if (ev.node >= kComputedNode) {
    process_computed(ev);
    return;
  }
  const TrieNode& nd = tries_.nodes[ev.node];
  const TransferId t = nd.transfer();
  const std::int64_t k = packet_of(ev);
  const TransferHot& h = progress_.hot[t];
  const Bytes m = (k == npackets(h) - 1) ? last_bytes(t, h) : costs_.packet_bytes;
  if ((ev.local_key & 1u) == kDeliver) {
    process_delivery(ev.time, t, nd.term, m);
    return;
  }
  if (costs_.dataflow && nd.gate != 0) {
    park(ev, ev.node);
    return;
  }
  Seconds avail = 0.0;  // the stage is free from: free_at, plus a switch
  const std::int64_t r = resolve_stage(ev, t, k, avail);
  const Service sv = serve(ev, t, k, m, r, avail);
  if (costs_.dataflow && k == npackets(h) - 1) open_gates(ev.node, sv.start);
  if (nd.sprayed()) {
    sprayed_moves_on(ev, t, k, sv.head, sv.finish, sv.wire, sv.inv_bw, sv.latency, m);
    return;
  }
  if (nd.top()) left_first_stage(ev, t, k, sv.finish, false);
  forward(ev, t, k, sv.head, sv.finish, sv.wire, sv.inv_bw, sv.latency, false);
  if (nd.term >= 0) reach_destination(ev, t, k, nd.term, m, sv.finish + sv.latency, false);
}

// Packet k (m bytes) of transfer t is served by stage r, free from
// avail after its free time (a switch overhead, else 0).
Simulation::Service Simulation::serve(const Event& ev, TransferId t, std::int64_t k, Bytes m,
                                      std::int64_t r, Seconds avail) {
  StageLive& stage = stages_[r];
  const StageCost& c = stage_costs_[stage.cls];
  avail += stage.free_at;
  Service sv;
  sv.wire = wire_bytes(m, costs_.flit_bytes);
  sv.inv_bw = c.inv_bw;
  sv.start = std::max(ev.time, avail);
  sv.head = std::max(ev.head, avail);  // the head moves on
  const Seconds dur = static_cast<double>(sv.wire) * sv.inv_bw;
  sv.finish = sv.start + dur;
  stage.free_at = sv.finish;
  StageUse& use = stage_use_[r];
  use.busy += dur;
  use.bytes += m;
  if ((++result_.events & (kInterruptStride - 1)) == 0) poll_interrupt();
  record_service(t, k, r, sv.start, sv.finish, dur);
  sv.latency = c.lat;
  return sv;
}

// The same for a packet of a sprayed transfer, out of the loop's body (the
// handlers' spray branches fold away in the call above).
void Simulation::sprayed_moves_on(const Event& ev, TransferId t, std::int64_t k, Seconds hs,
                                  Seconds fin, Bytes w, double ib, Seconds l, Bytes m) {
  const TrieNode& nd = tries_.nodes[ev.node];
  if (nd.top()) left_first_stage(ev, t, k, fin, true);
  forward(ev, t, k, hs, fin, w, ib, l, true);
  if (nd.term >= 0) reach_destination(ev, t, k, nd.term, m, fin + l, true);
}

// Cut-through with this model's flits (packets.hpp).
Seconds Simulation::cut_through_arrival(Seconds head_left, Seconds end, Bytes wire,
                                        double inv_bw, double ibn, Seconds latency,
                                        Seconds& head) const {
  return wafercoll::cut_through_arrival(head_left, end, wire, inv_bw, ibn, latency,
                                        costs_.flit_bytes, head);
}

// Seconds per byte of endpoint e's ejection channels (all alike).
double Simulation::ejection_inv_bw(NodeId e) const {
  const std::int64_t first =
      dim_.links + (static_cast<std::int64_t>(dim_.endpoints) + e) * dim_.channels;
  return stage_cost(first).inv_bw;
}

// The stage that serves stage `stage` of a computed route (routes.hpp) for
// packet `packet`: the injection port, link stage - p of the route (p = 1
// with ports), or the ejection port after the last link; ports resolve their
// channel as resolve_stage() does. Sets `last` when no stage follows.
std::int64_t Simulation::computed_stage(TransferId t, std::int32_t stage, std::int64_t packet,
                                        Seconds& avail, bool& last) {
  const TransferHot& h = progress_.hot[t];
  const LinkId L = dim_.links;
  const NodeId E = dim_.endpoints;
  const std::int32_t K = dim_.channels;
  const std::int32_t p = K > 0 ? 1 : 0;
  last = false;
  if (stage < p) {
    if (K == 1) return L + h.src;
    const std::int64_t first = L + static_cast<std::int64_t>(h.src) * K;
    std::int32_t& inj = progress_.inj_chan[t];
    if (inj < 0) inj = static_cast<std::int32_t>(pick_channel(first) - first);
    return first + inj;
  }
  std::int32_t hops = 0;
  const LinkId l = topo_.route_link_unchecked(h.src, h.dst(), stage - p, &hops);
  if (l >= 0) {
    last = K == 0 && stage == hops - 1;
    return l;
  }
  last = true;
  const std::int64_t ej_first = L + static_cast<std::int64_t>(E) * K;
  std::int64_t r = ej_first + static_cast<std::int64_t>(h.dst()) * K;
  if (K > 1) {
    std::int32_t& ej = progress_.slots[sched_.dst_offsets()[t]].ej_chan;
    if (ej < 0) ej = static_cast<std::int32_t>(pick_channel(r) - r);
    r += ej;
  }
  if (packet == 0 && !ejection_used_.empty()) {
    std::uint8_t& used = ejection_used_[static_cast<std::size_t>(r - ej_first)];
    if (used) avail = net_.switch_overhead_s;
    used = 1;
  }
  return r;
}

// Seconds per byte of stage `stage` (> 0) of t's computed route.
double Simulation::computed_inv_bw(TransferId t, std::int32_t stage) const {
  const TransferHot& h = progress_.hot[t];
  const std::int32_t p = dim_.channels > 0 ? 1 : 0;
  const LinkId l = topo_.route_link_unchecked(h.src, h.dst(), stage - p, nullptr);
  return l >= 0 ? stage_cost(l).inv_bw : ejection_inv_bw(h.dst());
}

// Dataflow, order gates on computed stages (out of the loop's body, which
// complete-mode runs share): the gate index of stage `stage` of t's route,
// -1 when it has none, or kParked when the packet of ev parked there.
std::int64_t Simulation::computed_gate(const Event& ev, TransferId t, std::int32_t stage) {
  const std::int64_t base = first_stage_gate(t);
  if (base < 0) return -1;
  const std::int64_t g = base + stage;
  const auto gate = static_cast<std::int64_t>(tries_.nodes.size()) + g;
  if (dataflow_.stage_gate[static_cast<std::size_t>(g)] == 0) return gate;
  park(ev, gate);
  return kParked;
}

// Out of line: keeps open_gates, inlined into the loop, out of
// process_computed's body, which complete-mode runs share.
void Simulation::open_computed_gates(std::int64_t gate, Seconds when) { open_gates(gate, when); }

// An event of a transfer whose route is computed: as process() for a trie
// path, the next stage found by computed_stage() instead of a child node.
void Simulation::process_computed(const Event& ev) {
  const TransferId t = computed_transfer(ev);
  const TransferHot& h = progress_.hot[t];
  const auto k = static_cast<std::int64_t>((ev.tie_key >> kCanonBits) - h.key0());
  const Bytes m = (k == npackets(h) - 1) ? last_bytes(t, h) : costs_.packet_bytes;
  const auto stage = static_cast<std::int32_t>(ev.local_key >> 1);
  if ((ev.local_key & 1u) == kDeliver) {
    process_delivery(ev.time, t, sched_.dst_offsets()[t], m);
    return;
  }
  std::int64_t gate = -1;  // dataflow: the stage's gate index, if it has one
  if (costs_.computed_gates) {
    gate = computed_gate(ev, t, stage);
    if (gate == kParked) return;
  }
  Seconds avail = 0.0;
  bool last = false;
  const std::int64_t r = computed_stage(t, stage, k, avail, last);
  const Service sv = serve(ev, t, k, m, r, avail);
  if (gate >= 0 && k == npackets(h) - 1) open_computed_gates(gate, sv.start);
  if (stage == 0) left_first_stage(ev, t, k, sv.finish, false);
  if (!last) {
    if (costs_.store_and_forward) {
      const Seconds a = sv.finish + sv.latency;
      push_computed(a, k, t, stage + 1, kArrive, a);
    } else {
      const double ibn =
          costs_.uniform_bandwidth ? sv.inv_bw : computed_inv_bw(t, stage + 1);
      Seconds head;
      const Seconds a =
          cut_through_arrival(sv.head, sv.finish, sv.wire, sv.inv_bw, ibn, sv.latency, head);
      push_computed(a, k, t, stage + 1, kArrive, head);
    }
    return;
  }
  reach_destination(ev, t, k, sched_.dst_offsets()[t], m, sv.finish + sv.latency, false);
}

// Task k's predecessors have completed: a gate completes now; a compute
// task queues for its rank's compute unit at its ready time (an event, so
// that the unit serves tasks in the order of their ready times).
void Simulation::start_task(std::int64_t k) {
  const std::int64_t x = dim_.transfers + k;
  const Seconds at = progress_.ready[x];
  if (tasks_->rank[k] < 0) {
    progress_.task_start[k] = at;
    progress_.finish[x] = at;
    complete(static_cast<TransferId>(x));
    return;
  }
  const std::uint64_t tie = std::min<std::uint64_t>(static_cast<std::uint64_t>(k),
                                                    (std::uint64_t{1} << kCanonBits) - 1);
  enqueue(Event{at, (kMaxPos << kCanonBits) | tie, at, 0u, static_cast<std::int32_t>(-1 - k)});
}

// A compute task reaches its compute unit.
void Simulation::run_task(std::int64_t k, Seconds at) {
  const std::int64_t x = dim_.transfers + k;
  ComputeUnit& cu = compute_[place_[tasks_->rank[k]]];
  const Seconds begin = std::max(at, cu.free_at);
  const Seconds dur = tasks_->duration_s[k];
  cu.free_at = begin + dur;
  cu.busy += dur;
  progress_.task_start[k] = begin;
  progress_.finish[x] = begin + dur;
  complete(static_cast<TransferId>(x));
}

// Prefetch, for computed routes, the transfer record and gate base of the
// event kFar behind the top (time buckets: a hint, a push may go before it;
// the heap gives none), and kNear behind, from that record, its stream's
// run state and stage gate. (Following a delivery through its slot's stream
// edges to the stream that forwards it measured no faster on TTO 16x16.)
void Simulation::prefetch_ahead() {
  constexpr std::size_t kFar = 8, kNear = 4;
  if (const Event* e = queue_.ahead(kFar); e != nullptr && e->node >= kComputedNode) {
    const TransferId t = computed_transfer(*e);
    __builtin_prefetch(&progress_.hot[t]);
    if (costs_.computed_gates && dataflow_.gate_stride == 0)
      __builtin_prefetch(&dataflow_.gate_base[t]);
  }
  if (!costs_.dataflow) return;
  if (const Event* e = queue_.ahead(kNear); e != nullptr && e->node >= kComputedNode) {
    const TransferId t = computed_transfer(*e);
    const std::uint32_t w = progress_.hot[t].stream;
    if (StreamWord::live(w) >= 0) __builtin_prefetch(&live_run(w));
    if (costs_.computed_gates) {
      const std::int64_t base = first_stage_gate(t);
      if (base >= 0)
        __builtin_prefetch(
            &dataflow_.stage_gate[static_cast<std::size_t>(base + (e->local_key >> 1))]);
    }
  }
}

void Simulation::run() {
  if (dim_.tasks == 0) {
    for (TransferId t = 0; t < dim_.transfers; ++t)
      if (unmet(t) == 0) start(t);
  } else {
    // A gate completes when it starts and releases its successors at once,
    // so the roots are taken before any starts (a scan would meet the ones
    // it released with pending 0 and start them twice).
    std::vector<TransferId> roots;
    for (std::int64_t t = 0; t < dim_.transfers + dim_.tasks; ++t)
      if (progress_.pending[t] == 0) roots.push_back(static_cast<TransferId>(t));
    for (const TransferId t : roots) start(t);
  }

  while (!queue_.empty()) {
    if (!top_consumed_) queue_.pop();  // the previous event scheduled nothing
    if (queue_.empty()) break;
    // A copy: handling the event may replace the queue's top.
    const Event ev = queue_.top();
    top_consumed_ = false;
    prefetch_ahead();
    process(ev);
  }
  if (progress_.completed != dim_.transfers || progress_.tasks_completed != dim_.tasks)
    throw std::logic_error("simulation ended with unfinished transfers");
}

}  // namespace wafercoll::sim
