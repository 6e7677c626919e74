// Units used across the core. Plain aliases, not strong types: the names of
// variables carry the unit as a suffix (`_bytes`, `_s`, `_Bps`) so that a value
// can never be read in the wrong unit, and these aliases document intent in
// signatures.
#pragma once

#include <cstdint>

namespace wafercoll {

using Bytes = std::int64_t;           // sizes of blocks, messages, vectors
using Seconds = double;               // simulated or modelled time
using BytesPerSecond = double;        // link and port bandwidth
using RankId = std::int32_t;          // a rank of a schedule (an endpoint that holds data)
using BlockId = std::int32_t;         // a block of the per-rank vector
using TransferId = std::int32_t;      // index of a transfer in a schedule
using NodeId = std::int32_t;          // an endpoint or a hidden router of a topology
using LinkId = std::int32_t;          // a directed link of a topology

// Unsigned 128-bit integers (GCC and Clang; -Wpedantic-clean): keys wider
// than 64 bits.
__extension__ typedef unsigned __int128 UInt128;

// ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace wafercoll
