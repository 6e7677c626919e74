// Wafer-scale 1D Reduce schedules from a reduction tree (Luczynski,
// Gianinazzi et al., "Near-Optimal Wafer-Scale Reduce", HPDC 2024, Sec. 5).
//
// A tree is a parent array over PEs 0..P-1 (parent[0] = -1, parent[v] < v,
// every subtree a contiguous range): Star, Chain, Tree, Two-Phase and
// Auto-Gen are all such trees. The schedule keeps the wavelet stream: the
// vector is cut into blocks of `block_bytes` (one 4-byte wavelet by default)
// and every PE v != 0 sends each block to parent[v] as soon as
//   * it has sent the previous block (its stream is in order),
//   * every child's copy of that block has arrived (the data it forwards),
// and its first block waits until parent[v] has received the whole stream of
// v's previous sibling (a PE takes its children's streams one at a time, in
// order). A PE therefore forwards the running sum of its last child as the
// wavelets arrive: Chain is a pipeline, Star a sequence of streams.
#pragma once

#include <cstdint>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"

namespace wafercoll {

// Throws std::invalid_argument for a parent array that is not a pre-order
// non-crossing tree, size_bytes < 1 or block_bytes < 1.
Schedule tree_reduce(const std::vector<std::int32_t>& parent, Bytes size_bytes,
                     Bytes block_bytes);

}  // namespace wafercoll
