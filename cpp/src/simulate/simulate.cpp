// Discrete-event simulation: see simulate.hpp for the model, and
// simulation.hpp for how the simulator is split into units.
//
// This unit holds the public entry points and the preparation that precedes
// any run state: checking the inputs, cutting messages into packets (with
// the data position of each transfer's first packet), building the stage
// tries (routes.cpp), counting the events, and the canonical rank of each
// transfer; the last two make results independent of transfer indices.
#include "wafercoll/simulate/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>

#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/packets.hpp"
#include "wafercoll/simulate/radix_sort.hpp"
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

// Whether the run keeps one-destination countdowns in the transfer records
// (Costs::unicast): complete mode, and every transfer has one destination.
bool unicast_run(const Schedule& s, const NetworkModel& net) {
  return net.dependencies == Dependencies::complete &&
         static_cast<TransferId>(s.dst_array().size()) == s.num_transfers();
}

// The per-transfer records, in one pass over the schedule: cuts every
// message into packets of packet_bytes (one packet when it is 0 or the
// message is empty; padded, every packet occupies packet_bytes on the wire,
// fixed-size messages as in BookSim, so a short transfer costs a whole
// packet), the data position of the first packet (in packets when messages
// are cut, in blocks otherwise), the source's node, and for a computed
// route (`computes`, routes.hpp) its destination and events. The packet
// counts and last sizes are packed as p.sizes says (SizeCode); when one does
// not fit, the pass is made again with every last size in p.wide_last. The
// canonical ranks (`rank`, nullptr when they are the indices) go into the
// tie keys. A large schedule is cut in two halves, one per thread (the
// records are independent). Returns the transfers that need a trie.
TransferId packetize(const Schedule& s, const Topology& topo, const NetworkModel& net,
                     bool computes, const std::uint32_t* rank, Prepared& p) {
  const TransferId T = s.num_transfers();
  const Bytes M = net.packet_bytes;
  const bool one_range = s.range_offsets().identity();
  const bool unicast = unicast_run(s, net);
  const std::int64_t ports = port_stages(net);
  // Division by a packet size of a power of two (the usual) is a shift
  // (profiled, the two divisions per transfer drew a quarter of this pass's
  // samples).
  const int shift = M > 0 && (M & (M - 1)) == 0 ? bit_width(static_cast<std::uint64_t>(M)) - 1 : -1;
  auto per_packet = [M, shift](Bytes x) { return shift >= 0 ? x >> shift : x / M; };
  // A last packet is at most M bytes when messages are cut, else the whole
  // message, and then the only packet.
  SizeCode& code = p.sizes;
  code.shift = M > 0 ? bit_width(static_cast<std::uint64_t>(M)) : 31;
  code.mask = code.shift < 32 ? (std::uint32_t{1} << code.shift) - 1 : 0;
  struct Tally {
    TransferId tries = 0;
    std::int64_t events = 0;
    std::int32_t stages_max = 0;  // of a computed route
    std::int64_t stages = 0;      // of all computed routes
    bool fits = true;  // every count and last size fit `code` (else stopped)
  };
  // Transfers [lo, hi); with a packed code, stops at the first that does
  // not fit it.
  auto pass = [&](TransferId lo, TransferId hi) {
    // Counted in locals: a Tally's members, in the caller's object that is
    // returned in place, might alias the records' stores as far as the
    // compiler knows, and were read and written through memory on every
    // transfer (profiled on ring(4096), 64 MiB: the pass drew 36 % fewer
    // samples once counted in locals).
    TransferId tries = 0;
    std::int64_t events = 0, stages = 0;
    std::int32_t stages_max = 0;
    const bool wide = !p.wide_last.empty();
    for (TransferId t = lo; t < hi; ++t) {
      const BlockRange r = *s.ranges_begin(t);
      const Bytes S = one_range ? s.range_bytes(r.lo, r.hi) : s.transfer_bytes(t);
      const std::int64_t n = (M == 0 || S == 0) ? 1 : per_packet(S + M - 1);  // packet_count
      // Packet indices share a 64-bit tie key with the transfer's rank.
      if (n >= (std::int64_t{1} << 32))
        throw std::invalid_argument("transfer " + std::to_string(t) + " would be cut into " +
                                    std::to_string(n) +
                                    " packets; use a larger packet_bytes");
      TransferHot& h = p.hot[t];
      const Bytes last = last_packet_bytes(S, M, n, net.pad_packets);
      if (wide) {
        h.sizes = static_cast<std::uint32_t>(n);
        p.wide_last[t] = last;
      } else if ((n >> (32 - code.shift)) != 0 || (last >> code.shift) != 0) {
        return Tally{0, 0, 0, 0, false};  // the counts are not used
      } else {
        h.sizes = (static_cast<std::uint32_t>(n) << code.shift) | static_cast<std::uint32_t>(last);
      }
      const auto key0 =
          static_cast<std::uint64_t>(M > 0 ? per_packet(s.range_bytes(0, r.lo)) : r.lo);
      h.tie0 = (std::min(key0, kMaxPos) << kCanonBits) |
               (rank != nullptr ? rank[t] : static_cast<std::uint64_t>(t));
      if (unicast)
        h.left = static_cast<std::uint32_t>(n);
      else
        h.stream = 0;
      h.src = p.place[s.src(t)];
      if (computes && computed_route(s, p.place, t)) {
        h.base = -1 - p.place[*s.dsts_begin(t)];
        std::int32_t hops = 0;
        topo.route_link_unchecked(h.src, h.dst(), 0, &hops);  // inline on grids
        events += n * (hops + ports);
        stages_max = std::max(stages_max, static_cast<std::int32_t>(hops + ports));
        stages += hops + ports;
      } else {
        h.base = 0;  // set with the tries
        ++tries;
      }
    }
    return Tally{tries, events, stages_max, stages, true};
  };
  p.hot.resize(static_cast<std::size_t>(T));
  auto go_wide = [&] {
    p.wide_last.resize(static_cast<std::size_t>(T));
    code = SizeCode{};
  };
  if (code.shift >= 32) go_wide();  // packets of 2^32 bytes or more
  Tally all;
  if (T >= kParallelTransfers && std::thread::hardware_concurrency() > 1) {
    // The first half here, the second on a thread: an error in the first
    // half is the one reported, as in a serial pass.
    const TransferId mid = T / 2;
    std::future<Tally> second = std::async(std::launch::async, pass, mid, T);
    const Tally first = pass(0, mid);
    const Tally other = second.get();
    all = Tally{first.tries + other.tries, first.events + other.events,
                std::max(first.stages_max, other.stages_max), first.stages + other.stages,
                first.fits && other.fits};
  } else {
    all = pass(0, T);
  }
  if (!all.fits) {
    go_wide();
    all = pass(0, T);
  }
  p.events += all.events;
  p.route_stages_max = all.stages_max;
  p.route_stages = all.stages;
  return all.tries;
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

// A run whose every route is computed, with more stages than tries could
// hold (refuse_too_many_stages' bound), has its events counted in one pass
// (packetize()'s count) before anything per transfer is allocated or the
// canonical order sorted: over max_events it is refused at once, with its
// exact count, as cheaply as that bound refused it while such routes were
// stored. Otherwise (or when a route is not computed) nothing happens here.
void refuse_large_run_early(const Schedule& s, const Topology& topo, const NetworkModel& net,
                            const std::vector<NodeId>& place, const SimOptions& opt) {
  const std::int64_t ports = port_stages(net);
  if (static_cast<std::int64_t>(s.dst_array().size()) * (1 + ports) <= kMaxNodes) return;
  const Bytes M = net.packet_bytes;
  std::int64_t events = 0;
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    if (!computed_route(s, place, t)) return;
    const Bytes S = s.transfer_bytes(t);
    const std::int64_t n = (M == 0 || S == 0) ? 1 : (S + M - 1) / M;
    if (n >= (std::int64_t{1} << 32)) return;  // packetize() refuses it
    std::int32_t hops = 0;
    topo.route_link_unchecked(place[s.src(t)], place[*s.dsts_begin(t)], 0, &hops);
    events += n * (hops + ports);
  }
  if (events > opt.max_events) too_many_events(events, opt);
}

