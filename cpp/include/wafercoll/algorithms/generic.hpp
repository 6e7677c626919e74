// Topology-agnostic collectives over ranks 0..p-1 (any p >= 1).
//
// Each builder returns a Schedule whose dependencies encode the classic
// message-passing program: a send waits for the data it forwards (the last
// transfer into its source rank) and for the last transfer into its
// destination rank (so writes into one rank are ordered). Ranks exchange in
// pairs within a step; the schedule semantics make such exchanges well
// defined (each side reads the value before the step).
//
//   ring                  p blocks; p-1 reduce steps (rank r sends block
//                         r-s to r+1 at step s), then p-1 copy steps.
//   recursive_doubling    1 block; full-vector pairwise exchanges at distance
//                         1, 2, 4, ...; p not a power of two: the first 2e
//                         ranks (e = p - 2^floor(log2 p)) fold in pairs
//                         (even -> odd) before and unfold after.
//   rabenseifner          2^floor(log2 p) blocks; reduce-scatter by recursive
//                         halving (distance 1, 2, 4, ...; the lower partner
//                         keeps the lower half), allgather by recursive
//                         doubling in the mirrored order; same folding.
//   binomial_reduce       1 block; binomial tree on ranks relative to root.
//   binomial_broadcast    1 block; binomial tree, each rank sends one message
//                         at a time (largest subtree first).
#pragma once

#include "wafercoll/schedule/schedule.hpp"

namespace wafercoll {

Schedule ring_allreduce(RankId p, Bytes size_bytes);
Schedule recursive_doubling_allreduce(RankId p, Bytes size_bytes);
Schedule rabenseifner_allreduce(RankId p, Bytes size_bytes);
Schedule binomial_reduce(RankId p, Bytes size_bytes, RankId root);
Schedule binomial_broadcast(RankId p, Bytes size_bytes, RankId root);

}  // namespace wafercoll
