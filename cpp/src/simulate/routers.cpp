// Input-queued routers with credit-based flow control (see routers.hpp).
//
// One event loop over three kinds of events, ordered by time and then by
// the order they were created (so a run is deterministic):
// - a transfer's packets reach its source's injection port (alpha after its
//   dependencies finished);
// - a packet's head reaches the router at the end of a link, where it joins
//   the queue of (that link, its next link);
// - a packet is delivered, which frees its credit on the last link.
// After each, the links that may admit a packet now (a packet joined their
// queues, or one of their credits came back) admit in turn. A driver
// (routers.hpp) adds three more: a packet crosses an interface's channel
// into the router, an interface is free again, a reduction has been
// aggregated; and a ready transfer waits for an interface instead of
// joining its injection port at once.
#include "wafercoll/simulate/routers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/packets.hpp"
#include "wafercoll/simulate/pyset.hpp"
#include "router_events.hpp"

namespace wafercoll {

namespace {

// Packets k .. k_end - 1 of transfer t, waiting at a router for the link at
// position hop of t's route (several packets only at the injection port).
struct Waiting {
  std::int64_t next = -1;  // next entry of the same queue, -1 at its end
  std::int64_t k = 0, k_end = 0;
  double time = 0.0, head = 0.0;  // when its service may start; its head flit
  std::int32_t t = 0, hop = 0;
};

struct Fifo {
  std::int64_t first = -1, last = -1;
};

// Puts v into a slot of pool, a freed one (from free_slots) if any; returns it.
template <typename T>
std::int64_t place(std::vector<T>& pool, std::vector<std::int64_t>& free_slots, const T& v) {
  if (free_slots.empty()) {
    pool.push_back(v);
    return static_cast<std::int64_t>(pool.size()) - 1;
  }
  const std::int64_t i = free_slots.back();
  free_slots.pop_back();
  pool[static_cast<std::size_t>(i)] = v;
  return i;
}

// The events, their kinds and the event queue (router_events.hpp).
using namespace router_events;

class RouterLoop {
 public:
  RouterLoop(const RouterFlows& f, const RouterNetwork& n) : f_(f), n_(n) {}
  RouterResult run(std::int64_t max_events);

 private:
  void check() const;
  void cut(std::int64_t max_events);
  void build_ports();
  void build_interfaces();
  void push(double time, double head, Kind kind, std::int32_t t, std::int64_t k,
            std::int32_t x, std::int64_t lane = -1);
  std::int64_t port_of(std::int32_t l, std::int32_t from) const;
  void enqueue(std::int32_t l, std::int64_t port, const Waiting& w);
  void admit(std::int32_t l, double now);
  void admit_from(std::int32_t l, double now);
  void send(std::int32_t l, const Waiting& w, std::int64_t k, double now);
  void delivered(const Ev& e);
  void finished(std::int32_t t, double now);
  void injected(std::int32_t t, double now);
  bool eligible(std::int32_t t) const;
  void assign_free(std::int32_t v, double now);
  void take(std::int32_t t, std::int32_t v, std::int32_t i, double now);
  void feed_later(std::int32_t x, double now);
  void feed(std::int32_t x, double now);
  std::int32_t present(std::int32_t x, std::int32_t t, std::int64_t k, double now);
  void presented_all(std::int32_t x, double now);
  void drained(std::int32_t x, double now);
  void release(std::int32_t x, std::int32_t t, double now);
  void advance(std::int32_t v, bool strict);
  std::int32_t free_interface(std::int32_t v) const;

