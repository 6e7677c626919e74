// Wafer 1D Reduce schedules from reduction trees: see wafer.hpp.
//
// The vector is cut into blocks that stream up the tree: each PE forwards
// block b to its parent once its children's block b has arrived (a
// pipeline), takes its children's streams one after another in increasing
// rank (a PE's router admits one incoming stream at a time), and sends its
// blocks in order. Those three rules are exactly the dependencies below,
// which the simulator's dataflow mode reads as a spatial machine would
// (simulate.hpp, Dependencies).
#include "wafercoll/algorithms/wafer.hpp"
#include "wafercoll/units.hpp"

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
  // One root (parent -1); every other rank names a rank; no cycles (every
  // rank is reached from the root). Children are taken in increasing rank.
  std::vector<std::vector<std::int32_t>> kids(P);
  std::int32_t root = -1;
  for (std::int64_t v = 0; v < P; ++v) {
    if (parent[v] == -1) {
      if (root >= 0)
        throw std::invalid_argument("parent has two roots (ranks " + std::to_string(root) +
                                    " and " + std::to_string(v) + " have parent -1)");
      root = static_cast<std::int32_t>(v);
    } else if (parent[v] < 0 || parent[v] >= P || parent[v] == v) {
      throw std::invalid_argument("parent[" + std::to_string(v) + "] = " +
                                  std::to_string(parent[v]) + " must be -1 or another rank in [0, " +
                                  std::to_string(P) + ")");
    } else {
      kids[parent[v]].push_back(static_cast<std::int32_t>(v));
    }
  }
  if (root < 0) throw std::invalid_argument("parent has no root (no rank with parent -1)");
  {
    std::int64_t reached = 0;
    std::vector<std::int32_t> todo{root};
    while (!todo.empty()) {
      const std::int32_t v = todo.back();
      todo.pop_back();
      ++reached;
      for (std::int32_t c : kids[v]) todo.push_back(c);
    }
    if (reached != P)
      throw std::invalid_argument("parent is not a tree: " + std::to_string(P - reached) +
                                  " ranks are on a cycle that does not reach the root");
  }
  // Blocks of block_bytes, the last one shorter.
  const std::int64_t nb = ceil_div(size_bytes, block_bytes);
  if (nb > Schedule::kMaxBlocks || (P - 1) * nb > Schedule::kMaxTransfers)
    throw std::invalid_argument("the schedule would have " + std::to_string((P - 1) * nb) +
                                " transfers (limit " +
                                std::to_string(Schedule::kMaxTransfers) +
                                "); use larger blocks");
  std::vector<Bytes> sizes(nb, block_bytes);
  sizes.back() = size_bytes - (nb - 1) * block_bytes;
  Collective c;
  c.kind = CollectiveKind::reduce;
  c.root = root;
  Schedule s(static_cast<RankId>(P), std::move(sizes), c);
  s.reserve((P - 1) * nb);
  // Post-order (children left to right, then the PE) creates every transfer
  // after the ones it depends on. first[v]: id of v's block 0 transfer.
  std::vector<TransferId> first(P, -1);
  std::vector<TransferId> deps;
  std::vector<std::pair<std::int32_t, std::size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    if (next < kids[v].size()) {
      const std::int32_t child = kids[v][next++];
      stack.emplace_back(child, 0);
      continue;
    }
    const std::int32_t u = v;
    stack.pop_back();
    if (u == root) break;
    const std::int32_t p = parent[u];
    // Previous sibling of u under p, whose whole stream p takes first: the
    // parent's frame, now on top, has just moved past u.
    const std::size_t pos = stack.back().second - 1;
    const TransferId sibling_last =
        pos > 0 ? first[kids[p][pos - 1]] + static_cast<TransferId>(nb - 1) : -1;
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
