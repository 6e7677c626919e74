// Auto-Gen and the lower bound for 1D wafer Reduce: see reduce1d.hpp for the
// recurrences and why a layer costs O(P).
//
// Tables hold int32 energies with kInf (a quarter of the range) for "no
// tree", so that sums of two infinities plus a distance cannot overflow and
// still compare as infinite. Times are doubles (equation (1)); turning a
// time bound back into an integer depth or contention uses kSlack so that a
// bound met exactly is not lost to rounding.
#include "wafercoll/wafer/reduce1d.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace wafercoll::wafer {

namespace {

constexpr std::int32_t kInf = std::numeric_limits<std::int32_t>::max() / 4;  // no tree
constexpr double kSlack = 1e-9;  // tolerance when turning bounds into integers

// The public functions' common arguments: row length, vector length in
// wavelets, ramp latency in cycles.
void check_args(std::int32_t P, std::int64_t B, double T_R) {
  if (P < 1 || P > kMaxRow)
    throw std::invalid_argument("P must be in [1, " + std::to_string(kMaxRow) + "], got " +
                                std::to_string(P));
  if (B < 1) throw std::invalid_argument("B must be >= 1 (wavelets), got " + std::to_string(B));
  if (!std::isfinite(T_R) || T_R < 0.0 || T_R > kMaxRampLatency)
    throw std::invalid_argument("T_R must be a number in [0, 1e9] (cycles)");
}

// Equation (1) for a 1D reduction tree on n PEs: N = L = n - 1. The time is
// the larger of the busiest PE's receive time (B per child in sequence) and
// the flow through the row, plus k per level of the tree.
double eq1(std::int64_t n, std::int64_t B, double k, std::int64_t energy, std::int64_t depth,
           std::int64_t contention) {
  if (n <= 1) return 0.0;
  const double Bd = static_cast<double>(B);
  const double flow = Bd * static_cast<double>(energy) / static_cast<double>(n - 1) +
                      static_cast<double>(n - 1);
  return std::max(Bd * static_cast<double>(contention), flow) + k * static_cast<double>(depth);
}

int bit_length(std::int64_t x) {
  int b = 0;
  while (x > 0) {
    ++b;
    x >>= 1;
  }
  return b;
}

std::int64_t isqrt(std::int64_t n) {
  auto s = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n)));
  while (s * s > n) --s;
  while ((s + 1) * (s + 1) <= n) ++s;
  return s;
}

// One layer of the Auto-Gen DP by merging slopes (see the header):
// out[n] = min_i a[i] + i + b[n - i] over 1 <= i < n, for convex a and b.
void merge_layer(const std::int32_t* a, const std::int32_t* b, std::int32_t* out,
                 std::int32_t P) {
  out[1] = 0;
  std::int32_t cap_a = 1, cap_b = 1;
  while (cap_a < P && a[cap_a + 1] < kInf) ++cap_a;
  while (cap_b < P && b[cap_b + 1] < kInf) ++cap_b;
  // Both inputs are finite on a prefix (cap_a, cap_b); the output is finite
  // up to the sum. Merging the two slope sequences in increasing order is
  // the infimal convolution of two convex sequences.
  const std::int64_t top = std::min<std::int64_t>(P, std::int64_t{cap_a} + cap_b);
  std::int32_t i = 1, j = 1;
  std::int32_t v = a[1] + 1 + b[1];
  if (P >= 2) out[2] = v;
  for (std::int64_t n = 3; n <= top; ++n) {
    const std::int32_t sa = i < cap_a ? a[i + 1] - a[i] + 1 : kInf;
    const std::int32_t sb = j < cap_b ? b[j + 1] - b[j] : kInf;
    if (sa <= sb) {
      v += sa;
      ++i;
    } else {
      v += sb;
      ++j;
    }
    out[n] = v;
  }
  for (std::int64_t n = top + 1; n <= P; ++n) out[n] = kInf;
}

// E(., 0, c) and E(., d, 0): only the single PE has a tree.
void base_layer(std::int32_t* out, std::int32_t P) {
  out[0] = kInf;
  out[1] = 0;
  for (std::int32_t n = 2; n <= P; ++n) out[n] = kInf;
}

