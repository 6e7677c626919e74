// Binding of the router model (wafercoll/simulate/routers.hpp), called by
// wafercoll._routers with the routes and costs already laid out.
#include "pybind.hpp"
#include "wafercoll/simulate/pyset.hpp"
#include "wafercoll/simulate/routers.hpp"

using namespace wafercoll;

namespace {

template <typename T>
std::vector<T> vec(const py::array_t<T, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 1) throw std::invalid_argument("expected a 1-D array");
  return std::vector<T>(a.data(), a.data() + a.size());
}

using I32 = py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;

}  // namespace

void bind_routers(py::module_& m) {
  m.def(
      "simulate_routers",
      [](const I32& link_src, const I32& link_dst, const F64& inv_bw, const F64& latency_s,
         std::int64_t num_nodes, std::int64_t flit_bytes, std::int64_t buffer_packets,
         bool store_and_forward, const I64& bytes, std::int64_t packet_bytes, bool pad_packets,
         const I64& route_off, const I32& route_links, const I64& dep_off, const I32& deps,
         double alpha_s, std::int64_t max_events, std::int32_t interfaces,
         std::int64_t interface_queue_packets, double handover_s, double channel_s_per_byte,
         std::int64_t interface_buffer_packets, bool python_set_order,
         double aggregate_s_per_byte,
         const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& reduces,
         const I64& issue_step,
         const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& issue_strict) {
        RouterNetwork net;
        net.link_src = vec(link_src);
        net.link_dst = vec(link_dst);
        net.inv_bw = vec(inv_bw);
        net.latency_s = vec(latency_s);
        net.num_nodes = num_nodes;
        net.flit_bytes = flit_bytes;
        net.buffer_packets = buffer_packets;
        net.store_and_forward = store_and_forward;
        RouterFlows f;
        f.bytes = vec(bytes);
        f.packet_bytes = packet_bytes;
        f.pad_packets = pad_packets;
        f.route_off = vec(route_off);
        f.route_links = vec(route_links);
        f.dep_off = vec(dep_off);
        f.deps = vec(deps);
        f.alpha_s = alpha_s;
        f.interfaces = interfaces;
        f.interface_queue_packets = interface_queue_packets;
        f.handover_s = handover_s;
        f.channel_s_per_byte = channel_s_per_byte;
        f.interface_buffer_packets = interface_buffer_packets;
        f.python_set_order = python_set_order;
        f.aggregate_s_per_byte = aggregate_s_per_byte;
        f.reduces = vec(reduces);
        f.issue_step = vec(issue_step);
        f.issue_strict = vec(issue_strict);
        RouterResult r;
        {
          py::gil_scoped_release release;
          r = simulate_routers(f, net, max_events);
        }
        py::dict out;
        out["ready_s"] = to_numpy_moved(std::move(r.ready_s));
        out["finish_s"] = to_numpy_moved(std::move(r.finish_s));
        out["link_busy_s"] = to_numpy_moved(std::move(r.link_busy_s));
        out["link_bytes"] = to_numpy_moved(std::move(r.link_bytes));
        out["events"] = r.events;
        out["packets"] = r.packets;
        return out;
      },
      py::arg("link_src"), py::arg("link_dst"), py::arg("inv_bw"), py::arg("latency_s"),
      py::arg("num_nodes"), py::arg("flit_bytes"), py::arg("buffer_packets"),
      py::arg("store_and_forward"), py::arg("bytes"), py::arg("packet_bytes"),
      py::arg("pad_packets"), py::arg("route_off"), py::arg("route_links"), py::arg("dep_off"),
      py::arg("deps"), py::arg("alpha_s"), py::arg("max_events"), py::arg("interfaces") = 0,
      py::arg("interface_queue_packets") = 0, py::arg("handover_s") = 0.0,
      py::arg("channel_s_per_byte") = 0.0, py::arg("interface_buffer_packets") = std::int64_t{1} << 40,
      py::arg("python_set_order") = false, py::arg("aggregate_s_per_byte") = 0.0,
      py::arg("reduces") = py::array_t<std::uint8_t>(0),
      py::arg("issue_step") = I64(0), py::arg("issue_strict") = py::array_t<std::uint8_t>(0),
      "Input-queued routers with credit-based flow control (see wafercoll._routers).");
  m.def(
      "_python_set_orders",
      [](std::int32_t keys, const I64& ops) {
        // ops: k >= 0 adds k, k < 0 removes -1 - k; the iteration order after each
        if (keys < 0 || keys > 1024) throw std::invalid_argument("keys must be in [0, 1024]");
        PySetSlots set(keys);
        std::vector<std::vector<std::int32_t>> out;
        for (const std::int64_t op : vec(ops)) {
          if (op >= 1024 || op < -1025) throw std::invalid_argument("ops out of range");
          if (op >= 0)
            set.add(static_cast<std::int32_t>(op));
          else
            set.remove(static_cast<std::int32_t>(-1 - op));
          out.push_back(set.order());
        }
        return out;
      },
      py::arg("keys"), py::arg("ops"),
      "The iteration orders of a CPython set of 0 .. keys - 1 after each add "
      "(k) or remove (-1 - k): the model behind Driver(order='python_set').");
}
