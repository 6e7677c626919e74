// Discrete-event simulation: see simulate.hpp for the model.
//
// Implementation notes.
//  * Every transfer is a stream over a prefix tree ("trie") of stages: the
//    union of its destinations' stage sequences. A unicast is a path.
//  * Stages are FCFS servers. Events are processed in time order, so when a
//    packet reaches a stage every packet that reached it earlier has already
//    been given its slot: the arriving packet's start is simply
//    max(arrival, stage free time). One event per packet per stage.
//  * Event ties are broken by (position of the packet's data in the vector,
//    canonical transfer rank, local trie node, kind): never by transfer
//    index, so that renumbering the transfers does not change any result.
#include "wafercoll/simulate/simulate.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "wafercoll/errors.hpp"

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
}

namespace {

constexpr std::int32_t kInjPort = -2;  // stage resolved to the source's injection channel
constexpr std::int32_t kEjPort = -3;   // stage resolved to the destination's ejection channel

// Allocator for the large per-stage, per-node and per-transfer arrays that the
// event loop reads in no particular order. Blocks of 2 MiB or more are
// aligned to 2 MiB and, on Linux, offered to the kernel for transparent huge
// pages: with hundreds of thousands of concurrent streams these arrays span
// hundreds of MiB, and with 4 KiB pages nearly every access would also miss
// the TLB. Smaller blocks come from operator new.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

template <typename T>
struct HugeAlloc {
  using value_type = T;
  HugeAlloc() = default;
  template <typename U>
  HugeAlloc(const HugeAlloc<U>&) {}
  static std::size_t rounded(std::size_t n) {
    return (n * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
  }
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T) / 2) throw std::bad_alloc();
    if (n * sizeof(T) < kHugePage) return static_cast<T*>(::operator new(n * sizeof(T)));
    void* p = std::aligned_alloc(kHugePage, rounded(n));
    if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded(n), MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < kHugePage) {
      ::operator delete(p);
    } else {
      std::free(p);
    }
  }
  template <typename U>
  bool operator==(const HugeAlloc<U>&) const { return true; }
  template <typename U>
  bool operator!=(const HugeAlloc<U>&) const { return false; }
};

template <typename T>
using BigVector = std::vector<T, HugeAlloc<T>>;

struct Node {
  std::int32_t resource;      // stage (link id, or port stage with one channel
                              // per port), kInjPort or kEjPort
  std::int32_t first_child;   // -1: none
  std::int32_t next_sibling;  // -1: none
  std::int32_t term;          // destination slot ending here, or -1
  std::int32_t owner;         // transfer whose trie holds it << 1 | 1 for a
                              // first stage of the stream (transfers < 2^26)
  // Filled by simulate(): order gates still closed on this node (dataflow).
  std::int32_t gate = 0;
  TransferId transfer() const { return owner >> 1; }
  bool top() const { return (owner & 1) != 0; }
};

enum : std::uint32_t { kArrive = 0, kDeliver = 1 };

constexpr int kCanonBits = 26;  // transfers < 2^26 (Schedule::kMaxTransfers)
constexpr std::uint64_t kMaxPos = (std::uint64_t{1} << (64 - kCanonBits)) - 1;

struct Event {
  Seconds t;
  std::uint64_t k1;  // (position of the packet's data) << 26 | canonical transfer rank
  // Cut-through: when the packet's head reached this stage. The service may
  // start later than the head (at t) so that it ends no earlier than the
  // packet's tail arrives; the head still moves on from `head`, so a slow
  // upstream link delays the tail, not the head, of every later stage.
  Seconds head;
  std::uint32_t k2;  // local node << 1 | kind
  std::int32_t node;
};

inline bool before(const Event& a, const Event& b) {
  if (a.t != b.t) return a.t < b.t;
  if (a.k1 != b.k1) return a.k1 < b.k1;
  return a.k2 < b.k2;
}

// Binary min-heap with replace_top: most events schedule a follow-up, which
// then costs one sift-down instead of a pop and a push.
class HeapQueue {
 public:
  bool empty() const { return h_.empty(); }
  const Event& top() const { return h_[0]; }
  std::size_t size() const { return h_.size(); }
  void push(const Event& e) {
    std::size_t i = h_.size();
    h_.push_back(e);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!before(e, h_[parent])) break;
      h_[i] = h_[parent];
      i = parent;
    }
    h_[i] = e;
  }
  void pop() {
    const Event last = h_.back();
    h_.pop_back();
    if (!h_.empty()) sift_down(last);
  }
  void replace_top(const Event& e) { sift_down(e); }

 private:
  void sift_down(const Event& e) {
    const std::size_t n = h_.size();
    std::size_t i = 0;
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && before(h_[c + 1], h_[c])) ++c;
      if (!before(h_[c], e)) break;
      h_[i] = h_[c];
      i = c;
    }
    h_[i] = e;
  }
  std::vector<Event> h_;
};

// Hash of a time by its bits (std::hash<double> goes through a byte-wise
// hash; times here are exact values, so equal times have equal bits, and
// -0.0 never occurs).
struct TimeHash {
  std::size_t operator()(Seconds t) const {
    std::uint64_t b;
    std::memcpy(&b, &t, sizeof b);
    return static_cast<std::size_t>((b * 0x9E3779B97F4A7C15ull) >> 32);
  }
};

// Events grouped by their exact time: a min-heap of the distinct pending
// times, one vector of events per time, sorted by the tie key when its time
// comes. Same order as HeapQueue, but when many events share a time (a
// machine whose costs are whole cycles, with many streams in lockstep) the
// heap holds a few times instead of every packet in flight.
class TimeBucketQueue {
 public:
  bool empty() const { return pos_ >= cur_.size() && extra_.empty() && times_.empty(); }
  std::size_t size() const { return (cur_.size() - pos_) + extra_.size() + pending_; }
  const Event& top() {
    ensure();
    return from_extra() ? extra_.front() : cur_[pos_];
  }
  void pop() {
    ensure();
    if (from_extra()) {
      std::pop_heap(extra_.begin(), extra_.end(), later_key);
      extra_.pop_back();
    } else {
      ++pos_;
    }
  }
  void replace_top(const Event& e) {
    pop();
    push(e);
  }
  // How many pushes opened a time of their own (not already queued).
  std::int64_t fresh_times() const { return fresh_times_; }
  void push(const Event& e) {
    if (active_ && e.t <= now_) {  // the time being drained (never earlier)
      // Usually the follow-up of the event just taken (same packet, next
      // stage) and so the new minimum: it goes back into the slot that event
      // left, keeping cur_ sorted from pos_.
      if (pos_ > 0 && (pos_ == cur_.size() || key_less(e, cur_[pos_]))) {
        cur_[--pos_] = e;
        return;
      }
      extra_.push_back(e);
      std::push_heap(extra_.begin(), extra_.end(), later_key);
      return;
    }
    // Most pushes go to one of a few times (the next hop, the next ramp): a
    // small direct-mapped cache of time -> bucket spares the hash lookup.
    const std::size_t slot = TimeHash{}(e.t) & (kCache - 1);
    if (cache_t_[slot] == e.t && cache_b_[slot] != kNone) {
      buckets_[cache_b_[slot]].push_back(e);
      ++pending_;
      return;
    }
    auto [it, fresh] = index_.try_emplace(e.t, 0u);
    if (fresh) {
      ++fresh_times_;
      if (free_.empty()) {
        it->second = static_cast<std::uint32_t>(buckets_.size());
        buckets_.emplace_back();
      } else {
        it->second = free_.back();
        free_.pop_back();
      }
      times_.push_back(e.t);
      std::push_heap(times_.begin(), times_.end(), std::greater<Seconds>());
    }
    buckets_[it->second].push_back(e);
    cache_t_[slot] = e.t;
    cache_b_[slot] = it->second;
    ++pending_;
  }