// Which (d, c) can beat the upper bound U for a row of n PEs: from
// B c + k <= U and B + n - 1 + k d <= U (equation (1) with the smallest
// energy and the other parameter at its least). This box is what keeps the
// DP small.
void box(double U, std::int64_t n, std::int64_t B, double k, std::int32_t& dmax,
         std::int32_t& cmax) {
  const double d = std::floor((U - static_cast<double>(B) - static_cast<double>(n - 1)) / k +
                              kSlack);
  const double c = std::floor((U - k) / static_cast<double>(B) + kSlack);
  const double cap = static_cast<double>(n - 1);
  dmax = static_cast<std::int32_t>(std::clamp(d, 1.0, std::max(1.0, cap)));
  cmax = static_cast<std::int32_t>(std::clamp(c, 1.0, std::max(1.0, cap)));
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// Refuses a table larger than kMaxTableBytes before allocating it, naming
// the size it would need.
void check_table(double bytes, const char* what, std::int32_t P, std::int64_t B) {
  if (bytes > static_cast<double>(kMaxTableBytes))
    throw std::invalid_argument(std::string(what) + " for P = " + std::to_string(P) +
                                ", B = " + std::to_string(B) + " would need " + gib(bytes) +
                                " (limit " + gib(static_cast<double>(kMaxTableBytes)) +
                                "); use a smaller P");
}

// One layer of Lemma 5.5's recurrence: cur[n-1] = E*(n, D) from the same
// layer's smaller n and prev[.] = E*(., D-1); -1 stands for infinity.
void lower_bound_layer(const std::int64_t* prev, std::int64_t* cur, std::int32_t P) {
  cur[0] = 0;  // n = 1
  for (std::int64_t n = 2; n <= P; ++n) {
    std::int64_t best = -1;
    for (std::int64_t i = 1; i < n; ++i) {
      const std::int64_t x = cur[i - 1], y = prev[n - i - 1];
      if (x < 0 || y < 0) continue;
      const std::int64_t v = x + y + std::min(i, n - i + 1);
      if (best < 0 || v < best) best = v;
    }
    cur[n - 1] = best;
  }
}

}  // namespace

// Chain, Star, binomial Tree and Two-Phase, each evaluated with its exact
// energy, depth and contention for every n in one pass (the tree's energy
// and depth are running sums over the PEs' indices).
std::vector<double> best_fixed_pattern_cycles(std::int32_t P, std::int64_t B, double T_R) {
  check_args(P, B, T_R);
  const double k = 2.0 * T_R + 1.0;
  std::vector<double> out(P, 0.0);
  std::int64_t tree_energy = 0;  // sum of lowbit(v) for v < n
  std::int64_t tree_depth = 0;   // max popcount(v) for v < n
  for (std::int64_t n = 2; n <= P; ++n) {
    const std::int64_t v = n - 1;
    tree_energy += v & -v;
    tree_depth = std::max<std::int64_t>(tree_depth, __builtin_popcountll(v));
    const double chain = eq1(n, B, k, n - 1, n - 1, 1);
    const double star = eq1(n, B, k, n * (n - 1) / 2, 1, n - 1);
    const double tree = eq1(n, B, k, tree_energy, tree_depth, bit_length(n - 1));
    // Two-Phase with S = floor(sqrt(n)): F full groups from the far end and
    // PE 0's group of `first` PEs.
    const std::int64_t S = isqrt(n);
    const std::int64_t F = (n + S - 1) / S - 1;
    const std::int64_t first = n - S * F;
    const std::int64_t energy = (n - (F + 1)) + (F >= 1 ? n - S : 0);
    const std::int64_t depth = F >= 1 ? S - 1 + F : n - 1;
    const std::int64_t root_children = (first >= 2 ? 1 : 0) + (F >= 1 ? 1 : 0);
    const std::int64_t leader_children = (S >= 2 ? 1 : 0) + (F >= 2 ? 1 : 0);
    const std::int64_t contention = std::max<std::int64_t>({1, root_children, leader_children});
    const double two = eq1(n, B, k, energy, depth, contention);
    out[n - 1] = std::min({chain, star, tree, two});
  }
  return out;
}

