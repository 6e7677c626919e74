// Spatial metrics of a schedule: see metrics.hpp for the definitions.
//
// Both functions walk every route once. The per-transfer union of routes
// (a multicast crosses a shared link once) is kept with a stamp per link
// rather than a set: the stamp changes per transfer, so nothing needs
// clearing between transfers.
#include "wafercoll/analysis/metrics.hpp"
#include "wafercoll/units.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace wafercoll {

namespace {

// Endpoint of every rank: ``placement`` checked, or rank r on endpoint r.
std::vector<NodeId> resolve_placement(const Schedule& s, const Topology& topo,
                                      const std::vector<NodeId>& placement) {
  const RankId P = s.num_ranks();
  std::vector<NodeId> place = placement;
  if (place.empty()) {
    if (P > topo.num_endpoints())
      throw std::invalid_argument("the schedule has " + std::to_string(P) +
                                  " ranks but topology " + topo.name() + " has only " +
                                  std::to_string(topo.num_endpoints()) + " endpoints");
    place.resize(P);
    for (RankId r = 0; r < P; ++r) place[r] = r;
  } else if (static_cast<RankId>(place.size()) != P) {
    throw std::invalid_argument("placement must list one endpoint per rank");
  }
  return place;
}

}  // namespace

SpatialMetrics spatial_metrics(const Schedule& s, const Topology& topo, Bytes word_bytes,
                               const std::vector<NodeId>& placement) {
  if (word_bytes < 1) throw std::invalid_argument("word_bytes must be >= 1");
  const std::vector<NodeId> place = resolve_placement(s, topo, placement);
  const TransferId T = s.num_transfers();
  // Per transfer: distance L(t), depth D(t) and contention R(t) as defined
  // in metrics.hpp (the names of the paper's recurrences).
  std::vector<std::int64_t> L(T, 0), D(T, 0), R(T, 0);
  std::vector<std::uint8_t> used(topo.num_links(), 0);
  std::vector<std::uint32_t> mark(topo.num_links(), 0);  // per-transfer dedup
  std::vector<LinkId> route;
  SpatialMetrics m;
  std::uint32_t stamp = 0;
  // Dependency order: each recurrence reads only its dependencies' values.
  for (TransferId t : topological_order(s)) {
    const std::int64_t w = ceil_div(s.transfer_bytes(t), word_bytes);
    ++stamp;
    std::int64_t links = 0, hops = 0;
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      route.clear();
      topo.append_route(place[s.src(t)], place[*d], route);
      hops = std::max<std::int64_t>(hops, static_cast<std::int64_t>(route.size()));
      for (LinkId l : route) {
        if (mark[l] != stamp) {
          mark[l] = stamp;
          ++links;
          used[l] = 1;
        }
      }
    }
    m.energy += w * links;
    // Data dependencies extend distance and depth (t forwards what d
    // brought); serial ones add t's words after d's on a shared PE; data
    // ones overlap (forwarding streams along), hence max without + w.
    std::int64_t l_in = 0, d_in = 0, r = w;
    for (const TransferId* dp = s.deps_begin(t); dp != s.deps_end(t); ++dp) {
      const TransferId d = *dp;
      const bool data = std::find(s.dsts_begin(d), s.dsts_end(d), s.src(t)) != s.dsts_end(d);
      bool serial = s.src(d) == s.src(t);
      for (const RankId* x = s.dsts_begin(t); !serial && x != s.dsts_end(t); ++x)
        serial = std::find(s.dsts_begin(d), s.dsts_end(d), *x) != s.dsts_end(d);
      if (data) {
        l_in = std::max(l_in, L[d]);
        d_in = std::max(d_in, D[d]);
        r = std::max(r, R[d]);
      }
      if (serial) r = std::max(r, R[d] + w);
    }
    L[t] = hops + l_in;
    D[t] = 1 + d_in;
    R[t] = r;
    m.distance = std::max(m.distance, L[t]);
    m.depth = std::max(m.depth, D[t]);
    m.contention = std::max(m.contention, R[t]);
  }
  for (std::uint8_t u : used) m.links += u;
  return m;
}

Loads loads(const Schedule& s, const Topology& topo, const std::vector<NodeId>& placement) {
  const std::vector<NodeId> place = resolve_placement(s, topo, placement);
  Loads out;
  out.link_bytes.assign(topo.num_links(), 0);
  out.sent_bytes.assign(topo.num_endpoints(), 0);
  out.received_bytes.assign(topo.num_endpoints(), 0);
  out.reduced_bytes.assign(topo.num_endpoints(), 0);
  std::vector<std::uint32_t> mark(topo.num_links(), 0);  // per-transfer dedup
  std::vector<LinkId> route;
  // Loads count bytes, not time: a link shared by two destinations of one
  // multicast carries the bytes once.
  std::uint32_t stamp = 0;
  const TransferId T = s.num_transfers();
  for (TransferId t = 0; t < T; ++t) {
    const std::int64_t b = s.transfer_bytes(t);
    const bool reduce = s.op(t) == Op::reduce;
    if (++stamp == 0) {  // wrapped: forget every mark
      std::fill(mark.begin(), mark.end(), 0);
      stamp = 1;
    }
    out.sent_bytes[place[s.src(t)]] += b;
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      out.received_bytes[place[*d]] += b;
      if (reduce) out.reduced_bytes[place[*d]] += b;
      route.clear();
      topo.append_route(place[s.src(t)], place[*d], route);
      for (LinkId l : route) {
        if (mark[l] != stamp) {
          mark[l] = stamp;
          out.link_bytes[l] += b;
        }
      }
    }
  }
  return out;
}

}  // namespace wafercoll
