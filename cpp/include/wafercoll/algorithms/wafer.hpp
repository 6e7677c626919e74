// Wafer-scale 1D Reduce schedules from a reduction tree (Luczynski,
// Gianinazzi et al., "Near-Optimal Wafer-Scale Reduce", HPDC 2024, Sec. 5).
//
// A tree is a parent array over ranks: one root (parent -1), every other
// rank names its parent, no cycles; a rank takes its children in increasing
// rank order. On a row of PEs with the root at PE 0 and every subtree a
// contiguous range (pre-order, non-crossing) these are the paper's Star,
// Chain, Tree, Two-Phase and Auto-Gen; other trees give reductions to other
// roots (the middle PE) and on 2D grids (X-Y, Snake). The schedule keeps the
// wavelet stream: the vector is cut into blocks of `block_bytes` (one 4-byte
// wavelet by default) and every rank v other than the root sends each block
// to parent[v] as soon as
//   * it has sent the previous block (its stream is in order),
//   * every child's copy of that block has arrived (the data it forwards),
// and its first block waits until parent[v] has received the whole stream of
// v's previous sibling (a rank takes its children's streams one at a time, in
// order). A rank therefore forwards the running sum of its last child as the
// wavelets arrive: Chain is a pipeline, Star a sequence of streams. With one
// block per stream (block_bytes >= size_bytes) the simulator's dataflow mode
// still pipelines them packet by packet.
#pragma once

#include <cstdint>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"

namespace wafercoll {

// Throws std::invalid_argument for a parent array that is not a rooted tree,
// size_bytes < 1 or block_bytes < 1.
Schedule tree_reduce(const std::vector<std::int32_t>& parent, Bytes size_bytes,
                     Bytes block_bytes);

}  // namespace wafercoll
