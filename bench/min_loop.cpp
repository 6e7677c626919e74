// The limit for wafercoll's simulator: a plain binary-heap, cut-through
// event loop over a schedule dumped by bench/min_loop.py (one destination
// per transfer, dependencies that wait for completion, one bandwidth and
// latency per link, no ports). It performs the same packet-stage events as
// wafercoll.simulate under that model and prints the simulated time, the
// event count and the loop's wall time (reading the file is not timed).
//
//   c++ -O3 -std=c++17 bench/min_loop.cpp -o min_loop && ./min_loop FILE
//
// File (little-endian): int64 T, L, R, D, packet_bytes; double alpha_s;
// int64 bytes[T], route_off[T+1]; int32 route[R]; int64 succ_off[T+1];
// int32 succ[D]; int32 deps[T]; double inv_bw[L], lat[L].
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <queue>
#include <vector>

namespace {

struct Event {
  double time, head;
  std::int64_t packet;
  std::int32_t transfer, hop;
};
struct Later {  // min-heap by time, then transfer, packet, hop
  bool operator()(const Event& a, const Event& b) const {
    if (a.time != b.time) return a.time > b.time;
    if (a.transfer != b.transfer) return a.transfer > b.transfer;
    if (a.packet != b.packet) return a.packet > b.packet;
    return a.hop > b.hop;
  }
};

template <typename T>
std::vector<T> read(std::FILE* f, std::int64_t n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  if (n > 0 && std::fread(v.data(), sizeof(T), v.size(), f) != v.size()) throw 1;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::FILE* f = std::fopen(argv[1], "rb");
  if (f == nullptr) return 2;
  const auto head = read<std::int64_t>(f, 5);
  const std::int64_t T = head[0], L = head[1], R = head[2], D = head[3], M = head[4];
  const double alpha = read<double>(f, 1)[0];
  const auto bytes = read<std::int64_t>(f, T);
  const auto route_off = read<std::int64_t>(f, T + 1);
  const auto route = read<std::int32_t>(f, R);
  const auto succ_off = read<std::int64_t>(f, T + 1);
  const auto succ = read<std::int32_t>(f, D);
  auto pending = read<std::int32_t>(f, T);
  const auto inv_bw = read<double>(f, L);
  const auto lat = read<double>(f, L);
  std::fclose(f);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> free_at(static_cast<std::size_t>(L), 0.0), ready(T, 0.0);
  std::vector<std::int64_t> left(T);
  std::priority_queue<Event, std::vector<Event>, Later> q;
  auto packets = [&](std::int32_t t) { return M > 0 && bytes[t] > 0 ? (bytes[t] + M - 1) / M : 1; };
  auto size = [&](std::int32_t t, std::int64_t k) {
    return M == 0 || k + 1 < packets(t) ? (M == 0 ? bytes[t] : M) : bytes[t] - (packets(t) - 1) * M;
  };
  auto start = [&](std::int32_t t) {
    left[t] = packets(t);
    const double a = ready[t] + alpha;
    q.push(Event{a, a, 0, t, 0});
  };
  for (std::int32_t t = 0; t < T; ++t)
    if (pending[t] == 0) start(t);
  double end_time = 0.0;
  std::int64_t events = 0;
  while (!q.empty()) {
    const Event e = q.top();
    q.pop();
    ++events;
    const std::int32_t t = e.transfer;
    const std::int64_t hops = route_off[t + 1] - route_off[t];
    const std::int32_t link = route[route_off[t] + e.hop];
    const double m = static_cast<double>(size(t, e.packet));
    const double st = std::max(e.time, free_at[link]);
    const double hs = std::max(e.head, free_at[link]);
    const double fin = st + m * inv_bw[link];
    free_at[link] = fin;
    if (e.hop == 0 && e.packet + 1 < packets(t)) q.push(Event{fin, fin, e.packet + 1, t, 0});
    if (e.hop + 1 < hops) {
      const std::int32_t next = route[route_off[t] + e.hop + 1];
      const double h = hs + lat[link];
      q.push(Event{std::max(h, fin + lat[link] - m * inv_bw[next]), h, e.packet, t, e.hop + 1});
      continue;
    }
    const double done = fin + lat[link];
    ready[t] = std::max(ready[t], done);  // reused as the finish time
    if (--left[t] != 0) continue;
    end_time = std::max(end_time, ready[t]);
    for (std::int64_t i = succ_off[t]; i < succ_off[t + 1]; ++i) {
      const std::int32_t s = succ[i];
      ready[s] = std::max(ready[s], ready[t]);
      if (--pending[s] == 0) start(s);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"time_s\": %.17g, \"events\": %lld, \"wall_s\": %.6f}\n", end_time,
              static_cast<long long>(events), wall);
  return 0;
}