// One event per packet per trie node (a sprayed transfer's packet crosses
// one path of its trie; a computed route's, its hops and ports, counted by
// packetize()): the transfers with tries take their first node here and add
// their events. A run over max_events is refused up front, before any run
// state is allocated.
void count_events(const SimOptions& opt, Prepared& p) {
  const auto T = static_cast<TransferId>(p.hot.size());
  const std::vector<SprayChoice>& root = p.tries.spray_root;
  for (TransferId t = 0; t < T && !p.tries.nodes.empty(); ++t) {
    TransferHot& h = p.hot[t];
    if (h.computed()) continue;
    h.base = p.tries.base[t];
    std::int64_t stages = p.tries.base[t + 1] - p.tries.base[t];
    if (!root.empty() && root[t].depth > 0) stages = root[t].depth;
    p.events += p.sizes.npackets(h.sizes) * stages;
  }
  if (p.events > opt.max_events) too_many_events(p.events, opt);
}

// Spraying walks every packet's path while building the tries: the
// packets of one-destination transfers are counted first (a lower bound
// on the events), so that a run too large is refused before that walk.
void check_spray_events(const Schedule& s, const SimOptions& opt, const Prepared& p) {
  std::int64_t packets = 0;
  for (TransferId t = 0; t < s.num_transfers(); ++t)
    if (s.num_dsts(t) == 1) packets += p.sizes.npackets(p.hot[t].sizes);
  if (packets > opt.max_events) too_many_events(packets, opt);
}

