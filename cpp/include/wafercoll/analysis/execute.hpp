// NumPy-style executor: runs a schedule on real numbers.
//
// Layout: `inputs` and `outputs` are (ranks x elements) row-major arrays. The
// elements of a rank's vector are mapped to blocks in proportion to the blocks'
// byte sizes: block b covers elements [floor(E*c_b/S), floor(E*c_{b+1}/S)),
// where c_b is the byte offset of block b and S the total (by block count
// when S = 0). A cell that holds no initial contribution (see verify.hpp)
// starts at 0, so the outputs of every postcondition cell are exact sums.
//
// Execution follows the schedule semantics literally: transfers run in
// dependency order; the moment a transfer's last dependency completes, its
// source blocks are snapshotted, and its writes (copy, or add for reduce) are
// applied when it runs. For a verified schedule every order gives the same
// result; this one is deterministic (first ready, first run).
#pragma once

#include <cstdint>
#include <vector>

#include "wafercoll/schedule/schedule.hpp"

namespace wafercoll {

std::vector<std::int64_t> block_element_offsets(const Schedule& s, std::int64_t elements);

template <typename T>
void execute(const Schedule& s, const T* inputs, T* outputs, std::int64_t elements);

extern template void execute<double>(const Schedule&, const double*, double*, std::int64_t);
extern template void execute<float>(const Schedule&, const float*, float*, std::int64_t);
extern template void execute<std::int64_t>(const Schedule&, const std::int64_t*,
                                           std::int64_t*, std::int64_t);
extern template void execute<std::int32_t>(const Schedule&, const std::int32_t*,
                                           std::int32_t*, std::int64_t);

}  // namespace wafercoll
