// Bindings of the network simulator: the model is the C++ NetworkModel bound
// as a class (the Python NetworkModel dataclass owns defaults, presets and
// user-facing checks, and makes one of these to run), and the result comes
// back as a dict of NumPy arrays.
#include <string>

#include "pybind.hpp"
#include "wafercoll/errors.hpp"
#include "wafercoll/simulate/huge_alloc.hpp"
#include "wafercoll/simulate/simulate.hpp"

using namespace wafercoll;

namespace {

SimOptions make_options(const std::vector<NodeId>& placement, bool transfers, bool timeline,
                        std::int64_t max_events, const std::string& queue = "auto",
                        bool trace = false) {
  SimOptions o;
  o.record_trace = trace;
  if (queue == "auto")
    o.queue = EventQueueKind::automatic;
  else if (queue == "heap")
    o.queue = EventQueueKind::heap;
  else if (queue == "buckets")
    o.queue = EventQueueKind::buckets;
  else
    throw std::invalid_argument("event_queue must be 'auto', 'heap' or 'buckets', got '" +
                                queue + "'");
  o.placement = placement;
  o.record_transfers = transfers;
  o.record_timeline = timeline;
  o.max_events = max_events;
  return o;
}

// Every result array moves into its NumPy array (no copy beside the run's
// state, which the arena keeps for the next run).
py::dict result_dict(SimResult& r, bool transfers, bool timeline, bool trace) {
  py::dict d;
  d["time_s"] = r.time_s;
  d["rank_finish_s"] = to_numpy_moved(std::move(r.rank_finish_s));
  d["link_busy_s"] = to_numpy_moved(std::move(r.link_busy_s));
  d["link_bytes"] = to_numpy_moved(std::move(r.link_bytes));
  d["injection_busy_s"] = to_numpy_moved(std::move(r.injection_busy_s));
  d["ejection_busy_s"] = to_numpy_moved(std::move(r.ejection_busy_s));
  d["compute_busy_s"] = to_numpy_moved(std::move(r.compute_busy_s));
  d["switch_busy_s"] = to_numpy_moved(std::move(r.switch_busy_s));
  d["events"] = r.events;
  d["packets"] = r.packets;
  if (transfers) {
    d["transfer_ready_s"] = to_numpy_moved(std::move(r.transfer_ready_s));
    d["transfer_finish_s"] = to_numpy_moved(std::move(r.transfer_finish_s));
  }
  if (timeline) {
    d["timeline_t"] = to_numpy_moved(std::move(r.timeline_t));
    d["timeline_busy"] = to_numpy_moved(std::move(r.timeline_busy));
  }
  if (trace) {
    d["trace_transfer"] = to_numpy_moved(std::move(r.trace_transfer));
    d["trace_packet"] = to_numpy_moved(std::move(r.trace_packet));
    d["trace_stage"] = to_numpy_moved(std::move(r.trace_stage));
    d["trace_start_s"] = to_numpy_moved(std::move(r.trace_start_s));
    d["trace_finish_s"] = to_numpy_moved(std::move(r.trace_finish_s));
  }
  if (!r.task_finish_s.empty()) {
    d["task_start_s"] = to_numpy_moved(std::move(r.task_start_s));
    d["task_finish_s"] = to_numpy_moved(std::move(r.task_finish_s));
  }
  return d;
}

template <typename T>
std::vector<T> to_vector(const py::array_t<T, py::array::c_style | py::array::forcecast>& a) {
  return std::vector<T>(a.data(), a.data() + a.size());
}

}  // namespace

