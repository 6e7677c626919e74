// The only header that sees Python: shared includes for the binding files.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <vector>

namespace py = pybind11;

// Copy a std::vector into a new 1-D NumPy array (results are small enough that
// one copy is cheaper than lifetime bookkeeping for a zero-copy view).
template <typename T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

// Move a std::vector into a 1-D NumPy array that owns it (no copy): for the
// results that grow with the schedule (a value per transfer), where a copy
// would sit beside the original at the peak.
template <typename T>
py::array_t<T> to_numpy_moved(std::vector<T>&& v) {
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule free_owner(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owner->size()), owner->data(), free_owner);
}

void bind_topology(py::module_& m);
void bind_schedule(py::module_& m);
void bind_analysis(py::module_& m);
void bind_algorithms(py::module_& m);
void bind_simulate(py::module_& m);
void bind_wafer(py::module_& m);
void bind_io(py::module_& m);
void bind_routers(py::module_& m);
