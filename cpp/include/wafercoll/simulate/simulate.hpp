// Discrete-event network simulation of a schedule on a topology.
//
// The simulator knows nothing about algorithms: it moves the schedule's
// transfers, as streams of packets, along the topology's routes and charges
// the network model's costs. Every quantity below is in seconds and bytes.
//
// Model (also the docstring of wafercoll.simulate; the tests derive their
// closed forms from exactly these rules):
//
//  * Rank r runs on endpoint placement[r] (identity by default; distinct
//    endpoints; a switch rank on a hidden router, routes.hpp). A transfer is *ready* when all its dependencies have
//    completed (time 0 without dependencies). Its first packet reaches its
//    first stage at ready + alpha_s (alpha is a start-up delay; it occupies no
//    resource).
//  * A message of S bytes is cut into packets of packet_bytes (the last one
//    shorter; one packet when packet_bytes == 0). With flit_bytes > 0 a
//    packet occupies a whole number of flits on the wire.
//  * Stages. A packet crosses, in order: the source's injection port (only
//    when ports > 0), the links of route(src, dst), the destination's
//    ejection port (only when ports > 0). Every stage is a server that sends
//    one packet at a time at its bandwidth: a packet of w wire bytes occupies
//    it for w / bandwidth. Link stage bandwidth is the model's bandwidth_Bps
//    (or the link's own when that is 0), latency the link's own plus
//    hop_latency_s. Port stages have port_bandwidth_Bps (0: the model's
//    bandwidth, or the fastest link at that endpoint) and port_latency_s.
//    An endpoint has `ports` injection and `ports` ejection channels; a
//    transfer takes the injection channel that frees up first when its first
//    packet arrives, and each destination's ejection channel likewise.
//  * Arbitration: a stage serves packets first come, first served by the
//    time they reach it; simultaneous arrivals go by the position of the
//    packet's data in the vector, then by a canonical order of transfers (source, first destination, first block,
//    last block, op, bytes), so results do not depend on the order in which
//    transfers were added. A source presents packet k+1 of a message when
//    packet k has left its first stage, so messages that share a first stage
//    interleave packet by packet (fair sharing).
//  * Switching. Store-and-forward: a packet reaches the next stage at
//    (its finish on this stage) + latency. Cut-through: its head reaches the
//    next stage at (the time its head passed here) + latency (+ one flit time
//    with flits), and it cannot finish there before finish here + latency, so
//    its service there starts at max(head, finish + latency - w/bw_next). The
//    head passes a stage at max(head arrival, stage free): a fast stage that
//    waits for a slow tail does not delay the head for the stages after it.
//    Routers buffer without limit (no back-pressure).
//  * A packet is delivered at its finish on the last stage + that stage's
//    latency. The destination's one compute unit then processes it, first
//    come first served: gamma * bytes for a reducing transfer, copy_cost *
//    bytes for a copying one (nothing when the cost is 0). A destination is
//    done with a transfer when its last packet is delivered and processed;
//    the transfer completes when every destination is done.
//  * Switch ranks (schedule.hpp: in-network reduction and multicast, NVLink
//    SHARP / InfiniBand SHARP) run on hidden routers. A switch has no
//    ports: its router's links are its stages. It reduces with a compute
//    unit of its own that serves its reducing input packets first come,
//    first served at switch_reduce_Bps input bytes per second (0: no cost);
//    a copy into it costs nothing. Its output is an ordinary (usually
//    multicast) transfer that depends on the reductions: one injection,
//    copied where the routes part. A message into or out of a switch rank
//    must fit its buffer, switch_buffer_bytes (0: no limit; a larger one is
//    refused up front: cut the data into more blocks). Closed form: k GPUs,
//    each with a link of bandwidth B and latency l to a switch, send S bytes
//    each as one packet; the switch reduces them at rate R and multicasts
//    the result back (cut-through, no ports):
//        T = 2 (alpha + l + S/B) + k S / R.
//    Cut into n packets of s = S/n bytes, the reduction pipelines with the
//    arrivals: the last packet is reduced at
//        alpha + l + s/B + k s/R + (n - 1) max(s/B, k s/R)
//    and the multicast back adds alpha + l + S/B.
//  * Dependencies: see Dependencies below (default: wait for completion).
//  * Multicast: one stream follows the union of the routes (a tree built as
//    a prefix tree of the stage sequences); each packet crosses each stage of
//    the tree once and is copied where the routes part.
//  * Results: makespan = latest completion; a rank finishes when the last
//    packet it sent leaves its first stage and the last transfer it receives
//    is done. busy time of a stage = sum of w/bw over the packets it sent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"
#include "wafercoll/topology/topology.hpp"
#include "wafercoll/units.hpp"