// The canonical rank of every transfer, while prepare() needs it (empty
// when the ranks are the indices); mapped, so that it goes back to the
// system when dropped (mapped_alloc.hpp).
using Ranks = ScratchVector<std::uint32_t>;

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

// The last-block field of the canonical order: t's last range's end minus
// its first range's start (at least 1).
BlockId last_block_span(const Schedule& s, TransferId t) {
  return (s.ranges_end(t) - 1)->hi - s.ranges_begin(t)->lo;
}

// Canonical order of the transfers, independent of their indices: by
// (src, first destination, destination count, first block, last block, op,
// bytes), exact duplicates by index. Event ties between transfers go by this
// rank, never by index. The last block is taken as the span from the first
// block (last range's end minus first range's start, at least 1: a
// transfer's ranges are sorted and not empty), which orders alike after the
// first block and takes few bits where the blocks are many and the ranges
// short (TTO on 9 x 9 at 1 GiB: 32,769 blocks, spans of 1), so that the
// fields fit one packed key more often.
//
// The general case is an LSD radix sort: stable passes of 16-bit digits
// from the last field to the first, starting from index order (which
// settles the duplicates). Linear in the transfers, where a comparison sort
// of 2 M keys cost a quarter of a run.
void canonical_ranks_by_field(const Schedule& s, Ranks& rank) {
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
    pass([&](TransferId t) { return last_block_span(s, t); });
    pass([&](TransferId t) { return s.ranges_begin(t)->lo; });
    pass([&](TransferId t) { return s.num_dsts(t); });
    pass([&](TransferId t) { return *s.dsts_begin(t); });
    pass([&](TransferId t) { return s.src(t); });
  }
  rank.resize(static_cast<std::size_t>(T));
  for (TransferId i = 0; i < T; ++i) rank[order[i]] = static_cast<std::uint32_t>(i);
}

// The fields of the canonical order, most significant first; fields are >= 0.
constexpr int kKeyFields = 7;

void key_fields(const Schedule& s, TransferId t, std::uint64_t bytes,
                std::uint64_t (&f)[kKeyFields]) {
  f[0] = static_cast<std::uint64_t>(s.src(t));
  f[1] = static_cast<std::uint64_t>(*s.dsts_begin(t));
  f[2] = static_cast<std::uint64_t>(s.num_dsts(t));
  f[3] = static_cast<std::uint64_t>(s.ranges_begin(t)->lo);
  f[4] = static_cast<std::uint64_t>(last_block_span(s, t));
  f[5] = static_cast<std::uint64_t>(s.op(t));
  f[6] = bytes;
}

// The key fields of transfer t, as key_fields() gives them, read straight
// from the schedule's arrays when every transfer has one destination and one
// block range (`simple`): the destination count is then 1 and the bytes
// follow from the range, a more significant field, so neither is read (a
// field of one value takes no bits). Otherwise `bytes` is the transfer's.
template <bool simple>
void key_fields_of(const Schedule& s, TransferId t, std::uint64_t bytes,
                   std::uint64_t (&f)[kKeyFields]) {
  if constexpr (simple) {
    const BlockRange r = s.range_list()[t];
    f[0] = static_cast<std::uint64_t>(s.src_array()[static_cast<std::size_t>(t)]);
    f[1] = static_cast<std::uint64_t>(s.dst_array()[static_cast<std::size_t>(t)]);
    f[2] = 1;
    f[3] = static_cast<std::uint64_t>(r.lo);
    f[4] = static_cast<std::uint64_t>(r.hi - r.lo);
    f[5] = s.op_array()[static_cast<std::size_t>(t)];
    f[6] = 0;
  } else {
    key_fields(s, t, bytes, f);
  }
}

