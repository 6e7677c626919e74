// Discrete-event simulation: see simulate.hpp for the model, and
// simulation.hpp for how the simulator is split into units.
//
// This unit holds the public entry points and the preparation that precedes
// any run state: checking the inputs, cutting messages into packets,
// building the stage tries (routes.cpp), counting the events, and the two
// orders that make results independent of transfer indices (the canonical
// rank of each transfer and the data position of its first packet).
#include "wafercoll/simulate/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>

#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/routes.hpp"
#include "wafercoll/simulate/simulation.hpp"

namespace wafercoll {

const char* to_string(Switching s) {
  return s == Switching::cut_through ? "cut_through" : "store_and_forward";
}

Switching switching_from_string(const std::string& name) {
  if (name == "cut_through") return Switching::cut_through;
  if (name == "store_and_forward") return Switching::store_and_forward;
  throw std::invalid_argument("switching must be 'cut_through' or 'store_and_forward', got '" +
                              name + "'");
}

const char* to_string(Dependencies d) {
  return d == Dependencies::complete ? "complete" : "dataflow";
}

Dependencies dependencies_from_string(const std::string& name) {
  if (name == "complete") return Dependencies::complete;
  if (name == "dataflow") return Dependencies::dataflow;
  throw std::invalid_argument("dependencies must be 'complete' or 'dataflow', got '" + name +
                              "'");
}

namespace {

// Schedules of at least this many transfers have their preparation split
// over two threads (prepare()). Measured on ring allreduce over ring(1024),
// one packet per transfer (2 M transfers), on a 2-core machine shared with
// other jobs: the whole run 1.17-1.34x as fast while a core was free (the
// split part up to 1.7x), 1.0x at a load of 2, and 0.6-0.97x at a load of
// 4-5 (both halves are memory-bound and then share a core).
constexpr TransferId kParallelTransfers = TransferId{1} << 16;

bool finite_nonneg(double x) { return std::isfinite(x) && x >= 0.0; }

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument(msg);
}

}  // namespace

void NetworkModel::validate() const {
  require(std::isfinite(bandwidth_Bps) && bandwidth_Bps >= 0.0,
          "bandwidth_Bps must be a finite number >= 0 (bytes per second; 0: each link's own)");
  require(finite_nonneg(hop_latency_s), "hop_latency_s must be a finite number >= 0 (seconds)");
  require(finite_nonneg(alpha_s), "alpha_s must be a finite number >= 0 (seconds)");
  require(packet_bytes >= 0, "packet_bytes must be >= 1 (or None for one packet per message)");
  require(flit_bytes >= 0, "flit_bytes must be >= 1 (or None for no flits)");
  require(flit_bytes == 0 || packet_bytes == 0 || flit_bytes <= packet_bytes,
          "flit_bytes must not exceed packet_bytes");
  require(!pad_packets || packet_bytes > 0, "pad_packets needs packet_bytes");
  require(finite_nonneg(gamma_s_per_byte),
          "gamma_s_per_byte must be a finite number >= 0 (seconds per byte)");
  require(finite_nonneg(copy_s_per_byte),
          "copy_s_per_byte must be a finite number >= 0 (seconds per byte)");
  require(ports >= 0 && ports <= 1024, "ports must be in [1, 1024] (or None for unlimited)");
  require(std::isfinite(port_bandwidth_Bps) && port_bandwidth_Bps >= 0.0,
          "port_bandwidth_Bps must be a finite number >= 0 (bytes per second; 0: default)");
  require(finite_nonneg(port_latency_s), "port_latency_s must be a finite number >= 0 (seconds)");
  require(finite_nonneg(switch_overhead_s),
          "switch_overhead_s must be a finite number >= 0 (seconds)");
  require(switch_overhead_s == 0.0 || ports > 0,
          "switch_overhead_s needs ports (it is charged on ejection channels)");
  require(std::isfinite(clock_Hz) && clock_Hz >= 0.0, "clock_Hz must be a finite number > 0");
  require(std::isfinite(switch_reduce_Bps) && switch_reduce_Bps >= 0.0,
          "switch_reduce_Bps must be a finite number >= 0 (input bytes per second; 0: no "
          "reduction cost)");
  require(switch_buffer_bytes >= 0, "switch_buffer_bytes must be >= 1 (or None for no limit)");
  require(!(spray && ecmp), "spray and ecmp exclude each other (per packet or per flow)");
  require(!spray || dependencies == Dependencies::complete,
          "spray needs dependencies 'complete' (dataflow streams follow one route)");
  require(!spray || switch_overhead_s == 0.0,
          "spray needs switch_overhead_s = 0 (a sprayed transfer's packets reach an ejection "
          "channel out of order)");
}

