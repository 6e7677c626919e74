// The interrupt hook of errors.hpp.
#include <atomic>

#include "wafercoll/errors.hpp"

namespace wafercoll {

namespace {
std::atomic<InterruptCheck> g_check{nullptr};
}  // namespace

void set_interrupt_check(InterruptCheck check) { g_check.store(check); }

void poll_interrupt() {
  const InterruptCheck check = g_check.load(std::memory_order_relaxed);
  if (check != nullptr && check()) throw Interrupted();
}

}  // namespace wafercoll
