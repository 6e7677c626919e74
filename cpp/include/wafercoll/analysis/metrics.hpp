// Spatial metrics of a schedule on a topology: the energy, distance, depth,
// contention and links of the spatial cost model of "Near-Optimal
// Wafer-Scale Reduce" (Sec. 3), derived from any schedule.
//
// A transfer carries w(t) = ceil(bytes / word_bytes) words (wavelets) over
// the links of its route (for a multicast, the union of its routes). For a
// dependency d of t:
//   * d is a *data* dependency when t sends from a rank d delivered to
//     (src(t) is a destination of d): t forwards what d brought;
//   * d is a *serial* dependency when d and t share their source or a
//     destination: the same PE sends or receives both, one after the other.
// Then, over the dependency DAG,
//   E = sum_t w(t) * links(t)                    energy (word-hops)
//   N = number of distinct links used             links
//   L = max_t L(t),  L(t) = hops(t) + max_{data d} L(d)          distance
//   D = max_t D(t),  D(t) = 1 + max_{data d} D(d)                depth
//   C = max_t R(t),  R(t) = max(w(t), max_{serial d} R(d) + w(t),
//                              max_{data d} R(d))                contention
// R(t) counts the words received or sent one after another up to the end
// of t, where forwarding (a data dependency) overlaps with the stream it
// forwards. For a PE that takes m streams of B words in order, C = m B; for
// the wafer's 1D reduction trees C = B * (receive slots in sequence), the
// contention of the Auto-Gen recurrence.
#pragma once

#include <cstdint>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"
#include "wafercoll/topology/topology.hpp"

namespace wafercoll {

struct SpatialMetrics {
  std::int64_t energy = 0;
  std::int64_t distance = 0;
  std::int64_t depth = 0;
  std::int64_t contention = 0;
  std::int64_t links = 0;
};

SpatialMetrics spatial_metrics(const Schedule& s, const Topology& topo, Bytes word_bytes,
                               const std::vector<NodeId>& placement = {});

// The bytes a schedule puts on each link and each endpoint, whatever the
// timing: a transfer's payload counts once on every link of its route (for a
// multicast, of the union of its routes), once at its source (sent) and once
// at every destination (received; reduced too when it reduces). These are
// the loads behind a schedule's own lower bound: no stage can finish its
// bytes faster than its bandwidth allows.
struct Loads {
  std::vector<std::int64_t> link_bytes;     // per link
  std::vector<std::int64_t> sent_bytes;     // per endpoint
  std::vector<std::int64_t> received_bytes; // per endpoint
  std::vector<std::int64_t> reduced_bytes;  // per endpoint
};

Loads loads(const Schedule& s, const Topology& topo, const std::vector<NodeId>& placement = {});

}  // namespace wafercoll
