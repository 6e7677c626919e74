// Wafer 1D Reduce schedules from reduction trees: see wafer.hpp.
#include "wafercoll/algorithms/wafer.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace wafercoll {

Schedule tree_reduce(const std::vector<std::int32_t>& parent, Bytes size_bytes,
                     Bytes block_bytes) {
  const auto P = static_cast<std::int64_t>(parent.size());
  if (P < 1 || P > Schedule::kMaxRanks)
    throw std::invalid_argument("parent must list between 1 and 2^24 PEs");
  if (size_bytes < 1) throw std::invalid_argument("size_bytes must be >= 1");
  if (block_bytes < 1) throw std::invalid_argument("block_bytes must be >= 1");
  if (parent[0] != -1) throw std::invalid_argument("parent[0] must be -1 (PE 0 is the root)");
  std::vector<std::vector<std::int32_t>> kids(P);
  for (std::int64_t v = 1; v < P; ++v) {
    if (parent[v] < 0 || parent[v] >= v)
      throw std::invalid_argument("parent[" + std::to_string(v) + "] = " +
                                  std::to_string(parent[v]) + " must be in [0, " +
                                  std::to_string(v) + ")");
    kids[parent[v]].push_back(static_cast<std::int32_t>(v));
  }
  // Pre-order, non-crossing: the subtree of v is [v, end(v)) and its
  // children start exactly where the previous child's subtree ends.
  std::vector<std::int64_t> end(P);
  for (std::int64_t v = P - 1; v >= 0; --v) {
    std::int64_t e = v + 1;
    for (std::int32_t c : kids[v]) {
      if (c != e)
        throw std::invalid_argument("parent is not a pre-order non-crossing tree: PE " +
                                    std::to_string(c) + " should start at PE " +
                                    std::to_string(e));
      e = end[c];
    }
    end[v] = e;
  }
  const std::int64_t nb = (size_bytes + block_bytes - 1) / block_bytes;
  if (nb > Schedule::kMaxBlocks || (P - 1) * nb > Schedule::kMaxTransfers)
    throw std::invalid_argument("the schedule would have " + std::to_string((P - 1) * nb) +
                                " transfers (limit " +
                                std::to_string(Schedule::kMaxTransfers) +
                                "); use larger blocks");
  std::vector<Bytes> sizes(nb, block_bytes);
  sizes.back() = size_bytes - (nb - 1) * block_bytes;
  Collective c;
  c.kind = CollectiveKind::reduce;
  c.root = 0;
  Schedule s(static_cast<RankId>(P), std::move(sizes), c);
  s.reserve((P - 1) * nb);
  // Post-order (children left to right, then the PE) creates every transfer
  // after the ones it depends on. first[v]: id of v's block 0 transfer.
  std::vector<TransferId> first(P, -1);
  std::vector<TransferId> deps;
  std::vector<std::pair<std::int32_t, std::size_t>> stack{{0, 0}};
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    if (next < kids[v].size()) {
      const std::int32_t child = kids[v][next++];
      stack.emplace_back(child, 0);
      continue;
    }
    const std::int32_t u = v;
    stack.pop_back();
    if (u == 0) break;
    const std::int32_t p = parent[u];
    // Previous sibling of u under p, whose whole stream p takes first.
    TransferId sibling_last = -1;
    const auto& sib = kids[p];
    for (std::size_t i = 1; i < sib.size(); ++i)
      if (sib[i] == u) sibling_last = first[sib[i - 1]] + static_cast<TransferId>(nb - 1);
    for (std::int64_t b = 0; b < nb; ++b) {
      deps.clear();
      if (b > 0) deps.push_back(first[u] + static_cast<TransferId>(b - 1));
      else if (sibling_last >= 0) deps.push_back(sibling_last);
      for (std::int32_t ch : kids[u]) deps.push_back(first[ch] + static_cast<TransferId>(b));
      const TransferId t = s.add_transfer(u, {p}, {{static_cast<BlockId>(b),
                                                   static_cast<BlockId>(b + 1)}},
                                          Op::reduce, deps);
      if (b == 0) first[u] = t;
    }
  }
  return s;
}

}  // namespace wafercoll