namespace sim {

namespace {

// Cuts every message into packets of packet_bytes (one packet when it is 0
// or the message is empty). Padded: every packet occupies packet_bytes on
// the wire (fixed-size messages, as in BookSim), so a short transfer costs a
// whole packet. A last packet of 2^32 bytes or more (a message of 4 GiB not
// cut into packets) moves every transfer's last size to p.wide_last.
void packetize(const Schedule& s, const NetworkModel& net, Prepared& p) {
  const TransferId T = s.num_transfers();
  const Bytes M = net.packet_bytes;
  p.hot.resize(static_cast<std::size_t>(T));
  for (TransferId t = 0; t < T; ++t) {
    const Bytes S = s.transfer_bytes(t);
    const std::int64_t n = (M == 0 || S == 0) ? 1 : (S + M - 1) / M;
    // Packet indices share a 64-bit tie key with the transfer's rank.
    if (n >= (std::int64_t{1} << 32))
      throw std::invalid_argument("transfer " + std::to_string(t) + " would be cut into " +
                                  std::to_string(n) +
                                  " packets; use a larger packet_bytes");
    TransferHot& h = p.hot[t];
    h.npackets = static_cast<std::uint32_t>(n);
    const Bytes last = (M == 0 || S == 0) ? S : net.pad_packets ? M : S - (n - 1) * M;
    h.last_bytes = static_cast<std::uint32_t>(last);
    h.stream_id = -1;
    if (last > std::numeric_limits<std::uint32_t>::max() && p.wide_last.empty()) {
      p.wide_last.resize(static_cast<std::size_t>(T));
      for (TransferId u = 0; u < t; ++u) p.wide_last[u] = p.hot[u].last_bytes;
    }
    if (!p.wide_last.empty()) p.wide_last[t] = last;
  }
}

// Every message into or out of a switch rank fits its buffer.
void check_switch_buffers(const Schedule& s, const NetworkModel& net) {
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    RankId sw = s.is_switch(s.src(t)) ? s.src(t) : -1;
    for (const RankId* d = s.dsts_begin(t); sw < 0 && d != s.dsts_end(t); ++d)
      if (s.is_switch(*d)) sw = *d;
    if (sw >= 0 && s.transfer_bytes(t) > net.switch_buffer_bytes)
      throw std::invalid_argument(
          "transfer " + std::to_string(t) + " moves " + std::to_string(s.transfer_bytes(t)) +
          " bytes through switch rank " + std::to_string(sw) +
          ", more than switch_buffer_bytes = " + std::to_string(net.switch_buffer_bytes) +
          "; cut the data into more (smaller) blocks, or raise switch_buffer_bytes");
  }
}

[[noreturn]] void too_many_events(std::int64_t events, const SimOptions& opt) {
  throw TooManyEvents(events, opt.max_events);
}

// One event per packet per trie node (a sprayed transfer's packet crosses
// one path of its trie; a computed route's, its hops and ports): refused up
// front when over max_events, before any run state is allocated.
void count_events(const Topology& topo, const NetworkModel& net, const SimOptions& opt,
                  Prepared& p) {
  const auto T = static_cast<TransferId>(p.hot.size());
  const std::vector<SprayChoice>& root = p.tries.spray_root;
  const std::int64_t port_stages = net.ports > 0 ? 2 : 0;
  for (TransferId t = 0; t < T; ++t) {
    const TransferHot& h = p.hot[t];
    std::int64_t stages = p.tries.base[t + 1] - p.tries.base[t];
    if (h.computed()) {
      std::int32_t hops = 0;
      topo.route_link_unchecked(h.src, h.dst(), 0, &hops);  // inline on grids
      stages = hops + port_stages;
    } else if (!root.empty() && root[t].depth > 0) {
      stages = root[t].depth;
    }
    p.events += h.npackets * stages;
  }
  if (p.events > opt.max_events) too_many_events(p.events, opt);
}

// Spraying walks every packet's path while building the tries: the
// packets of one-destination transfers are counted first (a lower bound
// on the events), so that a run too large is refused before that walk.
void check_spray_events(const Schedule& s, const SimOptions& opt, const Prepared& p) {
  std::int64_t packets = 0;
  for (TransferId t = 0; t < s.num_transfers(); ++t)
    if (s.num_dsts(t) == 1) packets += p.hot[t].npackets;
  if (packets > opt.max_events) too_many_events(packets, opt);
}

// One stable pass of the LSD radix sort in canonical_ranks(): orders
// `order` by get(t), 16 bits at a time, skipping a field that takes one
// value. Fields are >= 0.
template <typename Get>
void radix_pass(TransferId T, Get get, std::vector<TransferId>& order,
                std::vector<TransferId>& tmp, std::vector<std::uint64_t>& field,
                std::vector<std::int64_t>& count) {
  std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
  for (TransferId t = 0; t < T; ++t) {
    field[t] = static_cast<std::uint64_t>(get(t));
    lo = std::min(lo, field[t]);
    hi = std::max(hi, field[t]);
  }
  if (T == 0 || lo == hi) return;
  const std::uint64_t span = hi - lo;
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += 16) {
    std::fill(count.begin(), count.end(), 0);
    for (TransferId i = 0; i < T; ++i) ++count[((field[order[i]] - lo) >> shift) & 0xffff];
    std::int64_t sum = 0;
    for (auto& c : count) {
      const std::int64_t n = c;
      c = sum;
      sum += n;
    }
    for (TransferId i = 0; i < T; ++i) {
      const TransferId t = order[i];
      tmp[count[((field[t] - lo) >> shift) & 0xffff]++] = t;
    }
    order.swap(tmp);
  }
}