AutogenTree autogen(std::int32_t P, std::int64_t B, double T_R) {
  check_args(P, B, T_R);
  AutogenTree res;
  res.parent.assign(P, 0);
  res.parent[0] = -1;
  if (P == 1) return res;
  const double k = 2.0 * T_R + 1.0;
  // The full (d, c, n) table is kept (not just two layers) because the tree
  // is reconstructed from it afterwards.
  const double U = best_fixed_pattern_cycles(P, B, T_R)[P - 1];
  std::int32_t D, C;
  box(U, P, B, k, D, C);
  const std::int64_t stride = std::int64_t{P} + 1;
  const double bytes = static_cast<double>(D + 1) * (C + 1) * stride * sizeof(std::int32_t);
  check_table(bytes, "the Auto-Gen table", P, B);
  std::vector<std::int32_t> table(static_cast<std::size_t>((D + 1) * (C + 1) * stride));
  auto layer = [&](std::int32_t d, std::int32_t c) {
    return table.data() + (static_cast<std::int64_t>(d) * (C + 1) + c) * stride;
  };
  for (std::int32_t c = 0; c <= C; ++c) base_layer(layer(0, c), P);
  double best = std::numeric_limits<double>::infinity();
  std::int32_t bd = 0, bc = 0;
  for (std::int32_t d = 1; d <= D; ++d) {
    base_layer(layer(d, 0), P);
    for (std::int32_t c = 1; c <= C; ++c) {
      merge_layer(layer(d, c - 1), layer(d - 1, c), layer(d, c), P);
      ++res.layers;
      const std::int32_t e = layer(d, c)[P];
      if (e >= kInf) continue;
      const double t = eq1(P, B, k, e, d, c);
      if (t < best) {
        best = t;
        bd = d;
        bc = c;
      }
    }
  }
  if (bd < 1 || bc < 1)
    throw std::invalid_argument("Auto-Gen found no tree for P = " + std::to_string(P) +
                                ", B = " + std::to_string(B) +
                                " within the bounds of its table");
  // Reconstruct: peel the last child of each range, smallest split first
  // (a deterministic choice among equal-energy trees).
  struct Range {
    std::int32_t base, n, d, c;
  };
  std::vector<Range> stack{{0, P, bd, bc}};
  while (!stack.empty()) {
    const Range r = stack.back();
    stack.pop_back();
    if (r.n <= 1) continue;
    if (r.d < 1 || r.c < 1) throw std::logic_error("Auto-Gen reconstruction left its table");
    const std::int32_t target = layer(r.d, r.c)[r.n];
    const std::int32_t* a = layer(r.d, r.c - 1);
    const std::int32_t* b = layer(r.d - 1, r.c);
    std::int32_t split = -1;
    for (std::int32_t i = 1; i < r.n; ++i)
      if (a[i] < kInf && b[r.n - i] < kInf && a[i] + i + b[r.n - i] == target) {
        split = i;
        break;
      }
    if (split < 0) throw std::logic_error("Auto-Gen reconstruction found no split");
    res.parent[r.base + split] = r.base;
    stack.push_back({r.base, split, r.d, r.c - 1});
    stack.push_back({r.base + split, r.n - split, r.d - 1, r.c});
  }
  // Metrics of the tree found. Contention as in the recurrence: a PE with m
  // children needs max(m, max_j need(child_j) + m - j) receive slots; going
  // from the right, seen[p] counts the children of p after v.
  std::vector<std::int32_t> depth(P, 0), need(P, 0), seen(P, 0);
  for (std::int32_t v = 1; v < P; ++v) {
    depth[v] = depth[res.parent[v]] + 1;
    res.energy += v - res.parent[v];
  }
  for (std::int32_t v = P - 1; v >= 1; --v) {
    need[v] = std::max(need[v], seen[v]);
    const std::int32_t p = res.parent[v];
    need[p] = std::max(need[p], need[v] + seen[p]);
    ++seen[p];
  }
  need[0] = std::max(need[0], seen[0]);
  res.depth = *std::max_element(depth.begin(), depth.end());
  res.contention = std::max(1, need[0]);
  res.depth_bound = bd;
  res.contention_bound = bc;
  res.cycles = eq1(P, B, k, res.energy, res.depth, res.contention);
  return res;
}

