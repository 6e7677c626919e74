// The interrupt hook of errors.hpp.
//
// One process-wide hook, set by the bindings at import: the core must not
// see Python, so it only holds a plain function pointer that the bindings
// fill with a check of Python's signal state. Atomic because a long
// computation may poll it from a thread that released the GIL while another
// thread (re)sets it; relaxed loads suffice since the pointer is all that is
// shared and a stop noticed one poll later is still a stop.
#include <atomic>

#include "wafercoll/errors.hpp"

namespace wafercoll {

namespace {
// Null until set: the C++ tests and plain C++ users never interrupt.
std::atomic<InterruptCheck> g_check{nullptr};
}  // namespace

void set_interrupt_check(InterruptCheck check) { g_check.store(check); }

void poll_interrupt() {
  const InterruptCheck check = g_check.load(std::memory_order_relaxed);
  if (check != nullptr && check()) throw Interrupted();
}

}  // namespace wafercoll