// Canonical order of the transfers, independent of their indices: by
// (src, first destination, destination count, first block, last block, op,
// bytes), exact duplicates by index. Event ties between transfers go by this
// rank, never by index.
//
// The general case is an LSD radix sort: stable passes of 16-bit digits
// from the last field to the first, starting from index order (which
// settles the duplicates). Linear in the transfers, where a comparison sort
// of 2 M keys cost a quarter of a run.
void canonical_ranks_by_field(const Schedule& s, Prepared& p) {
  const TransferId T = s.num_transfers();
  std::vector<TransferId> order(T);
  std::iota(order.begin(), order.end(), 0);
  {
    std::vector<TransferId> tmp(T);
    std::vector<std::uint64_t> field(T);
    std::vector<std::int64_t> count(std::size_t{1} << 16);
    auto pass = [&](auto get) { radix_pass(T, get, order, tmp, field, count); };
    pass([&](TransferId t) { return s.transfer_bytes(t); });
    pass([&](TransferId t) { return static_cast<int>(s.op(t)); });
    pass([&](TransferId t) { return (s.ranges_end(t) - 1)->hi; });
    pass([&](TransferId t) { return s.ranges_begin(t)->lo; });
    pass([&](TransferId t) { return s.num_dsts(t); });
    pass([&](TransferId t) { return *s.dsts_begin(t); });
    pass([&](TransferId t) { return s.src(t); });
  }
  for (TransferId i = 0; i < T; ++i) p.hot[order[i]].canon = static_cast<std::uint32_t>(i);
}

// The fields of the canonical order, most significant first; fields are >= 0.
constexpr int kKeyFields = 7;

void key_fields(const Schedule& s, TransferId t, std::uint64_t bytes,
                std::uint64_t (&f)[kKeyFields]) {
  f[0] = static_cast<std::uint64_t>(s.src(t));
  f[1] = static_cast<std::uint64_t>(*s.dsts_begin(t));
  f[2] = static_cast<std::uint64_t>(s.num_dsts(t));
  f[3] = static_cast<std::uint64_t>(s.ranges_begin(t)->lo);
  f[4] = static_cast<std::uint64_t>((s.ranges_end(t) - 1)->hi);
  f[5] = static_cast<std::uint64_t>(s.op(t));
  f[6] = bytes;
}

int bit_width(std::uint64_t x) {
  int w = 0;
  for (; x != 0; x >>= 1) ++w;
  return w;
}

