// wafercoll._core: the private compiled core. Each area binds itself in its own
// bind_<area>.cpp; this file only wires them together.
#include "pybind.hpp"
#include "wafercoll/errors.hpp"

#ifndef WAFERCOLL_VERSION
#define WAFERCOLL_VERSION "0+unknown"
#endif

namespace {
// Ctrl-C reaches Python's signal handler, which only sets a flag; long C++
// calls poll it here (with the GIL, which they released) and stop.
bool python_interrupted() {
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
  bind_topology(m);
  bind_schedule(m);
  bind_analysis(m);
  bind_algorithms(m);
  bind_simulate(m);
  bind_wafer(m);
}
