// Bindings of the schedule builders. Construction is pure C++, so the GIL is
// released while large schedules are built.
#include "pybind.hpp"
#include "wafercoll/algorithms/generic.hpp"
#include "wafercoll/algorithms/wafer.hpp"

using namespace wafercoll;

void bind_algorithms(py::module_& m) {
  m.def("ring_allreduce", &ring_allreduce, py::arg("p"), py::arg("size_bytes"),
        py::call_guard<py::gil_scoped_release>());
  m.def("recursive_doubling_allreduce", &recursive_doubling_allreduce, py::arg("p"),
        py::arg("size_bytes"), py::call_guard<py::gil_scoped_release>());
  m.def("rabenseifner_allreduce", &rabenseifner_allreduce, py::arg("p"),
        py::arg("size_bytes"), py::call_guard<py::gil_scoped_release>());
  m.def("binomial_reduce", &binomial_reduce, py::arg("p"), py::arg("size_bytes"),
        py::arg("root"), py::call_guard<py::gil_scoped_release>());
  m.def("binomial_broadcast", &binomial_broadcast, py::arg("p"), py::arg("size_bytes"),
        py::arg("root"), py::call_guard<py::gil_scoped_release>());
  m.def("tree_reduce", &tree_reduce, py::arg("parent"), py::arg("size_bytes"),
        py::arg("block_bytes"), py::call_guard<py::gil_scoped_release>());
}