namespace wafercoll {

enum class Switching : std::uint8_t { cut_through = 0, store_and_forward = 1 };

const char* to_string(Switching s);
Switching switching_from_string(const std::string& name);

// How the simulator honours a dependency d of a transfer t.
//  * complete: t starts when d has completed (every destination done,
//    reductions included). The program-order reading of a schedule (MPI).
//  * dataflow: the reading of a spatial dataflow machine (the wafer's PEs
//    add and forward wavelets as they arrive, routers stall streams until
//    their configuration lets them in):
//     - d is a *data* dependency when src(t) is a destination of d: t starts
//       once d's packets have all been delivered at src(t); reducing or
//       storing them there overlaps with t;
//     - otherwise, for every destination x that t and d share, t travels
//       freely but its packets enter the last stage into x only after d's
//       last packet has entered its last stage into x (writes stay ordered);
//     - any other dependency waits for d's completion.
enum class Dependencies : std::uint8_t { complete = 0, dataflow = 1 };

const char* to_string(Dependencies d);
Dependencies dependencies_from_string(const std::string& name);

struct NetworkModel {
  BytesPerSecond bandwidth_Bps = 0.0;  // > 0: every link; 0: each link's own
  Seconds hop_latency_s = 0.0;         // added to every link's own latency
  Seconds alpha_s = 0.0;               // per-message start-up delay
  Bytes packet_bytes = 0;              // 0: a message is one packet
  Bytes flit_bytes = 0;                // 0: no flit rounding / head flit
  bool pad_packets = false;            // the last packet is sent full size
  Switching switching = Switching::cut_through;
  double gamma_s_per_byte = 0.0;       // reduction cost at the destination
  double copy_s_per_byte = 0.0;        // cost of storing a copied byte there
  Dependencies dependencies = Dependencies::complete;
  std::int32_t ports = 0;              // injection and ejection channels; 0: none
  BytesPerSecond port_bandwidth_Bps = 0.0;
  Seconds port_latency_s = 0.0;
  // Time an ejection channel needs, once free, before it takes a transfer
  // that follows another one into it (switching to a new incoming stream:
  // the wafer's router reconfiguration between senders). The first transfer
  // into a channel is set up before the start. Needs ports.
  Seconds switch_overhead_s = 0.0;
  double clock_Hz = 0.0;               // 0: no clock (no cycle counts)
  // Switch ranks (in-network reduction, see the header comment): input
  // bytes a switch reduces per second (0: as fast as they arrive) and the
  // largest message into or out of one (0: no limit).
  BytesPerSecond switch_reduce_Bps = 0.0;
  Bytes switch_buffer_bytes = 0;
  // Equal-cost multipath per flow. Off: every message follows the topology's
  // own route. On: a message's copy to one destination (a flow) follows a
  // shortest path in hops that it chooses hop by hop: at node u, among the
  // out-links to nodes one hop nearer its destination, in increasing link
  // id, it takes number splitmix64(transfer * 2^32 + destination slot) ^
  // splitmix64(u), modulo their count (splitmix64: Steele, Lea and Flood,
  // "Fast splittable pseudorandom number generators", OOPSLA 2014). The
  // choice is a pure function of the flow and the node, so one flow stays on
  // one path and runs are reproducible.
  bool ecmp = false;
  // Packet spraying. On: each packet of a transfer to one destination
  // follows a shortest path in hops of its own. At a node where several
  // out-links lead one hop nearer the destination, the packets that reach
  // it are dealt to those links by smooth weighted round robin (weights in
  // proportion to the links' bandwidths, routes.cpp), the sequence rotated
  // by splitmix64(flow) ^ splitmix64(node) as for ECMP; packet k of the
  // transfer takes entry (k / stride + rotation) mod (its length), stride
  // being the product of the sequence lengths of the choices it made
  // before. So a transfer of n packets over c equal links puts floor(n / c)
  // or ceil(n / c) packets on each, and a source whose first links part
  // sends on all of them at once. Transfers with several destinations
  // follow the topology's routes. Needs dependencies "complete", no
  // switch_overhead_s, and not ecmp.
  bool spray = false;

