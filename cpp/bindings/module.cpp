// wafercoll._core: the private compiled core. Each area binds itself in its own
// bind_<area>.cpp; this file only wires them together.
#include <atomic>

#include "pybind.hpp"
#include "wafercoll/errors.hpp"

#ifndef WAFERCOLL_VERSION
#define WAFERCOLL_VERSION "0+unknown"
#endif

namespace {
// Open stop requests (wafercoll._util.stop_threads): Python delivers Ctrl-C
// to the main thread only, so calls running on other threads are stopped
// through this count instead. A count, so that overlapping requests nest.
std::atomic<int> g_stop_requests{0};

// Ctrl-C reaches Python's signal handler, which only sets a flag; long C++
// calls poll it here (with the GIL, which they released) and stop. Off the
// main thread PyErr_CheckSignals is a no-op, so only a stop request counts.
bool python_interrupted() {
  if (g_stop_requests.load(std::memory_order_relaxed) > 0) return true;
  pybind11::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}
}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "wafercoll compiled core (private; use the `wafercoll` package)";
  wafercoll::set_interrupt_check(&python_interrupted);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const wafercoll::Interrupted&) {
      // PyErr_CheckSignals has set KeyboardInterrupt (or what the handler raised).
      if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });
  m.attr("__version__") = WAFERCOLL_VERSION;
  m.def(
      "_request_stop", [](bool on) { g_stop_requests.fetch_add(on ? 1 : -1); },
      pybind11::arg("on"),
      "Open (True) or close (False) a request that every long C++ call, on "
      "any thread, stop with KeyboardInterrupt at its next poll.");
  bind_topology(m);
  bind_schedule(m);
  bind_analysis(m);
  bind_algorithms(m);
  bind_simulate(m);
  bind_wafer(m);
  bind_io(m);
  bind_routers(m);
}