// The canonical ranks when every field, offset by its minimum, and the
// transfer index fit one 64-bit key together (fields above the index):
// the keys are built in one pass, which also tells whether they are
// already in order (then the ranks are the indices), else sorted by an
// LSD radix sort over the field bits only, which keeps index order among
// equal fields. The keys move with the sort, so every pass reads them in
// sequence, where the field-wise sort gathers. As few passes as digits of
// at most 16 bits allow, the digits of equal width, and a pass skipped
// where its digit takes one value (measured: the 42 bits of ring allreduce
// on 1024 ranks as fast in three 14-bit passes as in four 11-bit ones, the
// 32 bits of recursive doubling on 65,536 ranks 10 % faster in two 16-bit
// passes than in three 11-bit ones). Returns false, having done nothing,
// when the key does not fit.
bool canonical_ranks_packed(const Schedule& s, Prepared& p) {
  const TransferId T = s.num_transfers();
  BigVector<std::uint64_t> key(static_cast<std::size_t>(T));
  std::uint64_t lo[kKeyFields], hi[kKeyFields], f[kKeyFields];
  std::fill(lo, lo + kKeyFields, ~std::uint64_t{0});
  std::fill(hi, hi + kKeyFields, 0);
  for (TransferId t = 0; t < T; ++t) {
    key[t] = static_cast<std::uint64_t>(s.transfer_bytes(t));  // kept for the next pass
    key_fields(s, t, key[t], f);
    for (int i = 0; i < kKeyFields; ++i) {
      lo[i] = std::min(lo[i], f[i]);
      hi[i] = std::max(hi[i], f[i]);
    }
  }
  int width[kKeyFields];
  const int index_bits = bit_width(static_cast<std::uint64_t>(T - 1));
  int bits = 0;
  for (int i = 0; i < kKeyFields; ++i) bits += width[i] = bit_width(hi[i] - lo[i]);
  if (bits + index_bits > 64) return false;
  constexpr int kMaxDigit = 16;
  const int digits = (bits + kMaxDigit - 1) / kMaxDigit;
  const int digit = digits == 0 ? 1 : (bits + digits - 1) / digits;
  const std::size_t buckets = std::size_t{1} << digit;
  std::vector<std::int64_t> count(buckets * static_cast<std::size_t>(digits), 0);
  bool sorted = true;
  for (TransferId t = 0; t < T; ++t) {
    key_fields(s, t, key[t], f);
    std::uint64_t k = 0;
    for (int i = 0; i < kKeyFields; ++i) k = (k << width[i]) | (f[i] - lo[i]);
    for (int d = 0; d < digits; ++d) ++count[d * buckets + ((k >> (d * digit)) & (buckets - 1))];
    k = (k << index_bits) | static_cast<std::uint64_t>(t);
    sorted = sorted && (t == 0 || k > key[t - 1]);
    key[t] = k;
  }
  if (sorted) {
    for (TransferId t = 0; t < T; ++t) p.hot[t].canon = static_cast<std::uint32_t>(t);
    return true;
  }
  // The passes that reorder (a digit of one value does not), each an
  // exclusive prefix sum of its digit's counts.
  std::vector<std::int64_t*> passes;
  for (int d = 0; d < digits; ++d) {
    std::int64_t* c = count.data() + d * buckets;
    if (*std::max_element(c, c + buckets) == T) continue;
    std::int64_t sum = 0;
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::int64_t n = c[b];
      c[b] = sum;
      sum += n;
    }
    passes.push_back(c);
  }
  BigVector<std::uint64_t> tmp(static_cast<std::size_t>(T));
  auto shift_of = [&](const std::int64_t* c) {
    const auto d = static_cast<int>((c - count.data()) / static_cast<std::ptrdiff_t>(buckets));
    return index_bits + d * digit;
  };
  for (std::size_t i = 0; i + 1 < passes.size(); ++i) {
    std::int64_t* c = passes[i];
    const int shift = shift_of(c);
    for (const std::uint64_t k : key) tmp[c[(k >> shift) & (buckets - 1)]++] = k;
    key.swap(tmp);
  }
  // The last pass knows each key's rank (its final position). Written in
  // rank order, the ranks would land anywhere in the records (a cache miss
  // each), so (index, rank) pairs are grouped by the index's high bits
  // instead (group g holds indices [g, g + 1) << group_shift, all of them),
  // and each group's writes then stay within 1024 consecutive records.
  std::int64_t* c = passes.back();
  const int shift = shift_of(c);
  const std::uint64_t index_mask = (std::uint64_t{1} << index_bits) - 1;
  const int group_shift = std::max(0, index_bits - 10);
  std::vector<std::int64_t> at((static_cast<std::size_t>(T - 1) >> group_shift) + 1);
  for (std::size_t g = 0; g < at.size(); ++g) at[g] = static_cast<std::int64_t>(g) << group_shift;
  for (const std::uint64_t k : key) {
    const std::uint64_t t = k & index_mask;
    const auto rank = static_cast<std::uint64_t>(c[(k >> shift) & (buckets - 1)]++);
    tmp[at[t >> group_shift]++] = (t << 32) | rank;
  }
  for (const std::uint64_t x : tmp) p.hot[x >> 32].canon = static_cast<std::uint32_t>(x);
  return true;
}