  const RouterFlows& f_;
  const RouterNetwork& n_;
  RouterResult res_;
  EventHeap events_;
  std::uint64_t seq_ = 0;
  // Input ports of link l: the links into its source node, then the P_
  // injection ports (one per interface, or one).
  std::vector<std::int64_t> in_off_;
  std::vector<std::int32_t> in_links_;
  std::int64_t P_ = 1;
  std::vector<Fifo> queues_;  // link l's port p at in_off_[l] + l * P_ + p
  std::vector<Waiting> pool_;
  std::vector<std::int64_t> free_;  // reusable pool entries
  std::vector<std::int64_t> waiting_, used_;
  std::vector<std::int32_t> turn_;
  std::vector<std::int32_t> again_;  // links whose credits came back meanwhile
  std::vector<double> free_at_;
  std::vector<std::int64_t> packets_, last_bytes_;  // per transfer
  std::vector<std::int64_t> left_, pending_, succ_off_;
  std::vector<std::int32_t> succ_;
  std::int64_t done_ = 0;
  // Interfaces (f_.interfaces = K > 0); interface x = node * K + i.
  std::int32_t K_ = 0;
  std::vector<std::int32_t> holder_;     // per interface: the transfer holding it, or -1
  std::vector<std::int64_t> backlog_;    // per interface: packets not yet across its channel
  std::vector<double> handed_;           // per interface: its transfer's packets all handed over
  std::vector<std::uint8_t> releasing_;  // per interface: a release event is pending
  std::vector<std::int32_t> sending_;    // per interface: the transfer crossing its channel, or -1
  std::vector<std::deque<std::int32_t>> behind_;  // per interface: transfers behind it
  std::vector<std::int64_t> fed_;        // per interface: packets of sending_ across the channel
  std::vector<std::int64_t> in_router_;  // per interface: its packets in the router's input buffer
  std::vector<double> channel_free_;     // per interface: when its channel takes the next packet
  std::vector<std::uint8_t> feeding_;    // per interface: a feed event is pending
  // In the router an interface's packets leave in the order they came: only
  // those of its oldest transfer with packets left wait at their link, the
  // others are parked behind them.
  std::vector<std::int32_t> presenting_;  // per interface: that transfer, or -1
  std::vector<std::int64_t> admitted_;    // per interface: its packets admitted so far
  std::vector<std::deque<std::pair<std::int32_t, std::int64_t>>> parked_;  // (transfer, packet)
  // Issue groups: a node's transfers of one step, numbered by (node, step).
  std::vector<std::int32_t> group_;       // per transfer (-1: no route, no interface)
  std::vector<std::int64_t> node_group_;  // per node + 1: its first group
  std::vector<std::int64_t> member_off_;  // per group + 1
  std::vector<std::int32_t> members_;
  std::vector<std::int64_t> left_assign_, left_issue_;  // per group
  std::vector<std::int64_t> open_assign_, open_issue_;  // per node: first group not done
  std::vector<std::uint8_t> state_;  // per transfer: 1 ready, 2 queued or sent
  std::vector<std::deque<std::int32_t>> ready_;  // per node: waiting for an interface
  std::vector<PySetSlots> free_set_;             // per node, with python_set_order
  std::vector<double> compute_free_;             // per node: its aggregations' end
};

void RouterLoop::check() const {
  const auto T = static_cast<std::int64_t>(f_.bytes.size());
  const auto L = static_cast<std::int64_t>(n_.link_src.size());
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  need(n_.link_dst.size() == n_.link_src.size() && n_.inv_bw.size() == n_.link_src.size() &&
           n_.latency_s.size() == n_.link_src.size(),
       "link arrays must have one entry per link");
  need(n_.buffer_packets >= 1, "buffer_packets must be >= 1");
  need(n_.flit_bytes >= 0, "flit_bytes must be >= 0");
  need(f_.packet_bytes >= 0, "packet_bytes must be >= 0");
  need(f_.route_off.size() == f_.bytes.size() + 1 && f_.dep_off.size() == f_.bytes.size() + 1,
       "transfer arrays must have one entry per transfer");
  need(T < (std::int64_t{1} << 31) && L < (std::int64_t{1} << 31), "too many transfers or links");
  need(f_.route_off.back() == static_cast<std::int64_t>(f_.route_links.size()) &&
           f_.dep_off.back() == static_cast<std::int64_t>(f_.deps.size()),
       "offsets must end at the list sizes");
  // Finite, non-negative costs keep every event time finite and >= 0, as the
  // event heap's keys need.
  need(f_.alpha_s >= 0.0 && std::isfinite(f_.alpha_s), "alpha_s must be finite and >= 0");
  auto cost = [](double c) { return c >= 0.0 && std::isfinite(c); };
  for (std::int64_t l = 0; l < L; ++l)
    need(n_.link_src[l] >= 0 && n_.link_src[l] < n_.num_nodes && n_.link_dst[l] >= 0 &&
             n_.link_dst[l] < n_.num_nodes && cost(n_.inv_bw[l]) && cost(n_.latency_s[l]),
         "link " + std::to_string(l) + " has a node out of range or a negative or infinite cost");
  for (std::int64_t t = 0; t < T; ++t) {
    need(f_.bytes[t] >= 0, "transfer " + std::to_string(t) + " has a negative size");
    need(f_.route_off[t] <= f_.route_off[t + 1] && f_.dep_off[t] <= f_.dep_off[t + 1],
         "offsets must not decrease");
    for (std::int64_t i = f_.route_off[t]; i < f_.route_off[t + 1]; ++i) {
      const std::int32_t l = f_.route_links[i];
      need(l >= 0 && l < L, "transfer " + std::to_string(t) + "'s route has a link out of range");
      need(i == f_.route_off[t] || n_.link_src[l] == n_.link_dst[f_.route_links[i - 1]],
           "transfer " + std::to_string(t) + "'s route is not a path");
    }
    for (std::int64_t i = f_.dep_off[t]; i < f_.dep_off[t + 1]; ++i)
      need(f_.deps[i] >= 0 && f_.deps[i] < T,
           "transfer " + std::to_string(t) + " depends on a transfer out of range");
  }
  need(f_.interfaces >= 0 && f_.interfaces <= 1024, "interfaces must be in [0, 1024]");
  need(n_.num_nodes <= (std::int64_t{1} << 31) / (f_.interfaces + 1), "too many interfaces");
  need(f_.interface_queue_packets >= 0, "interface_queue_packets must be >= 0");
  need(f_.handover_s >= 0.0 && std::isfinite(f_.handover_s), "handover_s must be finite and >= 0");
  need(f_.channel_s_per_byte >= 0.0 && std::isfinite(f_.channel_s_per_byte),
       "channel_s_per_byte must be finite and >= 0");
  need(f_.interface_buffer_packets >= 1, "interface_buffer_packets must be >= 1");
  need(f_.aggregate_s_per_byte >= 0.0 && std::isfinite(f_.aggregate_s_per_byte),
       "aggregate_s_per_byte must be finite and >= 0");
  need(f_.reduces.empty() || static_cast<std::int64_t>(f_.reduces.size()) == T,
       "reduces must have one entry per transfer");
  need(f_.issue_step.empty() || static_cast<std::int64_t>(f_.issue_step.size()) == T,
       "issue_step must have one entry per transfer");
  need(f_.issue_strict.empty() || static_cast<std::int64_t>(f_.issue_strict.size()) == T,
       "issue_strict must have one entry per transfer");
}

// Each transfer's packets and last packet's size; refuses a run of more
// than max_events packet admissions before the run's state is allocated.
void RouterLoop::cut(std::int64_t max_events) {
  const auto T = static_cast<std::int64_t>(f_.bytes.size());
  const std::int64_t M = f_.packet_bytes;
  packets_.resize(static_cast<std::size_t>(T));
  last_bytes_.resize(static_cast<std::size_t>(T));
  std::int64_t events = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t n = packet_count(f_.bytes[t], M);
    packets_[t] = n;
    last_bytes_[t] = last_packet_bytes(f_.bytes[t], M, n, f_.pad_packets);
    res_.packets += n;
    const std::int64_t hops = f_.route_off[t + 1] - f_.route_off[t];
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    events = hops > 0 && n > (kMax - events) / hops ? kMax : events + n * hops;  // saturates
  }
  if (events > max_events) throw TooManyEvents(events, max_events);
}

void RouterLoop::build_ports() {
  const auto L = static_cast<std::int64_t>(n_.link_src.size());
  std::vector<std::int64_t> into(static_cast<std::size_t>(n_.num_nodes) + 1, 0);
  for (std::int64_t l = 0; l < L; ++l) ++into[n_.link_dst[l] + 1];
  for (std::int64_t v = 0; v < n_.num_nodes; ++v) into[v + 1] += into[v];
  std::vector<std::int32_t> by_node(static_cast<std::size_t>(L));
  std::vector<std::int64_t> fill(into.begin(), into.end() - 1);
  for (std::int64_t l = 0; l < L; ++l) by_node[fill[n_.link_dst[l]]++] = static_cast<std::int32_t>(l);
  in_off_.assign(static_cast<std::size_t>(L) + 1, 0);
  for (std::int64_t l = 0; l < L; ++l)
    in_off_[l + 1] = in_off_[l] + into[n_.link_src[l] + 1] - into[n_.link_src[l]];
  in_links_.resize(static_cast<std::size_t>(in_off_[L]));
  for (std::int64_t l = 0; l < L; ++l) {
    const std::int32_t v = n_.link_src[l];
    std::copy(by_node.begin() + into[v], by_node.begin() + into[v + 1],
              in_links_.begin() + in_off_[l]);
  }
  P_ = std::max<std::int64_t>(f_.interfaces, 1);
  queues_.assign(static_cast<std::size_t>(in_off_[L] + L * P_), Fifo{});
}

// Each node's transfers grouped by issue step, and the interfaces' state.
void RouterLoop::build_interfaces() {
  K_ = f_.interfaces;
  if (K_ == 0) return;
  const auto T = static_cast<std::int64_t>(f_.bytes.size());
  const std::int64_t N = n_.num_nodes;
  holder_.assign(static_cast<std::size_t>(N * K_), -1);
  backlog_.assign(static_cast<std::size_t>(N * K_), 0);
  handed_.assign(static_cast<std::size_t>(N * K_), 0.0);
  releasing_.assign(static_cast<std::size_t>(N * K_), 0);
  sending_.assign(static_cast<std::size_t>(N * K_), -1);
  behind_.assign(static_cast<std::size_t>(N * K_), {});
  fed_.assign(static_cast<std::size_t>(N * K_), 0);
  in_router_.assign(static_cast<std::size_t>(N * K_), 0);
  channel_free_.assign(static_cast<std::size_t>(N * K_), 0.0);
  feeding_.assign(static_cast<std::size_t>(N * K_), 0);
  presenting_.assign(static_cast<std::size_t>(N * K_), -1);
  admitted_.assign(static_cast<std::size_t>(N * K_), 0);
  parked_.assign(static_cast<std::size_t>(N * K_), {});
  auto node = [&](std::int64_t t) { return n_.link_src[f_.route_links[f_.route_off[t]]]; };
  auto step = [&](std::int64_t t) { return f_.issue_step.empty() ? 0 : f_.issue_step[t]; };
  members_.clear();
  for (std::int64_t t = 0; t < T; ++t)
    if (f_.route_off[t] < f_.route_off[t + 1]) members_.push_back(static_cast<std::int32_t>(t));
  std::stable_sort(members_.begin(), members_.end(), [&](std::int32_t a, std::int32_t b) {
    const auto na = node(a), nb = node(b);
    return na != nb ? na < nb : step(a) < step(b);
  });
  group_.assign(static_cast<std::size_t>(T), -1);
  node_group_.assign(static_cast<std::size_t>(N) + 1, 0);
  member_off_.assign(1, 0);
  for (std::size_t j = 0; j < members_.size(); ++j) {
    const std::int32_t t = members_[j];
    const bool starts = j == 0 || node(t) != node(members_[j - 1]) ||
                        step(t) != step(members_[j - 1]);  // a new (node, step) group
    if (starts) {
      if (j > 0) member_off_.push_back(static_cast<std::int64_t>(j));
      ++node_group_[node(t) + 1];
    }
    group_[t] = static_cast<std::int32_t>(member_off_.size()) - 1;
  }
  if (!members_.empty()) member_off_.push_back(static_cast<std::int64_t>(members_.size()));
  for (std::int64_t v = 0; v < N; ++v) node_group_[v + 1] += node_group_[v];
  const auto G = static_cast<std::int64_t>(member_off_.size()) - 1;
  left_assign_.resize(static_cast<std::size_t>(G));
  for (std::int64_t g = 0; g < G; ++g) left_assign_[g] = member_off_[g + 1] - member_off_[g];
  left_issue_ = left_assign_;
  open_assign_.assign(node_group_.begin(), node_group_.end() - 1);
  open_issue_ = open_assign_;
  state_.assign(static_cast<std::size_t>(T), 0);
  ready_.assign(static_cast<std::size_t>(N), {});
  if (f_.python_set_order) free_set_.assign(static_cast<std::size_t>(N), PySetSlots(K_));
}

// Whether t may take an interface: every transfer of its node in an earlier
// step has one (strict: has freed it again).
bool RouterLoop::eligible(std::int32_t t) const {
  const std::int32_t v = n_.link_src[f_.route_links[f_.route_off[t]]];
  const bool strict = !f_.issue_strict.empty() && f_.issue_strict[t];
  return group_[t] <= (strict ? open_issue_[v] : open_assign_[v]);
}

// t is ready (its dependencies finished, alpha passed): it waits for an
// interface of its node, once its step's turn has come.
void RouterLoop::injected(std::int32_t t, double now) {
  const std::int32_t v = n_.link_src[f_.route_links[f_.route_off[t]]];
  state_[t] = 1;
  if (eligible(t)) {
    state_[t] = 2;
    ready_[v].push_back(t);
  }
  assign_free(v, now);
}

// The free interface a transfer of node v takes, or -1.
std::int32_t RouterLoop::free_interface(std::int32_t v) const {
  if (f_.python_set_order) return free_set_[v].first();
  std::int32_t i = 0;
  while (i < K_ && holder_[static_cast<std::int64_t>(v) * K_ + i] >= 0) ++i;
  return i == K_ ? -1 : i;
}

// The waiting transfers of node v take its free interfaces.
void RouterLoop::assign_free(std::int32_t v, double now) {
  while (!ready_[v].empty()) {
    const std::int32_t i = free_interface(v);
    if (i < 0) return;
    const std::int32_t t = ready_[v].front();
    ready_[v].pop_front();
    if (f_.python_set_order) free_set_[v].remove(i);
    take(t, v, i, now);
  }
}

// t takes interface i of node v: behind the interface's earlier transfers,
// its packets cross the interface's channel into the router.
void RouterLoop::take(std::int32_t t, std::int32_t v, std::int32_t i, double now) {
  const std::int64_t x = static_cast<std::int64_t>(v) * K_ + i;
  holder_[x] = t;
  handed_[x] = now + static_cast<double>(packets_[t]) * f_.handover_s;
  backlog_[x] += packets_[t];
  if (sending_[x] < 0) {
    sending_[x] = t;
    fed_[x] = 0;
  } else {
    behind_[x].push_back(t);
  }
  drained(static_cast<std::int32_t>(x), now);
  const std::int32_t g = group_[t];
  if (--left_assign_[g] == 0) advance(v, false);
  feed_later(static_cast<std::int32_t>(x), now);
}

// Interface x's channel takes its next packet when it is free, if there is
// one and the router's input buffer has room.
void RouterLoop::feed_later(std::int32_t x, double now) {
  if (feeding_[x] || sending_[x] < 0 || in_router_[x] >= f_.interface_buffer_packets) return;
  feeding_[x] = 1;
  push(std::max(now, channel_free_[x]), 0.0, kFeed, sending_[x], 0, x,
       static_cast<std::int64_t>(n_.link_src.size()) + x);
}

// The next packet of interface x crosses its channel: it waits in the
// router for its first link, at the interface's port.
void RouterLoop::feed(std::int32_t x, double now) {
  feeding_[x] = 0;
  const std::int32_t t = sending_[x];
  const std::int64_t k = fed_[x]++;
  if (presenting_[x] < 0) {
    presenting_[x] = t;
    admitted_[x] = 0;
  }
  std::int32_t l = -1;
  if (t == presenting_[x])
    l = present(x, t, k, now);
  else
    parked_[x].emplace_back(t, k);
  ++in_router_[x];
  --backlog_[x];
  const std::int64_t m = k == packets_[t] - 1 ? last_bytes_[t] : f_.packet_bytes;
  channel_free_[x] = now + static_cast<double>(wire_bytes(m, n_.flit_bytes)) * f_.channel_s_per_byte;
  if (fed_[x] == packets_[t]) {
    sending_[x] = -1;
    if (!behind_[x].empty()) {
      sending_[x] = behind_[x].front();
      behind_[x].pop_front();
      fed_[x] = 0;
    }
  }
  drained(x, now);
  feed_later(x, now);
  if (l >= 0) admit_from(l, now);
}

// Packet k of t, which came through interface x, waits at its first link;
// returns the link.
std::int32_t RouterLoop::present(std::int32_t x, std::int32_t t, std::int64_t k, double now) {
  const std::int32_t l = f_.route_links[f_.route_off[t]];
  Waiting w;
  w.t = t;
  w.time = now;
  w.head = now;
  w.k = k;
  w.k_end = k + 1;
  enqueue(l, port_of(l, -1 - static_cast<std::int32_t>(x % K_)), w);
  return l;
}

// Every packet of interface x's oldest transfer has left for its link: the
// packets parked behind it come forward, the next transfer's first.
void RouterLoop::presented_all(std::int32_t x, double now) {
  presenting_[x] = -1;
  auto& q = parked_[x];
  while (!q.empty()) {
    const auto [u, k] = q.front();
    if (presenting_[x] < 0) {
      presenting_[x] = u;
      admitted_[x] = 0;
    }
    if (u != presenting_[x]) break;
    q.pop_front();
    again_.push_back(present(x, u, k, now));
  }
  if (presenting_[x] < 0 && sending_[x] >= 0) {  // its next packets are still to come
    presenting_[x] = sending_[x];
    admitted_[x] = 0;
  }
}

// Interface x may be freed once its transfer has handed over every packet
// and few enough of its packets have still to cross its channel.
void RouterLoop::drained(std::int32_t x, double now) {
  if (holder_[x] < 0 || releasing_[x] || backlog_[x] > f_.interface_queue_packets) return;
  releasing_[x] = 1;
  push(std::max(now, handed_[x]), 0.0, kRelease, holder_[x], 0, x);
}

void RouterLoop::release(std::int32_t x, std::int32_t t, double now) {
  const std::int32_t v = x / K_;
  holder_[x] = -1;
  releasing_[x] = 0;
  if (f_.python_set_order) free_set_[v].add(x % K_);
  if (--left_issue_[group_[t]] == 0) advance(v, true);
  assign_free(v, now);
}

// Node v's first group with transfers left to assign (or to free their
// interface, strict) moves on; the transfers it passes may wait for an
// interface now.
void RouterLoop::advance(std::int32_t v, bool strict) {
  std::vector<std::int64_t>& open = strict ? open_issue_ : open_assign_;
  const std::vector<std::int64_t>& left = strict ? left_issue_ : left_assign_;
  const std::int64_t end = node_group_[v + 1];
  const std::int64_t old = open[v];
  while (open[v] < end && left[open[v]] == 0) ++open[v];
  for (std::int64_t h = old + 1; h <= std::min(open[v], end - 1); ++h)
    for (std::int64_t j = member_off_[h]; j < member_off_[h + 1]; ++j) {
      const std::int32_t t = members_[j];
      const bool st = !f_.issue_strict.empty() && f_.issue_strict[t];
      if (state_[t] == 1 && st == strict && eligible(t)) {
        state_[t] = 2;
        ready_[v].push_back(t);
      }
    }
}

// lane: the link that sent it, L + the interface that feeds it, or -1
// (EventHeap).
void RouterLoop::push(double time, double head, Kind kind, std::int32_t t, std::int64_t k,
                      std::int32_t x, std::int64_t lane) {
  events_.push(Ev{time, head, seq_++, k, t, x, kind}, n_.merge_event_runs ? lane : -1);
}

// Link `from`'s input port at link l (injection port -1 - from for from < 0).
std::int64_t RouterLoop::port_of(std::int32_t l, std::int32_t from) const {
  const std::int64_t deg = in_off_[l + 1] - in_off_[l];
  if (from < 0) return deg - 1 - from;
  const auto b = in_links_.begin() + in_off_[l];
  return std::lower_bound(b, b + deg, from) - b;  // in_links_ ascend per link
}

void RouterLoop::enqueue(std::int32_t l, std::int64_t port, const Waiting& w) {
  const std::int64_t i = place(pool_, free_, w);
  Fifo& q = queues_[in_off_[l] + l * P_ + port];
  if (q.last >= 0)
    pool_[q.last].next = i;
  else
    q.first = i;
  q.last = i;
  ++waiting_[l];
}

// Link l admits waiting packets while it has credits, its input ports in turn.
void RouterLoop::admit(std::int32_t l, double now) {
  const std::int64_t deg = in_off_[l + 1] - in_off_[l];
  const std::int64_t ports = deg + P_;
  const std::int64_t base = in_off_[l] + l * P_;
  while (waiting_[l] > 0 && used_[l] < n_.buffer_packets) {
    std::int64_t p = turn_[l];
    while (queues_[base + p].first < 0) p = p + 1 == ports ? 0 : p + 1;
    Fifo& q = queues_[base + p];
    const std::int64_t i = q.first;
    const Waiting w = pool_[i];
    const std::int64_t k = pool_[i].k++;
    if (pool_[i].k == w.k_end) {
      q.first = w.next;
      if (q.first < 0)
        q.last = -1;
      else  // the queue's next packet, in the cache by its turn
        __builtin_prefetch(&pool_[static_cast<std::size_t>(q.first)]);
      free_.push_back(i);
      --waiting_[l];
    }
    turn_[l] = static_cast<std::int32_t>(p + 1 == ports ? 0 : p + 1);
    ++used_[l];
    if (p < deg) {  // the credit it held on the link it came over returns
      const std::int32_t u = in_links_[in_off_[l] + p];
      --used_[u];
      if (waiting_[u] > 0) again_.push_back(u);
    } else if (K_ > 0) {  // room in the router's buffer for the interface's channel
      const std::int64_t x = static_cast<std::int64_t>(n_.link_src[l]) * K_ + (p - deg);
      --in_router_[x];
      if (++admitted_[x] == packets_[w.t]) presented_all(static_cast<std::int32_t>(x), now);
      feed_later(static_cast<std::int32_t>(x), now);
    }
    send(l, w, k, now);
  }
}

// Link l admits, then every link that got a credit back meanwhile (a
// worklist: the chain of returned credits can be as long as a route).
void RouterLoop::admit_from(std::int32_t l, double now) {
  admit(l, now);
  while (!again_.empty()) {
    const std::int32_t u = again_.back();
    again_.pop_back();
    admit(u, now);
  }
}

// Packet k of w's transfer goes onto link l (admitted at `now`).
void RouterLoop::send(std::int32_t l, const Waiting& w, std::int64_t k, double now) {
  const std::int32_t t = w.t;
  const std::int64_t m = k == packets_[t] - 1 ? last_bytes_[t] : f_.packet_bytes;
  const std::int64_t wire = wire_bytes(m, n_.flit_bytes);
  const double ib = n_.inv_bw[l], lat = n_.latency_s[l];
  const double start = std::max(std::max(now, w.time), free_at_[l]);
  const double head = std::max(std::max(w.head, free_at_[l]), now > w.time ? now : w.head);
  const double dur = static_cast<double>(wire) * ib;
  const double finish = start + dur;
  free_at_[l] = finish;
  res_.link_busy_s[l] += dur;
  res_.link_bytes[l] += m;
  if ((++res_.events & (kInterruptStride - 1)) == 0) poll_interrupt();
  const std::int32_t hop = w.hop + 1;
  if (f_.route_off[t] + hop == f_.route_off[t + 1]) {
    push(finish + lat, finish + lat, kDeliver, t, k, l, l);
    return;
  }
  if (n_.store_and_forward) {
    push(finish + lat, finish + lat, kArrive, t, k, hop, l);
    return;
  }
  const double ibn = n_.inv_bw[f_.route_links[f_.route_off[t] + hop]];
  double head_next = 0.0;
  const double a =
      cut_through_arrival(head, finish, wire, ib, ibn, lat, n_.flit_bytes, head_next);
  push(a, head_next, kArrive, t, k, hop, l);
}

void RouterLoop::delivered(const Ev& e) {
  --used_[e.x];
  if (waiting_[e.x] > 0) admit_from(e.x, e.time);
  if (--left_[e.t] != 0) return;
  if (f_.aggregate_s_per_byte > 0.0 && !f_.reduces.empty() && f_.reduces[e.t]) {
    // the destination aggregates it, after the reductions that came before
    double& free = compute_free_[n_.link_dst[e.x]];
    free = std::max(free, e.time) + static_cast<double>(f_.bytes[e.t]) * f_.aggregate_s_per_byte;
    push(free, free, kAggregated, e.t, 0, 0);
    return;
  }
  finished(e.t, e.time);
}

void RouterLoop::finished(std::int32_t t, double now) {
  res_.finish_s[t] = now;
  ++done_;
  for (std::int64_t i = succ_off_[t]; i < succ_off_[t + 1]; ++i) {
    const std::int32_t u = succ_[i];
    res_.ready_s[u] = std::max(res_.ready_s[u], now);
    if (--pending_[u] == 0) push(res_.ready_s[u] + f_.alpha_s, 0.0, kInject, u, 0, 0);
  }
}

RouterResult RouterLoop::run(std::int64_t max_events) {
  check();
  cut(max_events);
  build_ports();
  build_interfaces();
  const auto T = static_cast<std::int64_t>(f_.bytes.size());
  const auto L = static_cast<std::int64_t>(n_.link_src.size());
  events_ = EventHeap(n_.merge_event_runs ? L + n_.num_nodes * K_ : 0);
  res_.ready_s.assign(T, 0.0);
  res_.finish_s.assign(T, 0.0);
  res_.link_busy_s.assign(L, 0.0);
  res_.link_bytes.assign(L, 0);
  waiting_.assign(L, 0);
  used_.assign(L, 0);
  compute_free_.assign(static_cast<std::size_t>(n_.num_nodes), 0.0);
  turn_.assign(L, 0);
  free_at_.assign(L, 0.0);
  left_ = packets_;
  pending_.assign(T, 0);
  succ_off_.assign(T + 1, 0);
  for (std::int64_t t = 0; t < T; ++t) {
    pending_[t] = f_.dep_off[t + 1] - f_.dep_off[t];
    for (std::int64_t i = f_.dep_off[t]; i < f_.dep_off[t + 1]; ++i) ++succ_off_[f_.deps[i] + 1];
  }
  for (std::int64_t t = 0; t < T; ++t) succ_off_[t + 1] += succ_off_[t];
  succ_.resize(static_cast<std::size_t>(succ_off_[T]));
  std::vector<std::int64_t> fill(succ_off_.begin(), succ_off_.end() - 1);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = f_.dep_off[t]; i < f_.dep_off[t + 1]; ++i)
      succ_[fill[f_.deps[i]]++] = static_cast<std::int32_t>(t);
  for (std::int64_t t = 0; t < T; ++t)
    if (pending_[t] == 0) push(f_.alpha_s, 0.0, kInject, static_cast<std::int32_t>(t), 0, 0);
  while (!events_.empty()) {
    const Ev e = events_.pop();
    if (e.kind == kDeliver) {
      delivered(e);
      continue;
    }
    if (e.kind == kRelease) {
      release(e.x, e.t, e.time);
      continue;
    }
    if (e.kind == kFeed) {
      feed(e.x, e.time);
      continue;
    }
    if (e.kind == kAggregated) {
      finished(e.t, e.time);
      continue;
    }
    const std::int64_t at = f_.route_off[e.t] + (e.kind == kInject ? 0 : e.x);
    if (at == f_.route_off[e.t + 1]) {  // source and destination on one node
      finished(e.t, e.time);
      continue;
    }
    const std::int32_t l = f_.route_links[at];
    Waiting w;
    w.t = e.t;
    w.time = e.time;
    if (e.kind == kInject && K_ > 0) {
      injected(e.t, e.time);
      continue;
    }
    if (e.kind == kInject) {
      w.head = e.time;
      w.k_end = packets_[e.t];
      enqueue(l, port_of(l, -1), w);
    } else {
      w.head = e.head;
      w.k = e.k;
      w.k_end = e.k + 1;
      w.hop = e.x;
      enqueue(l, port_of(l, f_.route_links[at - 1]), w);
    }
    admit_from(l, e.time);
  }
  if (done_ < T) {
    bool held = false;
    for (std::int64_t l = 0; l < L; ++l) held = held || waiting_[l] > 0;
    if (held)
      throw std::runtime_error(
          "the network deadlocked: packets wait for links whose buffers stay full (routes "
          "that wait on each other in a cycle); raise buffer_packets (now " +
          std::to_string(n_.buffer_packets) + ")");
    if (K_ > 0 && !f_.issue_step.empty())
      throw std::invalid_argument(
          "the transfers' dependencies and issue steps form a cycle (a transfer waits for "
          "one of its node's transfers of a later step)");
    throw std::invalid_argument("the transfers' dependencies form a cycle");
  }
  return std::move(res_);
}

}  // namespace

RouterResult simulate_routers(const RouterFlows& flows, const RouterNetwork& net,
                              std::int64_t max_events) {
  return RouterLoop(flows, net).run(max_events);
}

}  // namespace wafercoll
