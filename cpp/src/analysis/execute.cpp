// NumPy-style executor: see execute.hpp for the layout and the semantics.
//
// The executor is the verifier's witness on real numbers: where verify()
// proves a schedule correct symbolically, execute() runs it on data, so the
// Python tests can compare its outputs with np.sum over the contributions.
// It follows the schedule's semantics literally rather than fast: every
// transfer snapshots its source blocks the moment it becomes ready (its
// last dependency done), so a later write to those cells by a transfer that
// does not depend on it cannot leak in, exactly as in the model.
#include "wafercoll/analysis/execute.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace wafercoll {

// 128-bit products: elements * bytes can exceed 64 bits for huge inputs.
__extension__ typedef __int128 Wide;

// Element offsets of the blocks, proportional to their byte offsets
// (floor), so that blocks of any sizes map onto a vector of any length and
// adjacent blocks share no element.
std::vector<std::int64_t> block_element_offsets(const Schedule& s, std::int64_t elements) {
  if (elements < 0) throw std::invalid_argument("elements must be >= 0");
  const BlockId nb = s.num_blocks();
  std::vector<std::int64_t> off(static_cast<std::size_t>(nb) + 1, 0);
  const Bytes total = s.total_bytes();
  for (BlockId b = 0; b <= nb; ++b) {
    if (total > 0) {
      off[b] = static_cast<std::int64_t>(Wide{elements} * s.range_bytes(0, b) / total);
    } else {
      off[b] = static_cast<std::int64_t>(Wide{elements} * b / nb);
    }
  }
  return off;
}

template <typename T>
void execute(const Schedule& s, const T* inputs, T* outputs, std::int64_t elements) {
  const RankId p = s.num_ranks();
  const BlockId nb = s.num_blocks();
  const TransferId n = s.num_transfers();
  const auto off = block_element_offsets(s, elements);
  // Initial state: a rank's own contribution where it holds one, else 0
  // (the identity of the sum), so outputs are exact sums of contributions.
  for (RankId r = 0; r < p; ++r) {
    for (BlockId b = 0; b < nb; ++b) {
      const std::int64_t lo = r * elements + off[b];
      const std::int64_t hi = r * elements + off[b + 1];
      if (s.holds_input(r, b)) {
        std::copy(inputs + lo, inputs + hi, outputs + lo);
      } else {
        std::fill(outputs + lo, outputs + hi, T(0));
      }
    }
  }
  const Successors succ = successors(s);
  std::vector<std::int32_t> indegree(n);
  for (TransferId t = 0; t < n; ++t) indegree[t] = static_cast<std::int32_t>(s.num_deps(t));
  // Snapshots of the source blocks of ready transfers. Taken at readiness,
  // not when the transfer runs: between the two, other ready transfers may
  // write the same cells, and the model says t sends what its source held
  // when t's dependencies were done.
  std::vector<std::vector<T>> staged(n);
  auto snapshot = [&](TransferId t) {
    auto& buf = staged[t];
    const T* row = outputs + static_cast<std::int64_t>(s.src(t)) * elements;
    for (auto r = s.ranges_begin(t); r != s.ranges_end(t); ++r)
      buf.insert(buf.end(), row + off[r->lo], row + off[r->hi]);
  };
  std::deque<TransferId> ready;
  for (TransferId t = 0; t < n; ++t)
    if (indegree[t] == 0) {
      snapshot(t);
      ready.push_back(t);
    }
  // Kahn's algorithm, first ready first run: deterministic, and for a
  // verified schedule any order gives the same outputs.
  TransferId done = 0;
  while (!ready.empty()) {
    const TransferId t = ready.front();
    ready.pop_front();
    const bool reduce = s.op(t) == Op::reduce;
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      T* row = outputs + static_cast<std::int64_t>(*d) * elements;
      const T* data = staged[t].data();
      for (auto r = s.ranges_begin(t); r != s.ranges_end(t); ++r) {
        const std::int64_t len = off[r->hi] - off[r->lo];
        T* dst = row + off[r->lo];
        if (reduce) {
          for (std::int64_t i = 0; i < len; ++i) dst[i] += data[i];
        } else {
          std::copy(data, data + len, dst);
        }
        data += len;
      }
    }
    std::vector<T>().swap(staged[t]);  // a snapshot lives only until its transfer ran
    ++done;
    for (std::int64_t i = succ.offsets[t]; i < succ.offsets[t + 1]; ++i) {
      const TransferId u = succ.list[i];
      if (--indegree[u] == 0) {
        snapshot(u);
        ready.push_back(u);
      }
    }
  }
  if (done != n)
    throw std::invalid_argument("the schedule's dependencies form a cycle; " +
                                std::to_string(n - done) + " transfers never become ready");
}

// The element types the bindings expose.
template void execute<double>(const Schedule&, const double*, double*, std::int64_t);
template void execute<float>(const Schedule&, const float*, float*, std::int64_t);
template void execute<std::int64_t>(const Schedule&, const std::int64_t*, std::int64_t*,
                                    std::int64_t);
template void execute<std::int32_t>(const Schedule&, const std::int32_t*, std::int32_t*,
                                    std::int64_t);

}  // namespace wafercoll
