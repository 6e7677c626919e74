// Bindings of the file-format readers: GOAL (LogGOPSim) to arrays of messages.
//
// The result is a dict of NumPy arrays that take over the core's vectors (no
// copy), so that a file of millions of messages crosses into Python as a
// handful of objects. The labels of the transfers ("rank S l1 -> rank D l2
// (tag G)") are made only when asked for, by goal_labels. A malformed input
// raises wafercoll._core.GoalError, a ValueError whose args are (message,
// element, line, kind, text); wafercoll.io turns it into a FormatError naming
// the file.
#include <memory>
#include <string>
#include <type_traits>

#include "pybind.hpp"
#include "wafercoll/io/goal.hpp"

using namespace wafercoll;

namespace {

PYBIND11_CONSTINIT py::gil_safe_call_once_and_store<py::object> goal_error_type;

// A 1-D array that owns the container's storage (moved, not copied).
template <typename Container>
py::array take(Container&& c) {
  using T = typename Container::value_type;
  using Stored = std::conditional_t<std::is_same_v<T, char>, std::uint8_t, T>;
  auto* owned = new Container(std::move(c));
  py::capsule owner(owned, [](void* p) { delete static_cast<Container*>(p); });
  return py::array_t<Stored>(static_cast<py::ssize_t>(owned->size()),
                             reinterpret_cast<const Stored*>(owned->data()), owner);
}

py::dict messages_dict(GoalMessages&& g) {
  py::dict d;
  d["num_ranks"] = g.num_ranks;
  d["src"] = take(std::move(g.src));
  d["dst"] = take(std::move(g.dst));
  d["tag"] = take(std::move(g.tag));
  d["size"] = take(std::move(g.size));
  d["dep_offsets"] = take(std::move(g.dep_offsets));
  d["deps"] = take(std::move(g.deps));
  d["send_op"] = take(std::move(g.send_op));
  d["recv_op"] = take(std::move(g.recv_op));
  d["label_offsets"] = take(std::move(g.label_offsets));
  d["label_text"] = take(std::move(g.label_text));
  return d;
}

template <typename T>
std::vector<T> vec(const py::array_t<T, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 1) throw std::invalid_argument("goal_labels: expected 1-D arrays");
  return std::vector<T>(a.data(), a.data() + a.size());
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
      [](const py::bytes& path) {
        const std::string p = path;
        GoalMessages g;
        {
          // Reading, parsing and matching touch only C++ data.
          py::gil_scoped_release release;
          g = read_goal_file(p);
        }
        return messages_dict(std::move(g));
      },
      py::arg("path"), "Messages of a GOAL file (path as bytes, os.fsencode); see read_goal_text.");
  m.def(
      "read_goal_text",
      [](const py::bytes& text) {
        // A view of the bytes object, which the caller keeps alive and which
        // cannot change (bytes are immutable), so the GIL can go.
        const std::string_view view = text;
        GoalMessages g;
        {
          py::gil_scoped_release release;
          g = read_goal_text(view);
        }
        return messages_dict(std::move(g));
      },
      py::arg("text"),
      "Messages of GOAL text (UTF-8 bytes): num_ranks, src, dst, tag, size, dep_offsets, "
      "deps, send_op, recv_op, label_offsets, label_text (uint8).");
  m.def(
      "goal_labels",
      [](const py::array_t<RankId, py::array::c_style | py::array::forcecast>& src,
         const py::array_t<RankId, py::array::c_style | py::array::forcecast>& dst,
         const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& tag,
         const py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>& send_op,
         const py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>& recv_op,
         const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& offsets,
         const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& text) {
        GoalMessages g;
        g.src = vec(src);
        g.dst = vec(dst);
        g.tag = vec(tag);
        g.send_op = vec(send_op);
        g.recv_op = vec(recv_op);
        g.label_offsets = vec(offsets);
        const auto t = vec(text);
        g.label_text.assign(t.begin(), t.end());
        std::string out;
        {
          py::gil_scoped_release release;  // formatting C++ data only
          out = goal_labels(g);
        }
        return py::bytes(out);
      },
      py::arg("src"), py::arg("dst"), py::arg("tag"), py::arg("send_op"), py::arg("recv_op"),
      py::arg("label_offsets"), py::arg("label_text"),
      "The labels 'rank S l1 -> rank D l2 (tag G)' of read_goal_*'s transfers, '\\n'-joined.");
}
