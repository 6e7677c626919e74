// Exceptions of the core. Public inputs are checked with std::invalid_argument /
// std::out_of_range (pybind11 maps them to ValueError / IndexError); schedule
// defects found by import checks or the verifier raise ScheduleError, which the
// bindings translate to the Python `wafercoll.ScheduleError` (a ValueError) with
// the offending transfer, rank and block attached.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace wafercoll {

class ScheduleError : public std::invalid_argument {
 public:
  // kind: a short machine-readable tag ("race", "double_count", "missing", ...).
  // transfer/rank/block are -1 when they do not apply.
  ScheduleError(const std::string& kind, const std::string& message,
                std::int64_t transfer = -1, std::int64_t rank = -1,
                std::int64_t block = -1)
      : std::invalid_argument(message),
        kind_(kind),
        transfer_(transfer),
        rank_(rank),
        block_(block) {}

  const std::string& kind() const { return kind_; }
  std::int64_t transfer() const { return transfer_; }
  std::int64_t rank() const { return rank_; }
  std::int64_t block() const { return block_; }

 private:
  std::string kind_;
  std::int64_t transfer_;
  std::int64_t rank_;
  std::int64_t block_;
};

}  // namespace wafercoll
