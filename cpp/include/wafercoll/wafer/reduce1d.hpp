// 1D wafer-scale Reduce: the Auto-Gen dynamic program and the lower bound of
// "Near-Optimal Wafer-Scale Reduce" (Luczynski, Gianinazzi et al., HPDC 2024),
// Sections 5.5 and 5.6. Units: cycles and wavelets; PEs 0..P-1, root PE 0.
//
// Auto-Gen. A reduction tree is a parent array with parent[v] < v in which
// every subtree is a contiguous range of PEs (pre-order, non-crossing). Let
// E(n, d, c) be the least energy (sum of edge lengths, per wavelet) of such a
// tree on n PEs with height <= d and at most c children per PE. Peeling the
// root's last child, rooted at PE i:
//
//   E(1, d, c) = 0;  E(n, 0, c) = E(n, d, 0) = inf for n > 1;
//   E(n, d, c) = min_{0<i<n} E(i, d, c-1) + E(n-i, d-1, c) + i.
//
// The best time for vector length B is, with k = 2 T_R + 1,
//
//   T(P, B) = min_{d, c} max(B c, B E(P, d, c) / (P - 1) + P - 1) + k d.
//
// Speed. For fixed (d, c), E(., d, c) is convex in n: E(., d, 0) and
// E(., 0, c) are, and the recurrence is the infimal convolution of the convex
// sequences i -> E(i, d, c-1) + i and j -> E(j, d-1, c), which is convex and
// is obtained by merging their slope sequences. A whole layer therefore
// costs O(P) instead of O(P^2). Only (d, c) that can beat an upper bound U
// (the best of the fixed patterns Chain, Star, Tree and Two-Phase under the
// same equation) are computed: B c + k d <= U and B + P - 1 + k d <= U.
//
// Lower bound (Lemma 5.5). E*(1, D) = 0, E*(n, 0) = inf for n > 1,
//   E*(n, D) = min_{0<i<n} E*(i, D) + E*(n-i, D-1) + min(i, n-i+1),
//   T*(P, B) >= min_D B E*(P, D) / (P - 1) + P - 1 + k D.
#pragma once

#include <cstdint>
#include <vector>

namespace wafercoll::wafer {

// Limits: rows of at most kMaxRow PEs, and DP tables of at most
// kMaxTableBytes (the error names the size needed).
constexpr std::int32_t kMaxRow = 1 << 16;
// Largest ramp latency T_R the DPs accept (cycles); beyond, double sums lose
// the unit terms of equation (1).
constexpr double kMaxRampLatency = 1e9;
constexpr std::int64_t kMaxTableBytes = std::int64_t{3} << 30;

struct AutogenTree {
  double cycles = 0.0;          // T(P, B)
  std::int32_t depth = 0;       // height of the tree found
  std::int32_t contention = 0;  // most children of a PE (messages received)
  std::int64_t energy = 0;      // per wavelet
  std::int32_t depth_bound = 0;       // the optimal (d, c) of the DP
  std::int32_t contention_bound = 0;
  std::vector<std::int32_t> parent;   // parent[0] = -1
  std::int64_t layers = 0;            // (d, c) layers computed
};

// Optimal Auto-Gen tree for one row of P PEs and vector length B.
AutogenTree autogen(std::int32_t P, std::int64_t B, double T_R);

// T(n, B) for every n = 1..P (entry n-1); one DP serves every row length.
std::vector<double> autogen_cycles(std::int32_t P, std::int64_t B, double T_R);

// T*(n, B) lower bounds for every n = 1..P (entry n-1).
std::vector<double> lower_bound_cycles(std::int32_t P, std::int64_t B, double T_R);

// The energy table E*(n, D) for n = 1..P and D = 0..max_depth, row-major by
// D (entry D * P + n - 1); -1 stands for infinity.
std::vector<std::int64_t> lower_bound_energy(std::int32_t P, std::int32_t max_depth);

// Equation (1) estimate of the four fixed patterns for every n = 1..P
// (entry n-1), exactly as evaluated on their trees: the upper bound U.
std::vector<double> best_fixed_pattern_cycles(std::int32_t P, std::int64_t B, double T_R);

}  // namespace wafercoll::wafer