// Sorts keys[0, n) by their bits [lo_bit, hi_bit), stably, by LSD radix
// passes of equal digits, as wide as the count allows (up to 16 bits for
// many keys, 8 for a few thousand, so that the counts stay small beside
// the keys), through `scratch` (n keys); the result ends in `keys`.
void lsd_sort(std::uint64_t* keys, std::uint64_t* scratch, std::int64_t n, int lo_bit,
              int hi_bit, std::vector<std::int64_t>& count) {
  const int max_digit = n >= (std::int64_t{1} << 16) ? 16 : n >= 4096 ? 11 : 8;
  const std::uint64_t* sorted = lsd_radix_sort(
      keys, scratch, n, lo_bit, hi_bit, max_digit, [](std::uint64_t k) { return k; }, count);
  if (sorted != keys) std::copy(sorted, sorted + n, keys);
}

// How canonical_ranks_packed() packs a transfer's key: its fields, each
// offset by its minimum in `width` bits, most significant first, and below
// them its index; the keys are first distributed by their top `top` bits.
struct KeyLayout {
  std::uint64_t lo[kKeyFields];
  int width[kKeyFields];
  int bits = 0;        // the fields' bits in all
  int index_bits = 0;  // the index's
  int top = 0;         // the top digit's
  int total() const { return bits + index_bits; }
  int top_shift() const { return total() - top; }
};

// The top digit takes at most 8 bits, so that the buckets being filled stay
// in cache, unless the key is wider than 64 bits: then it takes the bits
// above 64 (at most this many), so that what is left fits 64 bits.
constexpr int kTopDigit = 8, kMaxTopDigit = 16;

// Sets the widths, bits and top digit of L from lo and hi; false when the
// key is too wide even so.
bool set_widths(const std::uint64_t (&lo)[kKeyFields], const std::uint64_t (&hi)[kKeyFields],
                KeyLayout& L) {
  L.bits = 0;
  for (int i = 0; i < kKeyFields; ++i) {
    L.lo[i] = lo[i];
    L.bits += L.width[i] = bit_width(hi[i] - lo[i]);
  }
  L.top = std::max(std::min(L.bits, kTopDigit), L.total() - 64);
  return L.top <= kMaxTopDigit;
}