 private:
  static constexpr std::size_t kCache = 16;
  static constexpr std::uint32_t kNone = 0xffffffffu;
  static bool key_less(const Event& a, const Event& b) {
    return a.k1 != b.k1 ? a.k1 < b.k1 : a.k2 < b.k2;
  }
  static bool later_key(const Event& a, const Event& b) { return key_less(b, a); }
  bool from_extra() const {
    return !extra_.empty() && (pos_ >= cur_.size() || key_less(extra_.front(), cur_[pos_]));
  }
  void ensure() {
    if (pos_ < cur_.size() || !extra_.empty()) return;
    std::pop_heap(times_.begin(), times_.end(), std::greater<Seconds>());
    now_ = times_.back();
    times_.pop_back();
    const auto it = index_.find(now_);
    const std::uint32_t b = it->second;
    index_.erase(it);
    const std::size_t slot = TimeHash{}(now_) & (kCache - 1);
    if (cache_t_[slot] == now_) cache_b_[slot] = kNone;  // the bucket is reused
    cur_.swap(buckets_[b]);
    buckets_[b].clear();
    free_.push_back(b);
    pending_ -= cur_.size();
    pos_ = 0;
    active_ = true;
    if (!std::is_sorted(cur_.begin(), cur_.end(), key_less))
      std::sort(cur_.begin(), cur_.end(), key_less);
  }
  std::vector<Seconds> times_;
  std::unordered_map<Seconds, std::uint32_t, TimeHash> index_;
  std::vector<std::vector<Event>> buckets_;
  std::vector<std::uint32_t> free_;
  std::vector<Event> cur_, extra_;
  Seconds cache_t_[kCache] = {};
  std::uint32_t cache_b_[kCache] = {kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone,
                                     kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone};
  std::size_t pos_ = 0, pending_ = 0;
  std::int64_t fresh_times_ = 0;
  Seconds now_ = 0.0;
  bool active_ = false;
};

