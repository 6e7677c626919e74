// wafercoll._core: the private compiled core. Each area binds itself in its own
// bind_<area>.cpp; this file only wires them together.
#include "pybind.hpp"

#ifndef WAFERCOLL_VERSION
#define WAFERCOLL_VERSION "0+unknown"
#endif

PYBIND11_MODULE(_core, m) {
  m.doc() = "wafercoll compiled core (private; use the `wafercoll` package)";
  m.attr("__version__") = WAFERCOLL_VERSION;
  bind_topology(m);
  bind_schedule(m);
  bind_analysis(m);
  bind_algorithms(m);
  bind_simulate(m);
  bind_wafer(m);
}