// canonical_ranks_packed() once the layout is known (a key of at most
// 64 + kMaxTopDigit bits), with keys of type Key
// (64 bits when they fit, else UInt128): `key` and `tmp` hold T keys each;
// key[t] holds t's bytes on entry when the fields are not `simple`.
template <bool simple, typename Key>
void sort_packed(const Schedule& s, const KeyLayout& L, std::uint64_t* key, std::uint64_t* tmp,
                 Ranks& rank) {
  constexpr bool wide = sizeof(Key) > sizeof(std::uint64_t);
  const TransferId T = s.num_transfers();
  const int index_bits = L.index_bits;
  const int top_shift = L.top_shift();
  // The bits below the top digit (all 64 when the key is wider).
  const std::uint64_t below_top =
      top_shift >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << top_shift) - 1;
  // A wide key keeps its bits below the top digit in key[t] and the digit
  // itself here.
  ScratchVector<std::uint16_t> digit(wide ? static_cast<std::size_t>(T) : 0);
  std::vector<std::int64_t> count((std::size_t{1} << L.top) + 1, 0);
  bool sorted = true;
  Key previous = 0;
  std::uint64_t f[kKeyFields];
  for (TransferId t = 0; t < T; ++t) {
    key_fields_of<simple>(s, t, simple ? 0 : key[t], f);  // key[t]: the bytes
    Key k = 0;
    for (int i = 0; i < kKeyFields; ++i) k = (k << L.width[i]) | (f[i] - L.lo[i]);
    k = (k << index_bits) | static_cast<std::uint64_t>(t);
    const auto d = static_cast<std::size_t>(k >> top_shift);
    ++count[d + 1];
    sorted = sorted && (t == 0 || k > previous);
    previous = k;
    if constexpr (wide) {
      digit[static_cast<std::size_t>(t)] = static_cast<std::uint16_t>(d);
      key[t] = static_cast<std::uint64_t>(k) & below_top;
    } else {
      key[t] = k;
    }
  }
  if (sorted) return;
  // Bucket b is [count[b], count[b + 1]) once the counts are summed.
  for (std::size_t b = 1; b < count.size(); ++b) count[b] += count[b - 1];
  {
    std::vector<std::int64_t> next(count.begin(), count.end() - 1);
    for (TransferId t = 0; t < T; ++t) {
      const std::size_t d = wide ? digit[static_cast<std::size_t>(t)] : key[t] >> top_shift;
      tmp[next[d]++] = key[t];
    }
  }
  ScratchVector<std::uint16_t>().swap(digit);
  std::vector<std::int64_t> digits;
  for (std::size_t b = 0; b + 1 < count.size(); ++b) {
    std::uint64_t* keys = tmp + count[b];
    const std::int64_t n = count[b + 1] - count[b];
    std::uint64_t vary = 0;  // the field bits below the top digit that differ
    for (std::int64_t i = 1; i < n; ++i) vary |= keys[i] ^ keys[0];
    vary = (vary & below_top) >> index_bits;
    if (vary == 0) continue;
    lsd_sort(keys, key + count[b], n, index_bits + lowest_bit(vary),
             index_bits + bit_width(vary), digits);
  }
  // The ranks by index, 32 bits each; the transfer records would take a
  // cache miss per write, and so does even this array when written in rank
  // order. So (index, rank) pairs are first grouped by the index's high bits
  // (group g holds indices [g, g + 1) << group_shift, all of them), into the
  // keys' half of the block, and each group's writes then stay within 1024
  // consecutive entries. The ranks are copied into the records in order.
  const std::uint64_t index_mask = (std::uint64_t{1} << index_bits) - 1;
  const int group_shift = std::max(0, index_bits - 8);
  std::vector<std::int64_t> at((static_cast<std::size_t>(T - 1) >> group_shift) + 1);
  for (std::size_t g = 0; g < at.size(); ++g) at[g] = static_cast<std::int64_t>(g) << group_shift;
  for (TransferId i = 0; i < T; ++i) {
    const std::uint64_t t = tmp[i] & index_mask;
    key[at[t >> group_shift]++] = (t << 32) | static_cast<std::uint64_t>(i);
  }
  rank.resize(static_cast<std::size_t>(T));
  for (TransferId i = 0; i < T; ++i) rank[key[i] >> 32] = static_cast<std::uint32_t>(key[i]);
}

// The canonical ranks when every field, offset by its minimum, and the
// transfer index fit one key of at most 64 + kMaxTopDigit bits together
// (fields above the index): the keys are built in one pass, which also
// tells whether they are already in order (then the ranks are the indices),
// else sorted over the field bits only, stably, which keeps index order
// among equal fields: one pass by the top digit and then each bucket, a few
// thousand keys that fit in cache, by an LSD radix sort over the bits that
// vary in it. A key wider than 64 bits takes a top digit wide enough that
// the rest fits 64 bits (recursive doubling over 2^20 ranks: 41 field bits
// and 25 index bits; sorted field by field, canonical_ranks_by_field(),
// its canonical order took about 1.5 s, a sixth of the simulation).
// Profiled on ring allreduce over 1024 ranks (2 M transfers, 42 field
// bits): about 28 ms of CPU per run, against 55 ms for three global LSD
// passes of 14 bits (16,384 buckets filled at once, each write a cache
// miss); with the ranks written straight into the transfer records, two
// thirds of the time went to those writes. Returns false, having done
// nothing, when the key does not fit.
template <bool simple>
bool canonical_ranks_packed(const Schedule& s, Ranks& rank) {
  const TransferId T = s.num_transfers();
  // The keys and the sort's scratch space, not from the arena
  // (huge_alloc.hpp): freed before the run allocates its state, a cached
  // block would be given back by the run's first new block size, and the
  // next run would miss it and give back another in turn, every run
  // faulting in fresh pages. A mapped array goes back to the system when
  // dropped. (Default-initialised: not zeroed first.)
  ScratchVector<std::uint64_t> buf(2 * static_cast<std::size_t>(T));
  std::uint64_t* const key = buf.data();
  std::uint64_t lo[kKeyFields], hi[kKeyFields], f[kKeyFields];
  KeyLayout L;
  L.index_bits = bit_width(static_cast<std::uint64_t>(T - 1));
  // Every field's range: from the schedule's sizes when every transfer has
  // one destination and one range (ranks, blocks, two ops; any range that
  // holds the values gives the same order), else, or when those ranges make
  // the key wider than 64 bits, from a pass over the transfers.
  bool bounded = false;
  if (simple) {
    const auto ranks = static_cast<std::uint64_t>(s.num_ranks());
    const auto blocks = static_cast<std::uint64_t>(s.num_blocks());
    const std::uint64_t lo_of[kKeyFields] = {0, 0, 1, 0, 1, 0, 0};
    const std::uint64_t hi_of[kKeyFields] = {ranks - 1, ranks - 1, 1, blocks - 1, blocks, 1, 0};
    std::copy(lo_of, lo_of + kKeyFields, lo);
    std::copy(hi_of, hi_of + kKeyFields, hi);
    bounded = set_widths(lo, hi, L) && L.total() <= 64;
  }
  if (!bounded) {
    std::fill(lo, lo + kKeyFields, ~std::uint64_t{0});
    std::fill(hi, hi + kKeyFields, 0);
    for (TransferId t = 0; t < T; ++t) {
      if (!simple) key[t] = static_cast<std::uint64_t>(s.transfer_bytes(t));  // for the next pass
      key_fields_of<simple>(s, t, simple ? 0 : key[t], f);
      for (int i = 0; i < kKeyFields; ++i) {
        lo[i] = std::min(lo[i], f[i]);
        hi[i] = std::max(hi[i], f[i]);
      }
    }
    if (!set_widths(lo, hi, L)) return false;
  }
  std::uint64_t* const tmp = key + T;
  if (L.total() <= 64)
    sort_packed<simple, std::uint64_t>(s, L, key, tmp, rank);
  else
    sort_packed<simple, UInt128>(s, L, key, tmp, rank);
  return true;
}