// The simulator's event queue: one of the two above (same order, different
// speed). Fixed per run, or adaptive: after a warm-up, time kTrial pushes
// with the current queue, then kTrial with the other, and keep the faster
// (the heap only when clearly faster). What is queued changes as a run goes
// on (a tree's first hops, then every stream in flight at once), so the
// trial is repeated after 4x as many pushes as the previous one: a few
// trials in all, whose cost (two trial windows and at most two moves of the
// queue) stays a small share of the run. A trial is skipped while more
// events are queued than a trial window pushes (moving them would cost more
// than the trial; a wafer's bucketed wavefront holds millions), and while
// the time buckets are in use and 7 in 8 pushes since the last check joined
// a time already queued (then grouping is what pays). Short of that extreme,
// how many events share a time does not tell the two apart (the cost of
// either depends on what is queued), so this measures. Both orders are the
// same, so the choice changes nothing in the results, only the speed.
class EventQueue {
 public:
  EventQueue(bool buckets, bool adaptive) : buckets_(buckets), adaptive_(adaptive) {}
  bool empty() const { return buckets_ ? tb_.empty() : heap_.empty(); }
  std::size_t size() const { return buckets_ ? tb_.size() : heap_.size(); }
  const Event& top() { return buckets_ ? tb_.top() : heap_.top(); }
  void push(const Event& e) {
    buckets_ ? tb_.push(e) : heap_.push(e);
    if (adaptive_ && ++pushes_ == next_check_) adapt();
  }
  void pop() { buckets_ ? tb_.pop() : heap_.pop(); }
  void replace_top(const Event& e) {
    buckets_ ? tb_.replace_top(e) : heap_.replace_top(e);
    if (adaptive_ && ++pushes_ == next_check_) adapt();
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::int64_t kWarm = std::int64_t{1} << 16;
  static constexpr std::int64_t kTrial = std::int64_t{1} << 16;
  static constexpr std::int64_t kGrowth = 4;  // pushes between trials grow 4x
  static constexpr double kHeapMargin = 1.15;  // the heap must be this much faster
  void adapt() {
    const auto now = Clock::now();
    switch (stage_++) {
      case 0: {  // time the current queue, unless the trial is not needed
        // Grouped, with 7 in 8 pushes since the last check joining a time
        // already queued: the buckets win (a wafer's whole cycles: over 99 %;
        // a clocked NoC's fractional packet times: 50-85 %, where the heap
        // can be twice as fast). Or more events queued than a trial window
        // pushes: moving them would cost more than the trial.
        const std::int64_t fresh = tb_.fresh_times();
        const bool shared = buckets_ && 8 * (fresh - fresh_mark_) < pushes_ - push_mark_;
        fresh_mark_ = fresh;
        push_mark_ = pushes_;
        if (shared || size() > static_cast<std::size_t>(kTrial)) {
          stage_ = 0;
          next_check_ = pushes_ * kGrowth;
          return;
        }
        next_check_ += kTrial;
        break;
      }
      case 1:  // then the other
        (buckets_ ? bucket_s_ : heap_s_) = std::chrono::duration<double>(now - mark_).count();
        buckets_ ? to_heap() : to_buckets();
        next_check_ += kTrial;
        break;
      default: {  // keep the faster; try again later
        (buckets_ ? bucket_s_ : heap_s_) = std::chrono::duration<double>(now - mark_).count();
        const bool heap_wins = heap_s_ * kHeapMargin <= bucket_s_;
        if (heap_wins && buckets_) to_heap();
        if (!heap_wins && !buckets_) to_buckets();
        stage_ = 0;
        next_check_ = pushes_ * kGrowth;
        return;
      }
    }
    mark_ = Clock::now();
  }
  // Moves every event, in order, and frees the emptied queue's storage.
  template <typename From, typename To>
  static void move_all(From& from, To& to) {
    while (!from.empty()) {
      to.push(from.top());
      from.pop();
    }
    from = From();
  }
  void to_heap() {
    move_all(tb_, heap_);
    buckets_ = false;
  }
  void to_buckets() {
    move_all(heap_, tb_);
    buckets_ = true;
  }
  bool buckets_;
  bool adaptive_;
  int stage_ = 0;
  std::int64_t pushes_ = 0, next_check_ = kWarm;
  Clock::time_point mark_;
  double bucket_s_ = 0.0, heap_s_ = 0.0;
  std::int64_t fresh_mark_ = 0, push_mark_ = 0;  // at the previous check
  HeapQueue heap_;
  TimeBucketQueue tb_;
};

// Everything the run needs that does not change while it runs.
struct Prepared {
  std::vector<NodeId> place;             // rank -> endpoint
  BigVector<Node> nodes;                 // all tries
  std::vector<std::int64_t> base;        // per transfer: first node; size T+1
  std::vector<std::int64_t> npackets;    // per transfer
  std::vector<Bytes> last_bytes;         // per transfer: size of its last packet
  std::vector<std::uint32_t> canon;      // per transfer
  // Per transfer: position of its first packet's data in the vector, in
  // packets (bytes when messages are not cut). Ties between packets that
  // reach a stage at the same time go by this position (plus the packet
  // index), so the same data cut into more or fewer transfers is served in
  // the same order.
  std::vector<std::uint64_t> key0;
  std::int64_t events = 0;
};

constexpr std::int64_t kMaxNodes = std::int64_t{1} << 27;
// Memory guards for what grows while the simulation runs (32 bytes per
// queued event; 16 per timeline interval, twice more to sort them).
constexpr std::size_t kMaxQueued = std::size_t{1} << 26;
constexpr std::int64_t kMaxTraceEvents = std::int64_t{1} << 25;  // 36 bytes each
constexpr std::size_t kMaxTimelineIntervals = std::size_t{1} << 26;

Prepared prepare(const Schedule& s, const Topology& topo, const NetworkModel& net,
                 const SimOptions& opt) {
  net.validate();
  Prepared p;
  const RankId P = s.num_ranks();
  const NodeId E = topo.num_endpoints();
  const LinkId L = topo.num_links();
  if (opt.placement.empty()) {
    require(P <= E, "the schedule has " + std::to_string(P) + " ranks but topology " +
                        topo.name() + " has only " + std::to_string(E) +
                        " endpoints; use a topology with at least as many endpoints");
    p.place.resize(P);
    std::iota(p.place.begin(), p.place.end(), 0);
  } else {
    require(static_cast<std::int64_t>(opt.placement.size()) == P,
            "placement must list one endpoint per rank (" + std::to_string(P) + "), got " +
                std::to_string(opt.placement.size()));
    std::vector<std::uint8_t> used(E, 0);
    for (RankId r = 0; r < P; ++r) {
      const NodeId e = opt.placement[r];
      require(e >= 0 && e < E, "placement[" + std::to_string(r) + "] = " + std::to_string(e) +
                                   " is not an endpoint of " + topo.name() + " (in [0, " +
                                   std::to_string(E) + "))");
      require(!used[e], "placement maps two ranks to endpoint " + std::to_string(e) +
                            "; ranks must run on distinct endpoints");
      used[e] = 1;
    }
    p.place = opt.placement;
  }
  if (!s.deps_point_backward()) topological_order(s);  // throws on a cycle

  const TransferId T = s.num_transfers();
  const std::int64_t slots = static_cast<std::int64_t>(s.dst_array().size());
  require(slots < std::numeric_limits<std::int32_t>::max(),
          "the schedule has too many destinations to simulate");
  const std::int64_t port_stages = net.ports > 0 ? 2 : 0;

  // Bound the trie size before building it.
  std::int64_t bound = 0;
  for (TransferId t = 0; t < T; ++t) {
    const NodeId a = p.place[s.src(t)];
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      const std::int32_t h = topo.hops(a, p.place[*d]);
      if (h < 0)
        throw std::invalid_argument("transfer " + std::to_string(t) + ": no route from rank " +
                                    std::to_string(s.src(t)) + " (endpoint " +
                                    std::to_string(a) + ") to rank " + std::to_string(*d) +
                                    " (endpoint " + std::to_string(p.place[*d]) + ") in " +
                                    topo.name());
      bound += h + port_stages;
    }
    if (bound > kMaxNodes)
      throw std::invalid_argument(
          "the schedule's routes have more than " + std::to_string(kMaxNodes) +
          " stages in all; simulating it would need too much memory");
  }

  p.nodes.reserve(static_cast<std::size_t>(bound));
  p.base.resize(static_cast<std::size_t>(T) + 1);
  p.npackets.resize(T);
  p.last_bytes.resize(T);
  std::vector<std::int32_t> seq;
  std::vector<LinkId> route;
  const Bytes M = net.packet_bytes;
  for (TransferId t = 0; t < T; ++t) {
    const std::int64_t b0 = static_cast<std::int64_t>(p.nodes.size());
    p.base[t] = b0;
    const Bytes S = s.transfer_bytes(t);
    const std::int64_t n = (M == 0 || S == 0) ? 1 : (S + M - 1) / M;
    if (n >= (std::int64_t{1} << 32))
      throw std::invalid_argument("transfer " + std::to_string(t) + " would be cut into " +
                                  std::to_string(n) +
                                  " packets; use a larger packet_bytes");
    p.npackets[t] = n;
    // Padded: every packet occupies M bytes on the wire (fixed-size
    // messages, as in BookSim), so a short transfer costs a whole packet.
    p.last_bytes[t] = (M == 0 || S == 0) ? S : net.pad_packets ? M : S - (n - 1) * M;
    const NodeId a = p.place[s.src(t)];
    std::int64_t slot = s.dst_offsets()[t];
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d, ++slot) {
      seq.clear();
      // With one channel per port the port stages are known now: stage
      // L + a (injection at a) and L + E + b (ejection at b).
      const bool fixed_ports = net.ports == 1;
      if (net.ports > 0)
        seq.push_back(fixed_ports ? static_cast<std::int32_t>(L + a) : kInjPort);
      route.clear();
      topo.append_route(a, p.place[*d], route);
      seq.insert(seq.end(), route.begin(), route.end());
      if (net.ports > 0)
        seq.push_back(fixed_ports ? static_cast<std::int32_t>(L + E + p.place[*d]) : kEjPort);
      // Walk the trie, creating what is missing. Children are searched by
      // resource; the ejection stage is never shared (one per destination).
      std::int32_t parent = -1;
      for (std::size_t i = 0; i < seq.size(); ++i) {
        const std::int32_t res = seq[i];
        std::int32_t c = -1;
        if (res != kEjPort && !(fixed_ports && res >= L + E)) {
          c = parent < 0 ? (p.nodes.size() > static_cast<std::size_t>(b0)
                                ? static_cast<std::int32_t>(b0)
                                : -1)
                         : p.nodes[parent].first_child;
          while (c >= 0 && p.nodes[c].resource != res) c = p.nodes[c].next_sibling;
        }
        if (c < 0) {
          if (p.nodes.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
            throw std::invalid_argument("too many stages to simulate");
          c = static_cast<std::int32_t>(p.nodes.size());
          Node nd{res, -1, -1, -1, (t << 1) | (parent < 0 ? 1 : 0)};
          if (parent < 0) {
            // Top-level siblings chain from the stream's first node.
            if (c != b0) {
              std::int32_t x = static_cast<std::int32_t>(b0);
              while (p.nodes[x].next_sibling >= 0) x = p.nodes[x].next_sibling;
              p.nodes.push_back(nd);
              p.nodes[x].next_sibling = c;
            } else {
              p.nodes.push_back(nd);
            }
          } else {
            nd.next_sibling = p.nodes[parent].first_child;
            p.nodes.push_back(nd);
            p.nodes[parent].first_child = c;
          }
        }
        parent = c;
      }
      p.nodes[parent].term = static_cast<std::int32_t>(slot);
    }
    p.events += n * (static_cast<std::int64_t>(p.nodes.size()) - b0);
  }
  p.base[T] = static_cast<std::int64_t>(p.nodes.size());
  if (p.events > opt.max_events)
    throw std::invalid_argument(
        "the simulation would take " + std::to_string(p.events) +
        " packet-stage events, more than max_events = " + std::to_string(opt.max_events) +
        "; use a larger packet_bytes (or raise max_events)");

