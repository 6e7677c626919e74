// Bindings of the wafer-scale 1D Reduce dynamic programs (wafercoll.wafer).
#include "pybind.hpp"
#include "wafercoll/wafer/reduce1d.hpp"

using namespace wafercoll;

void bind_wafer(py::module_& m) {
  m.def(
      "wafer_autogen",
      [](std::int32_t P, std::int64_t B, double T_R) {
        wafer::AutogenTree t;
        {
          py::gil_scoped_release release;
          t = wafer::autogen(P, B, T_R);
        }
        py::dict d;
        d["cycles"] = t.cycles;
        d["depth"] = t.depth;
        d["contention"] = t.contention;
        d["energy"] = t.energy;
        d["depth_bound"] = t.depth_bound;
        d["contention_bound"] = t.contention_bound;
        d["parent"] = to_numpy(t.parent);
        d["layers"] = t.layers;
        return d;
      },
      py::arg("P"), py::arg("B"), py::arg("T_R"));
  auto per_n = [&m](const char* name, std::vector<double> (*fn)(std::int32_t, std::int64_t,
                                                                  double)) {
    m.def(
        name,
        [fn](std::int32_t P, std::int64_t B, double T_R) {
          std::vector<double> v;
          {
            py::gil_scoped_release release;
            v = fn(P, B, T_R);
          }
          return to_numpy(v);
        },
        py::arg("P"), py::arg("B"), py::arg("T_R"));
  };
  per_n("wafer_autogen_cycles", &wafer::autogen_cycles);
  per_n("wafer_lower_bound_cycles", &wafer::lower_bound_cycles);
  per_n("wafer_fixed_pattern_cycles", &wafer::best_fixed_pattern_cycles);
  m.def(
      "wafer_lower_bound_energy",
      [](std::int32_t P, std::int32_t max_depth) {
        std::vector<std::int64_t> v;
        {
          py::gil_scoped_release release;
          v = wafer::lower_bound_energy(P, max_depth);
        }
        py::array_t<std::int64_t> out = to_numpy(v);
        return out.reshape({static_cast<py::ssize_t>(max_depth) + 1,
                            static_cast<py::ssize_t>(P)});
      },
      py::arg("P"), py::arg("max_depth"));
}
