// Bindings of the file-format readers: GOAL (LogGOPSim) to arrays of messages.
//
// The result is a dict of NumPy arrays plus the labels as one bytes object
// ('\n'-separated), so that a file of millions of messages crosses into
// Python as a handful of objects. A malformed input raises
// wafercoll._core.GoalError, a ValueError whose args are (message, element,
// line, kind, text); wafercoll.io turns it into a FormatError naming the file.
#include <string>

#include "pybind.hpp"
#include "wafercoll/io/goal.hpp"

using namespace wafercoll;

namespace {

PYBIND11_CONSTINIT py::gil_safe_call_once_and_store<py::object> goal_error_type;

py::dict messages_dict(const GoalMessages& g, bool op_labels) {
  py::dict d;
  d["num_ranks"] = g.num_ranks;
  d["src"] = to_numpy(g.src);
  d["dst"] = to_numpy(g.dst);
  d["tag"] = to_numpy(g.tag);
  d["size"] = to_numpy(g.size);
  d["dep_offsets"] = to_numpy(g.dep_offsets);
  d["deps"] = to_numpy(g.deps);
  d["labels"] = py::bytes(g.labels);
  if (op_labels) {
    d["send_labels"] = py::bytes(g.send_labels);
    d["recv_labels"] = py::bytes(g.recv_labels);
  }
  return d;
}

}  // namespace

void bind_io(py::module_& m) {
  goal_error_type.call_once_and_store_result([&]() {
    return py::object(py::exception<GoalError>(m, "GoalError", PyExc_ValueError));
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const GoalError& e) {
      const py::tuple args =
          py::make_tuple(e.what(), e.element(), e.line(), static_cast<int>(e.kind()),
                         py::bytes(e.text()));
      PyErr_SetObject(goal_error_type.get_stored().ptr(), args.ptr());
    }
  });

  m.def(
      "read_goal_file",
      [](const py::bytes& path, bool op_labels) {
        const std::string p = path;
        GoalMessages g;
        {
          // Reading, parsing and matching touch only C++ data.
          py::gil_scoped_release release;
          g = read_goal_file(p, op_labels);
        }
        return messages_dict(g, op_labels);
      },
      py::arg("path"), py::arg("op_labels") = false,
      "Messages of a GOAL file (path as bytes, os.fsencode); see read_goal_text.");
  m.def(
      "read_goal_text",
      [](const py::bytes& text, bool op_labels) {
        // A view of the bytes object, which the caller keeps alive and which
        // cannot change (bytes are immutable), so the GIL can go.
        const std::string_view view = text;
        GoalMessages g;
        {
          py::gil_scoped_release release;
          g = read_goal_text(view, op_labels);
        }
        return messages_dict(g, op_labels);
      },
      py::arg("text"), py::arg("op_labels") = false,
      "Messages of GOAL text (UTF-8 bytes): num_ranks, src, dst, tag, size, "
      "dep_offsets, deps, labels (and send_labels, recv_labels with op_labels).");
}