void bind_simulate(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TooManyEvents& e) {
      py::object cls = py::module_::import("wafercoll._errors").attr("SimulationTooLarge");
      py::object exc = cls(e.what(), py::arg("events") = e.events(),
                           py::arg("max_events") = e.max_events());
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
  py::class_<NetworkModel>(m, "NetworkModel",
                           "The simulator's network model (private; use wafercoll.NetworkModel)")
      .def(py::init<>())
      .def_readwrite("bandwidth_Bps", &NetworkModel::bandwidth_Bps)
      .def_readwrite("hop_latency_s", &NetworkModel::hop_latency_s)
      .def_readwrite("alpha_s", &NetworkModel::alpha_s)
      .def_readwrite("packet_bytes", &NetworkModel::packet_bytes)
      .def_readwrite("flit_bytes", &NetworkModel::flit_bytes)
      .def_property(
          "switching", [](const NetworkModel& n) { return std::string(to_string(n.switching)); },
          [](NetworkModel& n, const std::string& v) { n.switching = switching_from_string(v); })
      .def_readwrite("gamma_s_per_byte", &NetworkModel::gamma_s_per_byte)
      .def_readwrite("copy_s_per_byte", &NetworkModel::copy_s_per_byte)
      .def_readwrite("pad_packets", &NetworkModel::pad_packets)
      .def_property(
          "dependencies",
          [](const NetworkModel& n) { return std::string(to_string(n.dependencies)); },
          [](NetworkModel& n, const std::string& v) {
            n.dependencies = dependencies_from_string(v);
          })
      .def_readwrite("ports", &NetworkModel::ports)
      .def_readwrite("port_bandwidth_Bps", &NetworkModel::port_bandwidth_Bps)
      .def_readwrite("port_latency_s", &NetworkModel::port_latency_s)
      .def_readwrite("switch_overhead_s", &NetworkModel::switch_overhead_s)
      .def_readwrite("clock_Hz", &NetworkModel::clock_Hz)
      .def_readwrite("switch_reduce_Bps", &NetworkModel::switch_reduce_Bps)
      .def_readwrite("switch_buffer_bytes", &NetworkModel::switch_buffer_bytes)
      .def_readwrite("ecmp", &NetworkModel::ecmp)
      .def_readwrite("spray", &NetworkModel::spray)
      .def("validate", &NetworkModel::validate);
  m.def(
      "simulate",
      [](const Schedule& s, const Topology& topo, const NetworkModel& net,
         const std::vector<NodeId>& placement, bool transfers, bool timeline,
         std::int64_t max_events, const std::string& queue, bool trace) {
        const SimOptions opt =
            make_options(placement, transfers, timeline, max_events, queue, trace);
        SimResult r;
        {
          py::gil_scoped_release release;  // pure C++ from here to the end of the run
          r = simulate(s, topo, net, opt);
        }
        return result_dict(r, transfers, timeline, trace);
      },
      py::arg("schedule"), py::arg("topology"), py::arg("model"), py::arg("placement"),
      py::arg("transfers"), py::arg("timeline"), py::arg("max_events"),
      py::arg("queue") = "auto", py::arg("trace") = false);
  m.def(
      "release_cached_memory",
      []() {
        py::gil_scoped_release release;
        return sim::release_huge_blocks();
      },
      "Free the simulator's cached blocks; returns the bytes freed.");
  m.def("cached_memory", []() { return sim::cached_huge_bytes(); },
        "Bytes of freed simulator blocks kept for reuse.");
  m.def("huge_pages_offered", []() { return huge_pages_offered(); },
        "Whether large randomly read blocks are offered for transparent huge pages "
        "(WAFERCOLL_HUGE_PAGES=1).");
  m.def(
      "simulate_tasks",
      [](const Schedule& s, const Topology& topo, const NetworkModel& net,
         const std::vector<NodeId>& placement, bool transfers, std::int64_t max_events,
         const py::array_t<RankId, py::array::c_style | py::array::forcecast>& task_rank,
         const py::array_t<double, py::array::c_style | py::array::forcecast>& task_seconds,
         const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& before,
         const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& after) {
        const SimOptions opt = make_options(placement, transfers, false, max_events);
        TaskGraph g;
        g.rank = to_vector(task_rank);
        g.duration_s = to_vector(task_seconds);
        g.before = to_vector(before);
        g.after = to_vector(after);
        SimResult r;
        {
          py::gil_scoped_release release;
          r = simulate(s, topo, net, opt, g);
        }
        return result_dict(r, transfers, false, false);
      },
      py::arg("schedule"), py::arg("topology"), py::arg("model"), py::arg("placement"),
      py::arg("transfers"), py::arg("max_events"), py::arg("task_rank"),
      py::arg("task_seconds"), py::arg("before"), py::arg("after"));
  m.def(
      "simulation_events",
      [](const Schedule& s, const Topology& topo, const NetworkModel& net,
         const std::vector<NodeId>& placement, std::int64_t max_events) {
        const SimOptions opt = make_options(placement, false, false, max_events);
        py::gil_scoped_release release;
        return simulation_events(s, topo, net, opt);
      },
      py::arg("schedule"), py::arg("topology"), py::arg("model"), py::arg("placement"),
      py::arg("max_events"));
}
