// Bindings of the network simulator: the model is passed as keyword values
// (the Python NetworkModel dataclass owns defaults and presets) and the
// result comes back as a dict of NumPy arrays.
#include <string>

#include "pybind.hpp"
#include "wafercoll/simulate/simulate.hpp"

using namespace wafercoll;

namespace {

NetworkModel make_model(const py::dict& d) {
  NetworkModel n;
  n.bandwidth_Bps = d["bandwidth_Bps"].cast<double>();
  n.hop_latency_s = d["hop_latency_s"].cast<double>();
  n.alpha_s = d["alpha_s"].cast<double>();
  n.packet_bytes = d["packet_bytes"].cast<Bytes>();
  n.flit_bytes = d["flit_bytes"].cast<Bytes>();
  n.switching = switching_from_string(d["switching"].cast<std::string>());
  n.gamma_s_per_byte = d["gamma_s_per_byte"].cast<double>();
  n.copy_s_per_byte = d["copy_s_per_byte"].cast<double>();
  n.dependencies = dependencies_from_string(d["dependencies"].cast<std::string>());
  n.ports = d["ports"].cast<std::int32_t>();
  n.port_bandwidth_Bps = d["port_bandwidth_Bps"].cast<double>();
  n.port_latency_s = d["port_latency_s"].cast<double>();
  n.clock_Hz = d["clock_Hz"].cast<double>();
  return n;
}

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

}  // namespace

void bind_simulate(py::module_& m) {
  m.def(
      "simulate",
      [](const Schedule& s, const Topology& topo, const py::dict& model,
         const std::vector<NodeId>& placement, bool transfers, bool timeline,
         std::int64_t max_events, const std::string& queue, bool trace) {
        const NetworkModel net = make_model(model);
        const SimOptions opt =
            make_options(placement, transfers, timeline, max_events, queue, trace);
        SimResult r;
        {
          py::gil_scoped_release release;  // pure C++ from here to the end of the run
          r = simulate(s, topo, net, opt);
        }
        py::dict d;
        d["time_s"] = r.time_s;
        d["rank_finish_s"] = to_numpy(r.rank_finish_s);
        d["link_busy_s"] = to_numpy(r.link_busy_s);
        d["link_bytes"] = to_numpy(r.link_bytes);
        d["injection_busy_s"] = to_numpy(r.injection_busy_s);
        d["ejection_busy_s"] = to_numpy(r.ejection_busy_s);
        d["compute_busy_s"] = to_numpy(r.compute_busy_s);
        d["events"] = r.events;
        d["packets"] = r.packets;
        if (transfers) {
          d["transfer_ready_s"] = to_numpy(r.transfer_ready_s);
          d["transfer_finish_s"] = to_numpy(r.transfer_finish_s);
        }
        if (timeline) {
          d["timeline_t"] = to_numpy(r.timeline_t);
          d["timeline_busy"] = to_numpy(r.timeline_busy);
        }
        if (trace) {
          d["trace_transfer"] = to_numpy(r.trace_transfer);
          d["trace_packet"] = to_numpy(r.trace_packet);
          d["trace_stage"] = to_numpy(r.trace_stage);
          d["trace_start_s"] = to_numpy(r.trace_start_s);
          d["trace_finish_s"] = to_numpy(r.trace_finish_s);
        }
        return d;
      },
      py::arg("schedule"), py::arg("topology"), py::arg("model"), py::arg("placement"),
      py::arg("transfers"), py::arg("timeline"), py::arg("max_events"),
      py::arg("queue") = "auto", py::arg("trace") = false);
  m.def(
      "simulation_events",
      [](const Schedule& s, const Topology& topo, const py::dict& model,
         const std::vector<NodeId>& placement, std::int64_t max_events) {
        const NetworkModel net = make_model(model);
        const SimOptions opt = make_options(placement, false, false, max_events);
        py::gil_scoped_release release;
        return simulation_events(s, topo, net, opt);
      },
      py::arg("schedule"), py::arg("topology"), py::arg("model"), py::arg("placement"),
      py::arg("max_events"));
}
