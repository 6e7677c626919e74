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

// A simulation refused up front because it would take more packet-stage
// events than the caller's max_events (simulate.hpp). The bindings translate
// it to `wafercoll.SimulationTooLarge` (a ValueError) carrying both counts,
// so that a sweep can record the size of a run it skips without preparing
// the run twice.
class TooManyEvents : public std::invalid_argument {
 public:
  TooManyEvents(std::int64_t events, std::int64_t max_events)
      : std::invalid_argument("the simulation would take " + std::to_string(events) +
                              " packet-stage events, more than max_events = " +
                              std::to_string(max_events) +
                              "; use a larger packet_bytes (or raise max_events)"),
        events_(events),
        max_events_(max_events) {}
  std::int64_t events() const { return events_; }
  std::int64_t max_events() const { return max_events_; }

 private:
  std::int64_t events_;
  std::int64_t max_events_;
};

// A long computation stopped because the caller asked it to (Ctrl-C in
// Python). The bindings turn it into KeyboardInterrupt.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// The hook long loops poll: returns true when the computation should stop.
// Unset (the default, and in the C++ tests), nothing ever interrupts.
using InterruptCheck = bool (*)();
void set_interrupt_check(InterruptCheck check);

// Throws Interrupted when the hook says so. Loops call it every
// kInterruptStride iterations, so that the hook's cost (acquiring the GIL)
// stays negligible while a stop is honoured within milliseconds.
void poll_interrupt();
constexpr std::int64_t kInterruptStride = std::int64_t{1} << 18;

}  // namespace wafercoll