  // Throws std::invalid_argument naming the field and the accepted range.
  void validate() const;
};

// The event queue: a radix heap of events, or events grouped by time (a
// heap of distinct times). Both process events in the same order, so the
// results are identical; grouping is much faster when many events share a
// time (a machine whose costs are whole clock cycles, links of one speed and
// latency, streams in lockstep) and can be slower when almost every event has
// a time of its own. automatic: grouped; after 65,536 pushes, unless 7 in 8
// pushes joined a time already queued, 65,536 pushes are timed with each
// queue and the faster is kept (the heap only when 15 % faster); checked
// again after 4x as many pushes, with or without a clock (event_queue.hpp).
enum class EventQueueKind : std::uint8_t { automatic = 0, heap = 1, buckets = 2 };

struct SimOptions {
  std::vector<NodeId> placement;   // rank -> endpoint; empty = identity
  bool record_transfers = false;   // per-transfer ready / finish times
  bool record_timeline = false;    // busy-link step function
  std::int64_t max_events = std::int64_t{1} << 32;  // refuse larger runs up front
  EventQueueKind queue = EventQueueKind::automatic;
  bool record_trace = false;       // every packet-stage service (small runs only)
};

struct SimResult {
  Seconds time_s = 0.0;
  std::vector<Seconds> rank_finish_s;    // per rank
  std::vector<Seconds> link_busy_s;      // per topology link
  std::vector<Bytes> link_bytes;         // per topology link (payload bytes)
  std::vector<Seconds> injection_busy_s; // per endpoint, summed over its channels
  std::vector<Seconds> ejection_busy_s;
  std::vector<Seconds> compute_busy_s;   // per endpoint (reductions)
  std::vector<Seconds> switch_busy_s;    // per rank: a switch rank's reductions
                                         // (empty without switch ranks)
  std::int64_t events = 0;               // packet-stage services
  std::int64_t packets = 0;              // packets injected
  // record_transfers:
  std::vector<Seconds> transfer_ready_s;
  std::vector<Seconds> transfer_finish_s;
  // With a task graph: per task, when it started and completed.
  std::vector<Seconds> task_start_s;
  std::vector<Seconds> task_finish_s;
  // record_timeline: from timeline_t[i] to timeline_t[i+1], timeline_busy[i]
  // links are busy (the last entry is 0 at the makespan).
  std::vector<Seconds> timeline_t;
  std::vector<std::int32_t> timeline_busy;
  // record_trace: one entry per packet-stage service, in processing order.
  // Stage: a link id in [0, L); L + e*K + c is injection channel c of
  // endpoint e; L + E*K + e*K + c is its ejection channel c.
  std::vector<TransferId> trace_transfer;
  std::vector<std::int64_t> trace_packet;
  std::vector<std::int64_t> trace_stage;
  std::vector<Seconds> trace_start_s;
  std::vector<Seconds> trace_finish_s;
};

// Number of packet-stage services the simulation will perform (what
// max_events bounds); validates the inputs like simulate().
// Work beside the schedule's transfers, for a workload: tasks that occupy a
// rank's compute unit for a fixed time (compute) or take no time at all
// (gates, which join dependencies), and dependency edges between transfers
// and tasks. Task k has id T + k, after the T transfers; an edge
// (before[i], after[i]) holds after[i] back until before[i] has completed.
// A task starts when its last predecessor has completed (at 0 without
// any). A compute task is served by its rank's compute unit first come,
// first served by start time (ties by task id), the same unit that
// performs reductions at gamma_s_per_byte; a gate completes when it
// starts. Needs dependencies == complete.
struct TaskGraph {
  std::vector<RankId> rank;         // per task: compute unit's rank; -1: a gate
  std::vector<Seconds> duration_s;  // per task (gates: 0)
  std::vector<std::int64_t> before, after;  // edges over ids in [0, T + K)

  std::int64_t num_tasks() const { return static_cast<std::int64_t>(rank.size()); }
};

std::int64_t simulation_events(const Schedule& s, const Topology& topo,
                               const NetworkModel& net, const SimOptions& opt = {});

SimResult simulate(const Schedule& s, const Topology& topo, const NetworkModel& net,
                   const SimOptions& opt = {});

// The schedule and a task graph in one run (one event loop: the transfers
// of concurrent collectives contend for links, compute tasks and
// reductions for compute units). Fills task_start_s and task_finish_s.
// Throws std::invalid_argument for malformed tasks or edges, a cycle, or
// dataflow dependencies.
SimResult simulate(const Schedule& s, const Topology& topo, const NetworkModel& net,
                   const SimOptions& opt, const TaskGraph& tasks);

}  // namespace wafercoll