  // Canonical order of the transfers, independent of their indices: by
  // (src, first destination, destination count, first block, last block, op,
  // bytes), exact duplicates by index. An LSD radix sort: stable passes of
  // 16-bit digits from the last field to the first, starting from index
  // order (which settles the duplicates); fields that take one value are
  // skipped. Linear in the transfers, where a comparison sort of 2 M keys
  // cost a quarter of a run.
  std::vector<TransferId> order(T);
  std::iota(order.begin(), order.end(), 0);
  {
    std::vector<TransferId> tmp(T);
    std::vector<std::uint64_t> field(T);
    std::vector<std::int64_t> count(std::size_t{1} << 16);
    auto pass_field = [&](auto get) {
      std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
      for (TransferId t = 0; t < T; ++t) {
        // Fields are >= 0 except op-like ones handled by the caller.
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
    };
    pass_field([&](TransferId t) { return s.transfer_bytes(t); });
    pass_field([&](TransferId t) { return static_cast<int>(s.op(t)); });
    pass_field([&](TransferId t) { return (s.ranges_end(t) - 1)->hi; });
    pass_field([&](TransferId t) { return s.ranges_begin(t)->lo; });
    pass_field([&](TransferId t) { return s.num_dsts(t); });
    pass_field([&](TransferId t) { return *s.dsts_begin(t); });
    pass_field([&](TransferId t) { return s.src(t); });
  }
  p.key0.resize(T);
  {
    std::vector<Bytes> prefix(static_cast<std::size_t>(s.num_blocks()) + 1, 0);
    for (BlockId b = 0; b < s.num_blocks(); ++b) prefix[b + 1] = prefix[b] + s.block_bytes()[b];
    for (TransferId t = 0; t < T; ++t) {
      const Bytes at = prefix[s.ranges_begin(t)->lo];
      // Packets when messages are cut; blocks otherwise (one packet each).
      p.key0[t] = static_cast<std::uint64_t>(M > 0 ? at / M : s.ranges_begin(t)->lo);
    }
  }
  p.canon.resize(T);
  for (TransferId i = 0; i < T; ++i) p.canon[order[i]] = static_cast<std::uint32_t>(i);
  return p;
}

}  // namespace

std::int64_t simulation_events(const Schedule& s, const Topology& topo,
                               const NetworkModel& net, const SimOptions& opt) {
  return prepare(s, topo, net, opt).events;
}

namespace {

// Per stage: everything the event loop reads or writes about it, in one
// place (one cache line per service instead of five arrays).
struct StageState {
  double inv_bw = 0.0, lat = 0.0, free_at = 0.0, busy = 0.0;
  Bytes bytes = 0;
};

// 40 bytes per transfer: nodes number below 2^27 (kMaxNodes), channels of a
// port below 1024.
struct TransferHot {
  std::int64_t npackets, last_bytes;
  std::uint64_t key0;
  std::int32_t base;
  std::int32_t inj_chan;  // injection channel once chosen, else -1
  std::uint32_t canon;
  std::int32_t stream_id;
};

// 24 bytes per destination.
struct SlotState {
  std::int64_t left, deliv;
  std::int32_t ej_chan;  // ejection channel once chosen, else -1
  NodeId endpoint;       // of the destination
};

struct Fifo {
  enum : std::uint32_t { kInline = 4 };
  Seconds buf[kInline];
  std::uint32_t head = 0, count = 0;  // ring over buf
  std::uint32_t spill_head = 0;       // first unread entry of *spill
  std::unique_ptr<std::vector<Seconds>> spill;  // entries after the inline ones
  bool empty() const { return count == 0; }
  Seconds front() const { return buf[head]; }
  bool spilled() const { return spill && spill_head < spill->size(); }
  void push_back(Seconds x) {
    if (count < kInline && !spilled()) {
      buf[(head + count++) % kInline] = x;
    } else {
      // The spill keeps its storage once drained: a stream that ran ahead
      // once tends to do so again.
      if (!spill) spill = std::make_unique<std::vector<Seconds>>();
      spill->push_back(x);
    }
  }
  void pop_front() {
    head = (head + 1) % kInline;
    --count;
    if (spilled()) {  // refill in order
      buf[(head + count++) % kInline] = (*spill)[spill_head++];
      if (spill_head == spill->size()) {
        spill->clear();
        spill_head = 0;
      }
    }
  }
};

struct StreamState {
  Fifo ready;                 // packet k can go from this time
  std::int32_t nq = 0;        // stream dependencies
  std::unique_ptr<std::vector<Fifo>> queues;  // one per dependency when nq > 1
                              // (else none: a single dependency's times are
                              // its ready times)
  std::int64_t next = -1;     // packet to inject; -1 not started
  Seconds pace = 0.0;         // first stage free again
};

struct ComputeUnit {
  Seconds free_at = 0.0, busy = 0.0;
};

// One run of the simulator, in three phases: the constructor and the
// prepare_* functions build the state (stages, transfers and destination
// slots, the dataflow edges), run() is the event loop, collect() turns the
// state into the SimResult.
class Simulation {
 public:
  Simulation(const Schedule& sched, const Topology& topology, const NetworkModel& model,
             const SimOptions& options)
      : s(sched),
        topo(topology),
        net(model),
        opt(options),
        p(prepare(sched, topology, model, options)),
        T(sched.num_transfers()),
        P(sched.num_ranks()),
        E(topology.num_endpoints()),
        L(topology.num_links()),
        K(model.ports),
        slot_transfer_dst(sched.dst_array()),
        // automatic: start with buckets and measure. A clock says nothing
        // about whether times coincide (a clocked NoC with 327.68 ns packets
        // has a time per event; the wafer's whole cycles share them).
        queue(options.queue != EventQueueKind::heap,
              options.queue == EventQueueKind::automatic) {
    if (opt.record_trace && p.events > kMaxTraceEvents)
      throw std::invalid_argument("a trace of " + std::to_string(p.events) +
                                  " packet-stage events is too large (limit " +
                                  std::to_string(kMaxTraceEvents) +
                                  "); trace a smaller run");
    prepare_stages();
    prepare_transfers();
    if (dataflow) prepare_dataflow();
    prepare_accounting();
  }

