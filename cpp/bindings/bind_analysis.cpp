// Bindings of the analyses that need no topology: verify and execute.
#include "pybind.hpp"
#include "wafercoll/analysis/execute.hpp"
#include "wafercoll/analysis/metrics.hpp"
#include "wafercoll/analysis/verify.hpp"

using namespace wafercoll;

namespace {

template <typename T>
py::array_t<T> run(const Schedule& s, const py::array_t<T, py::array::c_style>& inputs) {
  if (inputs.ndim() != 2 || inputs.shape(0) != s.num_ranks())
    throw std::invalid_argument("inputs must have shape (ranks, elements) = (" +
                                std::to_string(s.num_ranks()) + ", n)");
  py::array_t<T> out({inputs.shape(0), inputs.shape(1)});
  const T* in = inputs.data();
  T* o = out.mutable_data();
  const std::int64_t elements = inputs.shape(1);
  py::gil_scoped_release release;  // works on buffers we own; no Python objects touched
  execute<T>(s, in, o, elements);
  return out;
}

}  // namespace

void bind_analysis(py::module_& m) {
  m.def(
      "verify",
      [](const Schedule& s, std::int64_t dense_after, const std::string& split) {
        VerifySplit how = VerifySplit::automatic;
        if (split == "never") {
          how = VerifySplit::never;
        } else if (split == "always") {
          how = VerifySplit::always;
        } else if (split != "auto") {
          throw py::value_error("split must be 'auto', 'never' or 'always', got '" + split +
                                "'");
        }
        VerifyReport rep;
        {
          py::gil_scoped_release release;  // symbolic execution touches only C++ data
          rep = verify(s, dense_after, how);
        }
        py::dict d;
        d["transfers"] = rep.transfers;
        d["steps"] = rep.steps;
        d["pieces_written"] = rep.pieces_written;
        d["reachability_queries"] = rep.reachability_queries;
        d["windows"] = rep.windows;
        return d;
      },
      py::arg("schedule"), py::arg("dense_after") = kVerifyDenseAfter,
      py::arg("split") = "auto");
  m.def("execute_f64", &run<double>, py::arg("schedule"), py::arg("inputs"));
  m.def("execute_f32", &run<float>, py::arg("schedule"), py::arg("inputs"));
  m.def("execute_i64", &run<std::int64_t>, py::arg("schedule"), py::arg("inputs"));
  m.def("execute_i32", &run<std::int32_t>, py::arg("schedule"), py::arg("inputs"));
  m.def("block_element_offsets",
        [](const Schedule& s, std::int64_t elements) {
          return to_numpy(block_element_offsets(s, elements));
        },
        py::arg("schedule"), py::arg("elements"));
  m.def(
      "spatial_metrics",
      [](const Schedule& s, const Topology& topo, Bytes word_bytes,
         const std::vector<NodeId>& placement) {
        SpatialMetrics r;
        {
          py::gil_scoped_release release;
          r = spatial_metrics(s, topo, word_bytes, placement);
        }
        py::dict d;
        d["energy"] = r.energy;
        d["distance"] = r.distance;
        d["depth"] = r.depth;
        d["contention"] = r.contention;
        d["links"] = r.links;
        return d;
      },
      py::arg("schedule"), py::arg("topology"), py::arg("word_bytes"), py::arg("placement"));
  m.def(
      "loads",
      [](const Schedule& s, const Topology& topo, const std::vector<NodeId>& placement) {
        Loads r;
        {
          py::gil_scoped_release release;
          r = loads(s, topo, placement);
        }
        py::dict d;
        d["link_bytes"] = py::array_t<std::int64_t>(r.link_bytes.size(), r.link_bytes.data());
        d["sent_bytes"] = py::array_t<std::int64_t>(r.sent_bytes.size(), r.sent_bytes.data());
        d["received_bytes"] =
            py::array_t<std::int64_t>(r.received_bytes.size(), r.received_bytes.data());
        d["reduced_bytes"] =
            py::array_t<std::int64_t>(r.reduced_bytes.size(), r.reduced_bytes.data());
        return d;
      },
      "Bytes per link (multicast once per link) and per endpoint: sent, received, "
      "reduced.",
      py::arg("schedule"), py::arg("topology"), py::arg("placement"));
}