// Every row length at once: the box is the union over n, and only two
// layers of d are kept since no tree is reconstructed.
std::vector<double> autogen_cycles(std::int32_t P, std::int64_t B, double T_R) {
  check_args(P, B, T_R);
  const double k = 2.0 * T_R + 1.0;
  std::vector<double> best(P, std::numeric_limits<double>::infinity());
  best[0] = 0.0;
  if (P == 1) return best;
  const std::vector<double> U = best_fixed_pattern_cycles(P, B, T_R);
  std::int32_t D = 1, C = 1;
  for (std::int64_t n = 2; n <= P; ++n) {
    std::int32_t d, c;
    box(U[n - 1], n, B, k, d, c);
    D = std::max(D, d);
    C = std::max(C, c);
  }
  const std::int64_t stride = std::int64_t{P} + 1;
  check_table(2.0 * (C + 1) * stride * sizeof(std::int32_t), "the Auto-Gen layers", P, B);
  std::vector<std::int32_t> prev(static_cast<std::size_t>((C + 1) * stride));
  std::vector<std::int32_t> cur(prev.size());
  for (std::int32_t c = 0; c <= C; ++c) base_layer(prev.data() + c * stride, P);
  for (std::int32_t d = 1; d <= D; ++d) {
    base_layer(cur.data(), P);
    for (std::int32_t c = 1; c <= C; ++c) {
      std::int32_t* out = cur.data() + c * stride;
      merge_layer(cur.data() + (c - 1) * stride, prev.data() + c * stride, out, P);
      for (std::int64_t n = 2; n <= P; ++n) {
        if (out[n] >= kInf) break;  // finite entries form a prefix
        best[n - 1] = std::min(best[n - 1], eq1(n, B, k, out[n], d, c));
      }
    }
    std::swap(prev, cur);
  }
  return best;
}

std::vector<std::int64_t> lower_bound_energy(std::int32_t P, std::int32_t max_depth) {
  if (P < 1 || P > kMaxRow)
    throw std::invalid_argument("P must be in [1, " + std::to_string(kMaxRow) + "]");
  if (max_depth < 0) throw std::invalid_argument("max_depth must be >= 0");
  check_table(static_cast<double>(max_depth + 1) * P * sizeof(std::int64_t),
              "the lower-bound table", P, 1);
  std::vector<std::int64_t> e(static_cast<std::size_t>(max_depth + 1) * P, -1);
  e[0] = 0;  // D = 0: only n = 1 is possible
  for (std::int32_t D = 1; D <= max_depth; ++D) {
    std::int64_t* cur = e.data() + static_cast<std::int64_t>(D) * P;
    lower_bound_layer(cur - P, cur, P);
  }
  return e;
}

std::vector<double> lower_bound_cycles(std::int32_t P, std::int64_t B, double T_R) {
  check_args(P, B, T_R);
  const double k = 2.0 * T_R + 1.0;
  std::vector<double> best(P, std::numeric_limits<double>::infinity());
  best[0] = 0.0;
  if (P == 1) return best;
  // Layers D = 1, 2, ... until no n can improve: every term with depth D is
  // at least n - 1 + B + k D (the energy is at least n - 1).
  std::vector<std::int64_t> prev(P, -1), cur(P, -1);
  prev[0] = 0;
  const double Bd = static_cast<double>(B);
  for (std::int32_t D = 1; D < P; ++D) {
    lower_bound_layer(prev.data(), cur.data(), P);
    bool more = false;
    for (std::int64_t n = 2; n <= P; ++n) {
      const double nd = static_cast<double>(n - 1);
      if (cur[n - 1] >= 0)
        best[n - 1] = std::min(best[n - 1],
                               Bd * static_cast<double>(cur[n - 1]) / nd + nd + k * D);
      if (nd + Bd + k * (D + 1) < best[n - 1]) more = true;
    }
    std::swap(prev, cur);
    if (!more) break;
  }
  return best;
}

}  // namespace wafercoll::wafer