  void run();
  SimResult collect();

 private:
  void prepare_stages();
  void prepare_transfers();
  void prepare_dataflow();
  void prepare_accounting();

  const Schedule& s;
  const Topology& topo;
  const NetworkModel& net;
  const SimOptions& opt;
  Prepared p;
  const TransferId T;
  const RankId P;
  const NodeId E;
  const LinkId L;
  const std::int32_t K;
  // Resources: links, then E*K injection channels, then E*K ejection channels.
  std::int64_t R = 0;
  BigVector<StageState> stage;
  bool saf = false, uniform_bw = true;  // uniform: every stage has the same bandwidth
  Bytes M = 0, F = 0;
  double gamma = 0.0, copy_cost = 0.0;
  bool dataflow = false;
  // Per transfer / per destination slot state.
  std::vector<std::int32_t> pending, dst_left;
  std::vector<Seconds> ready, finish;
  // Per transfer, what the event loop touches for every packet, together.
  BigVector<TransferHot> hot;
  // Per destination slot, what every delivered packet touches, together:
  // packets still to be processed (left) and delivered (deliv), and the
  // ejection channel once chosen.
  std::int64_t S_slots = 0;
  BigVector<SlotState> slot;
  const std::vector<RankId>& slot_transfer_dst;
  Successors succ;
  // Dataflow: stream forwarding (StreamState), the edges by kind in CSR form.
  BigVector<StreamState> streams;
  std::vector<std::int64_t> stream_off;                          // by d slot
  std::vector<std::pair<TransferId, std::int32_t>> stream_list;  // (t, queue)
  std::vector<std::int64_t> comp_off, data_off, gate_off;
  std::vector<TransferId> comp_list, data_list;
  std::vector<std::int64_t> gate_list;
  // Per trie node: order gates still closed, and the list of packets parked
  // there meanwhile (an index into parked, -1 for none).
  std::vector<std::int32_t> park_of;  // only when parking
  std::vector<std::vector<Event>> parked;
  std::vector<std::int32_t> parked_free;
  // Accounting: the result being filled, compute units, the link timeline
  // (per link the open busy interval, closed ones in a list).
  SimResult res;
  BigVector<ComputeUnit> cu;
  std::vector<double> open_a, open_b;
  std::vector<std::pair<double, double>> closed;
  // Per ejection channel, whether a transfer has entered it (switch overhead).
  std::vector<std::uint8_t> ej_used;
  EventQueue queue;
  bool top_consumed = true;  // whether the event being processed left the queue
  TransferId completed = 0;
};

void Simulation::prepare_stages() {
  // Resources: links, then E*K injection channels, then E*K ejection channels.
  R = static_cast<std::int64_t>(L) + 2 * static_cast<std::int64_t>(E) * K;
  stage.resize(static_cast<std::size_t>(R));
  std::vector<double> fastest_out, fastest_in;
  if (K > 0 && net.port_bandwidth_Bps == 0.0 && net.bandwidth_Bps == 0.0) {
    fastest_out.assign(E, 0.0);
    fastest_in.assign(E, 0.0);
  }
  for (LinkId l = 0; l < L; ++l) {
    const Link lk = topo.link(l);
    const double bw = net.bandwidth_Bps > 0.0 ? net.bandwidth_Bps : lk.bandwidth_Bps;
    stage[l].inv_bw = 1.0 / bw;
    stage[l].lat = lk.latency_s + net.hop_latency_s;
    if (!fastest_out.empty()) {
      if (topo.is_endpoint(lk.src)) fastest_out[lk.src] = std::max(fastest_out[lk.src], bw);
      if (topo.is_endpoint(lk.dst)) fastest_in[lk.dst] = std::max(fastest_in[lk.dst], bw);
    }
  }
  if (K > 0) {
    for (NodeId e = 0; e < E; ++e) {
      double bin = net.port_bandwidth_Bps > 0.0 ? net.port_bandwidth_Bps : net.bandwidth_Bps;
      double bout = bin;
      if (bin == 0.0) {
        bout = fastest_out[e] > 0.0 ? fastest_out[e] : 1.0;
        bin = fastest_in[e] > 0.0 ? fastest_in[e] : 1.0;
      }
      for (std::int32_t c = 0; c < K; ++c) {
        const std::int64_t ri = L + static_cast<std::int64_t>(e) * K + c;
        const std::int64_t re = L + static_cast<std::int64_t>(E) * K + ri - L;
        stage[ri].inv_bw = 1.0 / bout;
        stage[re].inv_bw = 1.0 / bin;
        stage[ri].lat = stage[re].lat = net.port_latency_s;
      }
    }
  }

  saf = net.switching == Switching::store_and_forward;
  uniform_bw = true;  // every stage has the same bandwidth
  for (const StageState& st : stage) uniform_bw = uniform_bw && st.inv_bw == stage.front().inv_bw;
  M = net.packet_bytes;
  F = net.flit_bytes;
  gamma = net.gamma_s_per_byte;
  if (net.switch_overhead_s > 0.0) ej_used.assign(static_cast<std::size_t>(E) * K, 0);
}

void Simulation::prepare_transfers() {
  // Per transfer / per destination slot state. hot takes over the prepared
  // per-transfer arrays, which are released before the rest is allocated.
  hot.resize(static_cast<std::size_t>(T));
  for (TransferId t = 0; t < T; ++t)
    hot[t] = TransferHot{p.npackets[t], p.last_bytes[t], p.key0[t],
                         static_cast<std::int32_t>(p.base[t]), -1, p.canon[t], -1};
  std::vector<std::int64_t>().swap(p.npackets);
  std::vector<Bytes>().swap(p.last_bytes);
  std::vector<std::uint64_t>().swap(p.key0);
  std::vector<std::uint32_t>().swap(p.canon);
  pending.assign(T, 0);
  ready.assign(T, 0.0);
  finish.assign(T, 0.0);
  dst_left.assign(T, 0);
  S_slots = static_cast<std::int64_t>(s.dst_array().size());
  slot.resize(static_cast<std::size_t>(S_slots));
  for (TransferId t = 0; t < T; ++t) {
    pending[t] = static_cast<std::int32_t>(s.num_deps(t));
    dst_left[t] = static_cast<std::int32_t>(s.num_dsts(t));
    for (std::int64_t i = s.dst_offsets()[t]; i < s.dst_offsets()[t + 1]; ++i)
      slot[i] = SlotState{hot[t].npackets, hot[t].npackets, -1, p.place[s.dst_array()[i]]};
  }
  copy_cost = net.copy_s_per_byte;
  dataflow = net.dependencies == Dependencies::dataflow;
  if (!dataflow) succ = successors(s);  // dataflow releases through its own edge lists
}

void Simulation::prepare_dataflow() {
  // Dataflow mode: classify every dependency edge d -> t (see simulate.hpp).
  // complete edges release t when d completes; data edges when d's slot for
  // src(t) is delivered; order edges (a shared destination, no data) gate
  // t's stages: a packet of t enters a stage that d also uses only after
  // d's last packet has entered it (routers keep the streams in order; a
  // stream held at one router holds everything behind it).
  auto slot_of = [&](TransferId t, RankId r) -> std::int64_t {
    for (std::int64_t i = s.dst_offsets()[t]; i < s.dst_offsets()[t + 1]; ++i)
      if (s.dst_array()[i] == r) return i;
    return -1;
  };
  auto resource_key = [&](TransferId t, std::int64_t node) -> std::int64_t {
    const Node& nd = p.nodes[node];
    if (nd.resource >= 0) return nd.resource;
    if (nd.resource == kInjPort) return -2 - 2 * std::int64_t{p.place[s.src(t)]};
    return -3 - 2 * std::int64_t{p.place[s.dst_array()[nd.term]]};
  };
  // Stream forwarding (dataflow): t forwards d's packets one by one when it
  // sends exactly the blocks d delivered to its source, in as many packets,
  // from a single first stage. Per such t: the delivery times of d's packets
  // not yet matched by every stream dependency, and the packets ready to go.
  // A first-in first-out list of times that reuses its storage once drained
  // (std::deque would allocate a 512-byte block per stream).
  // A FIFO of times that lives inside its owner while it holds at most
  // kInline entries (the usual case: a stream rarely runs more than a few
  // packets ahead), so a stream's state is one contiguous record.


    std::vector<std::pair<TransferId, TransferId>> comp_e;      // (d, t)
    std::vector<std::pair<std::int64_t, TransferId>> data_e;    // (d slot, t)
    std::vector<std::pair<std::int64_t, std::int64_t>> gate_e;  // (d node, t node)
    std::vector<std::pair<std::int64_t, std::pair<TransferId, std::int32_t>>> stream_e;
    // At most one stream per transfer: reserving that much address space
    // (touched only as streams are made) spares the copies and fresh pages
    // of repeated growth.
    streams.reserve(static_cast<std::size_t>(T));
    std::vector<std::pair<std::int64_t, std::int64_t>> d_nodes;  // (key, node of d)
    for (TransferId t = 0; t < T; ++t) {
      std::int64_t start_gates = 0;
      for (const TransferId* dp = s.deps_begin(t); dp != s.deps_end(t); ++dp) {
        const TransferId d = *dp;
        const std::int64_t data_slot = slot_of(d, s.src(t));
        if (data_slot >= 0) {  // d delivered data to t's source
          const bool same_blocks =
              s.ranges_end(d) - s.ranges_begin(d) == s.ranges_end(t) - s.ranges_begin(t) &&
              std::equal(s.ranges_begin(d), s.ranges_end(d), s.ranges_begin(t),
                         [](const BlockRange& a, const BlockRange& b) {
                           return a.lo == b.lo && a.hi == b.hi;
                         });
          const bool one_top = p.nodes[p.base[t]].next_sibling < 0;
          if (same_blocks && one_top && hot[d].npackets == hot[t].npackets &&
              hot[t].npackets > 1) {
            if (hot[t].stream_id < 0) {
              hot[t].stream_id = static_cast<std::int32_t>(streams.size());
              streams.emplace_back();
            }
            StreamState& st = streams[hot[t].stream_id];
            stream_e.emplace_back(data_slot, std::make_pair(t, st.nq++));
            if (st.nq > 1) {
              if (!st.queues) st.queues = std::make_unique<std::vector<Fifo>>();
              st.queues->resize(static_cast<std::size_t>(st.nq));
            }
            continue;
          }
          data_e.emplace_back(data_slot, t);
          ++start_gates;
          continue;
        }
        bool shared = false;
        for (const RankId* x = s.dsts_begin(t); !shared && x != s.dsts_end(t); ++x)
          shared = slot_of(d, *x) >= 0;
        if (!shared) {
          comp_e.emplace_back(d, t);
          ++start_gates;
          continue;
        }
        d_nodes.clear();
        for (std::int64_t n = p.base[d]; n < p.base[d + 1]; ++n)
          d_nodes.emplace_back(resource_key(d, n), n);
        std::sort(d_nodes.begin(), d_nodes.end());  // a route's stages are distinct
        for (std::int64_t n = p.base[t]; n < p.base[t + 1]; ++n) {
          const std::int64_t key = resource_key(t, n);
          auto it = std::lower_bound(d_nodes.begin(), d_nodes.end(),
                                     std::make_pair(key, std::int64_t{-1}));
          if (it == d_nodes.end() || it->first != key) continue;
          gate_e.emplace_back(it->second, n);
          ++p.nodes[n].gate;
        }
      }
      pending[t] = static_cast<std::int32_t>(start_gates);
    }
    // Edges by their first element, by counting sort. Edges were generated
    // in increasing order of their second element (the loop over t), so each
    // list comes out sorted as a full sort would leave it.
    auto csr = [](auto& edges, std::int64_t n, std::vector<std::int64_t>& off, auto& list) {
      off.assign(static_cast<std::size_t>(n) + 1, 0);
      list.resize(edges.size());
      for (const auto& e : edges) ++off[e.first + 1];
      for (std::int64_t i = 0; i < n; ++i) off[i + 1] += off[i];
      std::vector<std::int64_t> next(off.begin(), off.end() - 1);
      for (const auto& e : edges) list[next[e.first]++] = e.second;
      edges.clear();
      edges.shrink_to_fit();
    };
    csr(comp_e, T, comp_off, comp_list);
    csr(data_e, S_slots, data_off, data_list);
    csr(stream_e, S_slots, stream_off, stream_list);
    csr(gate_e, static_cast<std::int64_t>(p.nodes.size()), gate_off, gate_list);
}

void Simulation::prepare_accounting() {
  res.rank_finish_s.assign(P, 0.0);
  cu.resize(gamma > 0.0 || copy_cost > 0.0 ? static_cast<std::size_t>(E) : 0);

  // Timeline: per link the open busy interval, closed ones in a list.
  if (opt.record_timeline) {
    open_a.assign(L, -1.0);
    open_b.assign(L, -1.0);
  }
}

void Simulation::run() {
  // The packet index of an event: its data position minus its transfer's
  // first (positions saturate only beyond 2^38 packets, which max_events
  // refuses long before).
  auto packet_of = [&](const Event& e) {
    return static_cast<std::int64_t>((e.k1 >> kCanonBits) -
                                     hot[p.nodes[e.node].transfer()].key0);
  };
  auto push = [&](Seconds t, std::int64_t packet, TransferId tr, std::int32_t node,
                  std::uint32_t kind, Seconds head) {
    const std::uint64_t pos = std::min(hot[tr].key0 + static_cast<std::uint64_t>(packet), kMaxPos);
    const Event e{t, (pos << kCanonBits) | hot[tr].canon, head,
                  (static_cast<std::uint32_t>(node - hot[tr].base) << 1) | kind, node};
    if (!top_consumed) {
      queue.replace_top(e);
      top_consumed = true;
    } else {
      if (queue.size() >= kMaxQueued)
        throw std::invalid_argument(
            "more than " + std::to_string(kMaxQueued) +
            " packets are queued in the network at once (2 GiB of events); "
            "use a larger packet_bytes");
      queue.push(e);
    }
  };
  // Inject the next packet of a forwarding transfer once it is started, its
  // first stage has let the previous packet go, and the packet has arrived.
  auto try_inject = [&](TransferId t) {
    StreamState& st = streams[hot[t].stream_id];
    if (st.next < 0 || st.next >= hot[t].npackets || st.ready.empty()) return;
    const Seconds go = std::max(st.pace, st.ready.front());
    push(go, st.next, t, static_cast<std::int32_t>(hot[t].base), kArrive, go);
    st.ready.pop_front();
    st.next = -2;  // in flight until it leaves the first stage
  };
  auto start = [&](TransferId t) {
    const Seconds a = ready[t] + net.alpha_s;
    res.packets += hot[t].npackets;
    if (dataflow && hot[t].stream_id >= 0) {
      StreamState& st = streams[hot[t].stream_id];
      st.next = 0;
      st.pace = a;
      try_inject(t);
      return;
    }
    for (std::int32_t c = static_cast<std::int32_t>(p.base[t]); c >= 0; c = p.nodes[c].next_sibling)
      push(a, 0, t, c, kArrive, a);
  };
  auto stream_delivered = [&](std::int64_t sl, Seconds when) {
    for (std::int64_t i = stream_off[sl]; i < stream_off[sl + 1]; ++i) {
      const auto [t, q] = stream_list[i];
      StreamState& st = streams[hot[t].stream_id];
      if (st.nq == 1) {
        st.ready.push_back(when);
        if (st.next >= 0) try_inject(t);
        continue;
      }
      std::vector<Fifo>& queues = *st.queues;
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
  };
  auto release = [&](TransferId x, Seconds when) {
    ready[x] = std::max(ready[x], when);
    if (--pending[x] == 0) start(x);
  };
  auto complete = [&](TransferId t) {
    ++completed;
    res.time_s = std::max(res.time_s, finish[t]);
    if (dataflow) {
      for (std::int64_t i = comp_off[t]; i < comp_off[t + 1]; ++i) release(comp_list[i], finish[t]);
    } else {
      for (std::int64_t i = succ.offsets[t]; i < succ.offsets[t + 1]; ++i)
        release(succ.list[i], finish[t]);
    }
  };
  auto delivered = [&](std::int64_t sl, Seconds when) {  // dataflow only
    if (--slot[sl].deliv != 0) return;
    for (std::int64_t i = data_off[sl]; i < data_off[sl + 1]; ++i)
      release(data_list[i], when);
  };
  auto open_gates = [&](std::int64_t node, Seconds when) {  // dataflow only
    for (std::int64_t i = gate_off[node]; i < gate_off[node + 1]; ++i) {
      const std::int64_t u = gate_list[i];
      if (--p.nodes[u].gate != 0 || park_of.empty() || park_of[u] < 0) continue;
      std::int32_t& park = park_of[u];
      for (const Event& e : parked[park])
        push(std::max(e.t, when), packet_of(e), p.nodes[e.node].transfer(), e.node, kArrive,
             std::max(e.head, when));
      parked[park].clear();
      parked_free.push_back(park);
      park = -1;
    }
  };
  auto packet_done = [&](TransferId t, std::int64_t sl, Seconds when) {
    if (--slot[sl].left != 0) return;
    const RankId d = slot_transfer_dst[sl];
    res.rank_finish_s[d] = std::max(res.rank_finish_s[d], when);
    finish[t] = std::max(finish[t], when);
    if (--dst_left[t] == 0) complete(t);
  };
  auto pick_channel = [&](std::int64_t first) {
    std::int64_t best = first;
    for (std::int32_t c = 1; c < K; ++c)
      if (stage[first + c].free_at < stage[best].free_at) best = first + c;
    return best;
  };

  for (TransferId t = 0; t < T; ++t)
    if (pending[t] == 0) start(t);

  while (!queue.empty()) {
    if (!top_consumed) queue.pop();  // the previous event scheduled nothing
    if (queue.empty()) break;
    const Event ev = queue.top();
    top_consumed = false;
    const Node& nd = p.nodes[ev.node];
    const TransferId t = nd.transfer();
    const std::int64_t k = packet_of(ev);
    const Bytes m = (k == hot[t].npackets - 1) ? hot[t].last_bytes : M;
    if ((ev.k2 & 1u) == kDeliver) {
      const NodeId e = p.place[slot_transfer_dst[nd.term]];
      const Seconds cs = std::max(ev.t, cu[e].free_at);
      const Seconds dur =
          (s.op(t) == Op::reduce ? gamma : copy_cost) * static_cast<double>(m);
      cu[e].free_at = cs + dur;
      cu[e].busy += dur;
      packet_done(t, nd.term, cs + dur);
      continue;
    }
    if (dataflow && nd.gate > 0) {
      // Waits for an earlier stream on this stage.
      if (park_of.empty()) park_of.assign(p.nodes.size(), -1);
      std::int32_t& park = park_of[ev.node];
      if (park < 0) {
        if (parked_free.empty()) {
          park = static_cast<std::int32_t>(parked.size());
          parked.emplace_back();
        } else {
          park = parked_free.back();
          parked_free.pop_back();
        }
      }
      parked[park].push_back(ev);
      continue;
    }
    std::int64_t r = nd.resource;
    Seconds avail = 0.0;  // the stage is free from: free_at, plus a switch
    if (r == kInjPort) {
      const std::int64_t first = L + static_cast<std::int64_t>(p.place[s.src(t)]) * K;
      if (hot[t].inj_chan < 0) hot[t].inj_chan = static_cast<std::int32_t>(pick_channel(first) - first);
      r = first + hot[t].inj_chan;
    } else if (r == kEjPort) {
      const std::int64_t first =
          L + static_cast<std::int64_t>(E) * K +
          static_cast<std::int64_t>(p.place[slot_transfer_dst[nd.term]]) * K;
      std::int32_t& ej = slot[nd.term].ej_chan;
      if (ej < 0) ej = static_cast<std::int32_t>(pick_channel(first) - first);
      r = first + ej;
    }
    const std::int64_t ej_first = L + static_cast<std::int64_t>(E) * K;
    if (k == 0 && !ej_used.empty() && r >= ej_first) {
      // A transfer's first packet (packets enter a stage in order) at an
      // ejection channel: a switch if another transfer came in before.
      std::uint8_t& used = ej_used[static_cast<std::size_t>(r - ej_first)];
      if (used) avail = net.switch_overhead_s;
      used = 1;
    }
    avail += stage[r].free_at;
    const Bytes w = F > 0 ? (m + F - 1) / F * F : m;
    const double ib = stage[r].inv_bw;
    const Seconds st = std::max(ev.t, avail);
    const Seconds hs = std::max(ev.head, avail);  // the head moves on
    const Seconds dur = static_cast<double>(w) * ib;
    const Seconds fin = st + dur;
    stage[r].free_at = fin;
    stage[r].busy += dur;
    stage[r].bytes += m;
    if ((++res.events & (kInterruptStride - 1)) == 0) poll_interrupt();
    if (opt.record_trace) {
      res.trace_transfer.push_back(t);
      res.trace_packet.push_back(k);
      res.trace_stage.push_back(r);
      res.trace_start_s.push_back(st);
      res.trace_finish_s.push_back(fin);
    }
    if (opt.record_timeline && r < L && dur > 0.0) {
      if (open_b[r] == st) {
        open_b[r] = fin;
      } else {
        if (open_b[r] > open_a[r]) {
          if (closed.size() >= kMaxTimelineIntervals)
            throw std::invalid_argument(
                "the busy-link timeline has more than " +
                std::to_string(kMaxTimelineIntervals) +
                " separate intervals; simulate without timeline=True or with a "
                "larger packet_bytes");
          closed.emplace_back(open_a[r], open_b[r]);
        }
        open_a[r] = st;
        open_b[r] = fin;
      }
    }
    if (dataflow && k == hot[t].npackets - 1) open_gates(ev.node, st);
    if (nd.top()) {
      if (dataflow && hot[t].stream_id >= 0) {
        StreamState& sst = streams[hot[t].stream_id];
        sst.pace = fin;
        sst.next = k + 1;
        try_inject(t);
      }
      if (k + 1 < hot[t].npackets) {
        if (!(dataflow && hot[t].stream_id >= 0)) push(fin, k + 1, t, ev.node, kArrive, fin);
      } else {
        const RankId src = s.src(t);
        res.rank_finish_s[src] = std::max(res.rank_finish_s[src], fin);
      }
    }
    const Seconds l = stage[r].lat;
    for (std::int32_t c = nd.first_child; c >= 0; c = p.nodes[c].next_sibling) {
      Seconds a;
      if (saf) {
        a = fin + l;
      } else {
        double ibn = ib;  // the next stage's, when stages differ
        if (!uniform_bw) {
          const std::int32_t cr = p.nodes[c].resource;
          ibn = cr >= 0 ? stage[cr].inv_bw  // else an ejection channel, all alike per endpoint
                        : stage[L + (static_cast<std::int64_t>(E) +
                                     p.place[slot_transfer_dst[p.nodes[c].term]]) * K].inv_bw;
        }
        const Seconds head = hs + l + (F > 0 ? static_cast<double>(F) * ib : 0.0);
        a = std::max(head, fin + l - static_cast<double>(w) * ibn);
        push(a, k, t, c, kArrive, head);
        continue;
      }
      push(a, k, t, c, kArrive, a);
    }
    if (nd.term >= 0) {
      const Seconds d = fin + l;
      if (dataflow) {
        stream_delivered(nd.term, d);
        delivered(nd.term, d);
      }
      const double cost = s.op(t) == Op::reduce ? gamma : copy_cost;
      if (cost > 0.0 && K == 1) {
        // One ejection channel: packets reach this endpoint in the order
        // they are processed here, so its compute unit can be booked now.
        const NodeId e = slot[nd.term].endpoint;
        const Seconds cs = std::max(d, cu[e].free_at);
        const Seconds dur = cost * static_cast<double>(m);
        cu[e].free_at = cs + dur;
        cu[e].busy += dur;
        packet_done(t, nd.term, cs + dur);
      } else if (cost > 0.0) {
        push(d, k, t, ev.node, kDeliver, d);
      } else {
        packet_done(t, nd.term, d);
      }
    }
  }
  if (completed != T)
    throw std::logic_error("simulation ended with unfinished transfers");

}

SimResult Simulation::collect() {
  res.compute_busy_s.assign(E, 0.0);
  for (NodeId e = 0; e < static_cast<NodeId>(cu.size()); ++e) res.compute_busy_s[e] = cu[e].busy;
  res.link_busy_s.resize(L);
  res.link_bytes.resize(L);
  for (LinkId l = 0; l < L; ++l) {
    res.link_busy_s[l] = stage[l].busy;
    res.link_bytes[l] = stage[l].bytes;
  }
  res.injection_busy_s.assign(E, 0.0);
  res.ejection_busy_s.assign(E, 0.0);
  for (NodeId e = 0; e < E && K > 0; ++e)
    for (std::int32_t c = 0; c < K; ++c) {
      res.injection_busy_s[e] += stage[L + static_cast<std::int64_t>(e) * K + c].busy;
      res.ejection_busy_s[e] += stage[L + static_cast<std::int64_t>(E + e) * K + c].busy;
    }
  if (opt.record_transfers) {
    res.transfer_ready_s = std::move(ready);
    res.transfer_finish_s = std::move(finish);
  }
  if (opt.record_timeline) {
    for (LinkId l = 0; l < L; ++l)
      if (open_b[l] > open_a[l]) closed.emplace_back(open_a[l], open_b[l]);
    std::vector<std::pair<double, int>> marks;
    marks.reserve(2 * closed.size());
    for (const auto& [a, b] : closed) {
      marks.emplace_back(a, +1);
      marks.emplace_back(b, -1);
    }
    std::sort(marks.begin(), marks.end());
    res.timeline_t.push_back(0.0);
    res.timeline_busy.push_back(0);
    std::int32_t cur = 0;
    for (const auto& [x, dlt] : marks) {
      cur += dlt;
      if (x == res.timeline_t.back()) {
        res.timeline_busy.back() = cur;
      } else {
        res.timeline_t.push_back(x);
        res.timeline_busy.push_back(cur);
      }
    }
    if (res.timeline_t.back() < res.time_s) {
      res.timeline_t.push_back(res.time_s);
      res.timeline_busy.push_back(0);
    }
  }
  return std::move(res);
}

}  // namespace

SimResult simulate(const Schedule& s, const Topology& topo, const NetworkModel& net,
                   const SimOptions& opt) {
  Simulation sim(s, topo, net, opt);
  sim.run();
  return sim.collect();
}

}  // namespace wafercoll