// The canonical ranks when they fit canonical_ranks_packed(), into `rank`
// (rank[t] for t < T; left empty when they are the indices); false when
// they do not.
bool canonical_rank_array(const Schedule& s, Ranks& rank) {
  if (s.num_transfers() == 0) return true;
  const bool simple = s.dst_offsets().identity() && s.range_offsets().identity();
  return simple ? canonical_ranks_packed<true>(s, rank) : canonical_ranks_packed<false>(s, rank);
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
  // Refused before anything per transfer is allocated or computed.
  const bool computes = computes_routes(topo, net);
  refuse_too_many_stages(s, net, computes);
  if (computes) refuse_large_run_early(s, topo, net, p.place, opt);
  // The canonical order and the successor lists read only the schedule, so
  // on a large schedule they are made on two threads at once, before the
  // records (packetize), which take the ranks. Made beside the records, the
  // sort's keys and scratch (16 bytes per transfer) would raise the peak of
  // a run of single-packet transfers above the run's own state (ring
  // allreduce on ring(4096): records, keys and ranks 44 bytes per transfer,
  // the run 39). The future joins the thread however this function is left
  // (declared after what the thread writes, it is destroyed first).
  Ranks rank;
  auto order = [&s, &rank] {
    if (!canonical_rank_array(s, rank)) canonical_ranks_by_field(s, rank);
  };
  std::future<void> side;
  if (s.num_transfers() >= kParallelTransfers && std::thread::hardware_concurrency() > 1)
    side = std::async(std::launch::async, order);
  if (for_run && net.dependencies == Dependencies::complete) p.successors = successor_lists(s);
  if (side.valid())
    side.get();
  else
    order();
  const TransferId trie_transfers =
      packetize(s, topo, net, computes, rank.empty() ? nullptr : rank.data(), p);
  Ranks().swap(rank);
  // Bound the trie size before building it.
  const PacketCounts npackets{p.hot.empty() ? nullptr : &p.hot[0].sizes,
                              sizeof(TransferHot) / sizeof(std::uint32_t), p.sizes.shift};
  const std::int64_t stage_bound =
      trie_transfers > 0 || !computes
          ? count_route_stages(s, topo, net, p.place, npackets, computes)
          : 0;
  if (net.spray) check_spray_events(s, opt, p);
  if (s.has_switches() && net.switch_buffer_bytes > 0) check_switch_buffers(s, net);
  if (trie_transfers > 0)
    p.tries = build_stage_tries(s, topo, net, p.place, npackets, stage_bound, computes);
  count_events(opt, p);
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
