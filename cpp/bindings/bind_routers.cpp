// Binding of the router model (wafercoll/simulate/routers.hpp), called by
// wafercoll._routers with the routes and costs already laid out.
#include "pybind.hpp"
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
         double alpha_s, std::int64_t max_events) {
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
      py::arg("deps"), py::arg("alpha_s"), py::arg("max_events"),
      "Input-queued routers with credit-based flow control (see wafercoll._routers).");
}
