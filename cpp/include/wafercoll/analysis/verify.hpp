// The verifier: a symbolic execution of a schedule that proves it computes its
// collective in every execution order its dependencies allow.
//
// Every (rank, block) cell holds a *contribution set*: the ranks whose input
// for that block has been summed into the cell. Initially a participant holds
// {itself} in the blocks it contributes (all blocks for reduce / allreduce /
// reduce_scatter, the blocks it owns for allgather, everything at the root for
// broadcast, the blocks it owns for the block-moving kinds: alltoall(v), gather,
// scatter) and every other cell is empty (its value is 0). The moving kinds
// reduce nothing, and each block must arrive at its target exactly once. A copy sets the
// destination's set to the source's; a reduce unions them and requires them
// to be disjoint (otherwise a contribution would be counted twice).
//
// Timing: the semantics of schedule.hpp (a transfer reads its sources as they
// stand after its dependencies and writes on completion). The verifier checks,
// for every cell:
//   * write/write: each write happens-after the cell's previous write;
//   * read/write:  a write concurrent with a reader of the cell happens-after
//     every dependency of the reader (so it cannot land before the read);
//   * the value read is the one produced by the writes that happen-before the
//     reader, and it is not empty (nothing is sent before it has arrived).
// Switch ranks (schedule.hpp) start empty like any non-participant and have
// no postcondition; reductions into one of their cells may be concurrent (a
// switch accumulates atomically), while every other pair of accesses to it
// (a copy and any write, a read and any write) must be ordered by
// dependencies. The disjointness test is the same, so a switch that would
// reduce one contribution twice is refuted ("double_count").
// Cells are tracked as runs of equal state over block ranges ("pieces"), so a
// transfer of a range of blocks costs O(pieces), not O(blocks); contribution
// sets are sorted lists of rank intervals. Both keep structured schedules
// (halving, doubling, rings, trees) near-linear in the number of transfers.
#pragma once

#include <cstdint>
#include <string>

#include "wafercoll/schedule/schedule.hpp"

namespace wafercoll {

struct VerifyReport {
  std::int64_t transfers = 0;
  std::int32_t steps = 0;
  std::int64_t pieces_written = 0;     // work measure of the symbolic execution
  std::int64_t reachability_queries = 0;  // happens-before questions that needed a search
  std::int32_t windows = 1;  // windows of blocks verified on their own threads (see split)
};

// Throws ScheduleError (kinds: "cycle", "dependency", "race", "empty_read",
// "double_count", "missing", "unexpected", "duplicate") naming the first offending transfer
// in topological order, with its rank and block.
//
// dense_after: a rank's cell state turns into one piece per block once it has
// more than that many runs, and starts so when the window of blocks is small
// (at most 8 x 48 / dense_after blocks: 8 by default, every window at 0, none
// for a huge value). A representation choice: the outcome is the same for
// every value; tests compare extremes.
inline constexpr std::int64_t kVerifyDenseAfter = 48;
//
// split: whether the cells are split by blocks between two threads, each
// walking the transfers over its blocks (cells of different blocks never
// interact). `automatic` splits a large schedule (2^16 transfers or more,
// on two or more hardware threads) when neither half of the blocks is
// touched by more than 0.6 of the transfers (rings, pipelines; not
// recursive doubling, whose transfers carry the whole vector); `always`
// splits any schedule of two or more blocks (for tests). The verdict and
// the error are the same either way: a split verification that fails is
// repeated on one thread, whose error is the one reported. Only the work
// measures (pieces_written, reachability_queries) count each thread's work.
enum class VerifySplit { automatic, never, always };
VerifyReport verify(const Schedule& schedule, std::int64_t dense_after = kVerifyDenseAfter,
                    VerifySplit split = VerifySplit::automatic);

}  // namespace wafercoll