void canonical_ranks(const Schedule& s, Prepared& p) {
  if (s.num_transfers() > 0 && canonical_ranks_packed(s, p)) return;
  canonical_ranks_by_field(s, p);
}

// The position of each transfer's first packet in the data vector: in
// packets when messages are cut, in blocks otherwise (one packet each).
void data_positions(const Schedule& s, const NetworkModel& net, Prepared& p) {
  const TransferId T = s.num_transfers();
  const Bytes M = net.packet_bytes;
  std::vector<Bytes> prefix(static_cast<std::size_t>(s.num_blocks()) + 1, 0);
  for (BlockId b = 0; b < s.num_blocks(); ++b) prefix[b + 1] = prefix[b] + s.block_bytes()[b];
  for (TransferId t = 0; t < T; ++t) {
    const Bytes at = prefix[s.ranges_begin(t)->lo];
    p.hot[t].key0 = static_cast<std::uint64_t>(M > 0 ? at / M : s.ranges_begin(t)->lo);
  }
}

}  // namespace

Prepared prepare(const Schedule& s, const Topology& topo, const NetworkModel& net,
                 const SimOptions& opt, bool for_run) {
  net.validate();
  Prepared p;
  p.place = resolve_placement(s, topo, opt);
  if (!s.deps_point_backward()) topological_order(s);  // throws on a cycle
  const std::int64_t slots = static_cast<std::int64_t>(s.dst_array().size());
  require(slots < std::numeric_limits<std::int32_t>::max(),
          "the schedule has too many destinations to simulate");
  packetize(s, net, p);
  // The two orders and the successor lists read only the schedule and
  // write only their own fields of the per-transfer records (the routes
  // below read npackets, written before), so on a large schedule they are
  // computed on a second thread while this one builds the routes. The
  // future joins the thread however this function is left.
  const bool need_successors = for_run && net.dependencies == Dependencies::complete;
  auto orders = [&s, &net, &p, need_successors] {
    canonical_ranks(s, p);
    data_positions(s, net, p);
    if (need_successors) p.successors = successor_lists(s);
  };
  std::future<void> side;
  if (s.num_transfers() >= kParallelTransfers && std::thread::hardware_concurrency() > 1)
    side = std::async(std::launch::async, orders);
  // Bound the trie size before building it.
  const PacketCounts npackets{p.hot.empty() ? nullptr : &p.hot[0].npackets,
                              sizeof(TransferHot) / sizeof(std::uint32_t)};
  const bool computes = computes_routes(topo, net);
  const std::int64_t stage_bound =
      count_route_stages(s, topo, net, p.place, npackets, computes);
  if (net.spray) check_spray_events(s, opt, p);
  if (s.has_switches() && net.switch_buffer_bytes > 0) check_switch_buffers(s, net);
  p.tries = build_stage_tries(s, topo, net, p.place, npackets, stage_bound, computes);
  if (side.valid())
    side.get();
  else
    orders();
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    TransferHot& h = p.hot[t];
    h.src = p.place[s.src(t)];
    h.base = computes && computed_route(s, p.place, t) ? -1 - p.place[*s.dsts_begin(t)]
                                                       : p.tries.base[t];
  }
  count_events(topo, net, opt, p);
  // Without tries every route is computed, and base[] is read no more.
  if (p.tries.nodes.empty()) BigVector<std::int32_t>().swap(p.tries.base);
  return p;
}

}  // namespace sim

std::int64_t simulation_events(const Schedule& s, const Topology& topo,
                               const NetworkModel& net, const SimOptions& opt) {
  return sim::prepare(s, topo, net, opt).events;
}

SimResult simulate(const Schedule& s, const Topology& topo, const NetworkModel& net,
                   const SimOptions& opt) {
  sim::Simulation simulation(s, topo, net, opt);
  simulation.run();
  return simulation.collect();
}

SimResult simulate(const Schedule& s, const Topology& topo, const NetworkModel& net,
                   const SimOptions& opt, const TaskGraph& tasks) {
  sim::Simulation simulation(s, topo, net, opt, &tasks);
  simulation.run();
  return simulation.collect();
}

}  // namespace wafercoll
