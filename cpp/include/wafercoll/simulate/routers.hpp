// Input-queued routers with credit-based flow control: the packet-level
// model behind `simulate(..., engine="routers")`.
//
// The default simulator serves each link's packets first come, first served,
// from unlimited queues. Here every link ends in a finite input buffer at its
// downstream router, as in a cycle-level network simulator such as BookSim:
//
// - A packet waits at the router it has reached, in a queue per (input port,
//   output link): one input port per link into the router, plus the local
//   injection port of the router's endpoint.
// - Link l admits a packet only while fewer than `buffer_packets` packets
//   hold one of its credits. A packet holds l's credit from its admission to l
//   until it is admitted to its next link (or delivered): its place in l's
//   downstream input buffer. A full buffer stalls the senders behind it
//   (back-pressure), and a packet held up on its next link keeps the credit
//   from the flows behind it.
// - Among the input ports with a packet waiting for l, l admits them in turn
//   (round robin, one packet per turn), as a router's switch allocator
//   (BookSim's islip) takes turns among its inputs.
// - An admitted packet is sent when l is free, in admission order; its
//   timing per link is that of the default simulator (cut-through: whole
//   flits on the wire, the head flit and the link's latency gate the next
//   link, which ends no earlier than the tail arrives).
//
// Without contention the two simulators give the same times. Unicast
// transfers only, dependencies "complete" (a transfer starts alpha after all
// its dependencies have finished).
//
// Network interfaces (RouterFlows::interfaces = K > 0) put a sending
// driver in front of the routers, as a node whose K interfaces are each a
// network endpoint of their own (the MCM artifact's `--radix`):
// - A ready transfer takes a free interface of its source node, or waits
//   (first come, first served) until one is free: the lowest-numbered one,
//   or (python_set_order) the first in the iteration order of a CPython
//   3.11 set that holds the free interfaces' numbers, taken out and put
//   back as they are taken and freed (how a Python driver such as the MCM
//   artifact's keeps them).
// - An interface's packets, its transfers one after another in the order
//   it took them, cross its channel into the router (channel_s_per_byte
//   each) while the router's input buffer of the interface holds fewer than
//   interface_buffer_packets of them; there each is an injection port of
//   its own at every link out of the node, so the link takes turns among
//   the interfaces too.
// - An interface is free again once the transfer has handed over every
//   packet (one per handover_s from when it took the interface) and at most
//   interface_queue_packets of the interface's packets have still to cross
//   its channel (the queues between the driver and the channel).
// - Issue steps order a node's transfers: a transfer takes an interface
//   only once every transfer of its node in an earlier step has one (or,
//   for a transfer marked strict, has freed it again).
// - A reduction (reduces[t]) is complete once its last packet has arrived
//   and its destination node has aggregated it, aggregate_s_per_byte per
//   byte, one reduction at a time per node in the order they arrived.
// Without interfaces every node has one injection port per link and a
// ready transfer joins it at once.
#pragma once

#include <cstdint>
#include <vector>

namespace wafercoll {

// The links and their costs. Nodes are numbered 0 .. num_nodes - 1.
struct RouterNetwork {
  std::vector<std::int32_t> link_src, link_dst;  // per link
  std::vector<double> inv_bw;                    // seconds per byte, per link
  std::vector<double> latency_s;                 // per link (link latency + hop latency)
  std::int64_t num_nodes = 0;
  std::int64_t flit_bytes = 0;      // 0: no flits (the whole packet is the head)
  std::int64_t buffer_packets = 1;  // credits per link, >= 1
  bool store_and_forward = false;   // a packet moves on once it has fully arrived
  // The event queue merges each link's and each interface's sorted run of
  // events into one small heap; false keeps every event in the heap (the
  // same order of events, slower: for tests of the merge).
  bool merge_event_runs = true;
};

// The transfers: one source, one destination, a route of links. Each is cut
// into packets of packet_bytes as the default engine cuts it (packets.hpp).
struct RouterFlows {
  std::vector<std::int64_t> bytes;       // per transfer, >= 0
  std::int64_t packet_bytes = 0;         // 0: one packet per transfer
  bool pad_packets = false;              // every packet packet_bytes on the wire
  std::vector<std::int64_t> route_off;   // size T + 1
  std::vector<std::int32_t> route_links;
  std::vector<std::int64_t> dep_off;     // size T + 1
  std::vector<std::int32_t> deps;
  double alpha_s = 0.0;
  // Network interfaces (see above); 0: none.
  std::int32_t interfaces = 0;
  std::int64_t interface_queue_packets = 0;  // >= 0
  double handover_s = 0.0;                   // per packet, >= 0
  double channel_s_per_byte = 0.0;           // >= 0
  std::int64_t interface_buffer_packets = std::int64_t{1} << 40;  // >= 1
  bool python_set_order = false;
  double aggregate_s_per_byte = 0.0;     // >= 0
  std::vector<std::uint8_t> reduces;     // per transfer, or empty (none)
  std::vector<std::int64_t> issue_step;      // per transfer, or empty (all 0)
  std::vector<std::uint8_t> issue_strict;    // per transfer, or empty (none)
};

struct RouterResult {
  std::vector<double> ready_s, finish_s;  // per transfer
  std::vector<double> link_busy_s;        // per link
  std::vector<std::int64_t> link_bytes;   // per link
  std::int64_t events = 0;                // packet admissions (packets x hops)
  std::int64_t packets = 0;
};

// Runs the model. Throws TooManyEvents (errors.hpp) for a run of more than
// max_events packet admissions, before it starts; std::invalid_argument for
// malformed input (sizes, links out of range, a route that is not a path, a
// dependency cycle); and std::runtime_error when the network deadlocks
// (every buffer on a cycle of routes full), naming buffer_packets.
RouterResult simulate_routers(const RouterFlows& flows, const RouterNetwork& net,
                              std::int64_t max_events);

}  // namespace wafercoll
