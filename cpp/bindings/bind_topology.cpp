// Bindings of the topology area: _core.Topology mirrors wafercoll::Topology,
// with per-link data and routes returned as NumPy arrays.
#include <algorithm>
#include <array>
#include <string>

#include "pybind.hpp"
#include "wafercoll/topology/topology.hpp"

using namespace wafercoll;

namespace {

// Largest endpoint count for hops_matrix(): 8192^2 int32 entries are 256 MiB.
constexpr NodeId kMaxHopsMatrixEndpoints = 8192;

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
const T* data_1d(const Array<T>& a, const char* name, py::ssize_t size) {
  if (a.ndim() != 1 || a.shape(0) != size) {
    throw std::invalid_argument(std::string("custom: ") + name +
                                " must be a 1-D array with one entry per link (" +
                                std::to_string(size) + ")");
  }
  return a.data();
}

std::vector<Link> make_links(const Array<NodeId>& src, const Array<NodeId>& dst,
                             const Array<double>& bandwidth_Bps,
                             const Array<double>& latency_s) {
  if (src.ndim() != 1) throw std::invalid_argument("custom: src must be a 1-D array");
  const py::ssize_t n = src.shape(0);
  const NodeId* s = src.data();
  const NodeId* d = data_1d(dst, "dst", n);
  const double* bw = data_1d(bandwidth_Bps, "bandwidth_Bps", n);
  const double* lat = data_1d(latency_s, "latency_s", n);
  std::vector<Link> links(static_cast<std::size_t>(n));
  for (py::ssize_t i = 0; i < n; ++i) links[i] = Link{s[i], d[i], bw[i], lat[i]};
  return links;
}

Topology make_custom(NodeId num_endpoints, NodeId num_hidden_routers,
                     const Array<NodeId>& src, const Array<NodeId>& dst,
                     const Array<double>& bandwidth_Bps,
                     const Array<double>& latency_s) {
  return Topology::custom(num_endpoints, num_hidden_routers,
                          make_links(src, dst, bandwidth_Bps, latency_s));
}

Topology make_custom_routed(NodeId num_endpoints, NodeId num_hidden_routers,
                           const Array<NodeId>& src, const Array<NodeId>& dst,
                           const Array<double>& bandwidth_Bps,
                           const Array<double>& latency_s,
                           const Array<std::int64_t>& route_offsets,
                           const Array<LinkId>& route_links) {
  std::vector<std::int64_t> off(route_offsets.data(),
                                route_offsets.data() + route_offsets.size());
  std::vector<LinkId> ids(route_links.data(), route_links.data() + route_links.size());
  return Topology::custom_routed(num_endpoints, num_hidden_routers,
                                 make_links(src, dst, bandwidth_Bps, latency_s),
                                 std::move(off), std::move(ids));
}

template <typename T, typename Get>
py::array_t<T> per_link(const Topology& t, Get get) {
  py::array_t<T> out(static_cast<py::ssize_t>(t.num_links()));
  T* p = out.mutable_data();
  for (LinkId i = 0; i < t.num_links(); ++i) p[i] = get(t.link(i));
  return out;
}

py::array_t<std::int32_t> hops_matrix(const Topology& t) {
  const NodeId e = t.num_endpoints();
  if (e > kMaxHopsMatrixEndpoints) {
    throw std::invalid_argument("hops_matrix: " + std::to_string(e) +
                                " endpoints exceed the limit of " +
                                std::to_string(kMaxHopsMatrixEndpoints) +
                                " (use hops() per pair instead)");
  }
  const auto side = static_cast<py::ssize_t>(e);
  py::array_t<std::int32_t> out({side, side});
  std::int32_t* p = out.mutable_data();
  {
    // Pure C++ work on a Topology that is immutable (its custom routing cache
    // has its own lock) and on a buffer no Python code can see yet.
    py::gil_scoped_release release;
    for (NodeId b = 0; b < e; ++b) {
      const std::vector<std::int32_t> col = t.hops_to(b);
      for (NodeId a = 0; a < e; ++a) p[static_cast<std::int64_t>(a) * e + b] = col[a];
    }
  }
  return out;
}

// next_hops() as a (nodes, endpoints) array; row u, column d is the first
// link of u's route to endpoint d.
py::array_t<LinkId> next_hops(const Topology& t) {
  std::vector<LinkId> table;
  {
    // Pure C++ work on an immutable Topology (the table's columns are built
    // under its own lock).
    py::gil_scoped_release release;
    table = t.next_hops();
  }
  py::array_t<LinkId> out({static_cast<py::ssize_t>(t.num_nodes()),
                           static_cast<py::ssize_t>(t.num_endpoints())});
  std::copy(table.begin(), table.end(), out.mutable_data());
  return out;
}

}  // namespace

void bind_topology(py::module_& m) {
  py::class_<Topology> cls(m, "Topology");
  cls.attr("MAX_GRID_NODES") = Topology::kMaxGridNodes;
  cls.attr("MAX_CUSTOM_NODES") = Topology::kMaxCustomNodes;
  cls.attr("MAX_ROUTED_ENDPOINTS") = Topology::kMaxRoutedEndpoints;
  cls.attr("MAX_CLUSTER_RANKS") = Topology::kMaxClusterRanks;
  cls.attr("MAX_STAR_ENDPOINTS") = Topology::kMaxStarEndpoints;
  cls.attr("MAX_NEXT_HOP_ENTRIES") = Topology::kMaxNextHopEntries;
  cls.attr("MAX_HOPS_MATRIX_ENDPOINTS") = kMaxHopsMatrixEndpoints;
  cls.def_static("line", &Topology::line, py::arg("n"), py::arg("bandwidth_Bps") = 1e9,
                 py::arg("latency_s") = 0.0)
      .def_static("ring", &Topology::ring, py::arg("n"), py::arg("bandwidth_Bps") = 1e9,
                  py::arg("latency_s") = 0.0)
      .def_static("mesh", &Topology::mesh, py::arg("rows"), py::arg("cols"),
                  py::arg("bandwidth_Bps") = 1e9, py::arg("latency_s") = 0.0)
      .def_static("torus", &Topology::torus, py::arg("rows"), py::arg("cols"),
                  py::arg("bandwidth_Bps") = 1e9, py::arg("latency_s") = 0.0)
      .def_static("star", &Topology::star, py::arg("n"), py::arg("bandwidth_Bps") = 1e9,
                  py::arg("latency_s") = 0.0)
      .def_static("custom", &make_custom, py::arg("num_endpoints"),
                  py::arg("num_hidden_routers"), py::arg("src"), py::arg("dst"),
                  py::arg("bandwidth_Bps"), py::arg("latency_s"),
                  "Links src[i] -> dst[i] with per-link bandwidth and latency.")
      .def_static("custom_routed", &make_custom_routed, py::arg("num_endpoints"),
                  py::arg("num_hidden_routers"), py::arg("src"), py::arg("dst"),
                  py::arg("bandwidth_Bps"), py::arg("latency_s"),
                  py::arg("route_offsets"), py::arg("route_links"),
                  "custom() with an explicit route table in CSR form (E*E+1 offsets).")
      .def_static(
          "cluster",
          [](NodeId nodes, NodeId ppn, NodeId sockets, std::vector<NodeId> rank_node,
             std::array<double, 4> bandwidth_Bps, std::array<double, 4> latency_s) {
            return Topology::cluster(nodes, ppn, sockets, std::move(rank_node),
                                     bandwidth_Bps, latency_s);
          },
          py::arg("nodes"), py::arg("ppn"), py::arg("sockets"), py::arg("rank_node"),
          py::arg("bandwidth_Bps"), py::arg("latency_s"),
          "Processes, socket switches, node routers and a fabric switch; "
          "bandwidth and latency per link class (process, socket, nic, lane; "
          "lane bandwidth 0: no lanes).")
      .def("with_labels", &Topology::with_labels, py::arg("family"), py::arg("display"))
      .def("cluster_nodes", &Topology::cluster_nodes)
      .def("ppn", &Topology::ppn)
      .def("sockets", &Topology::sockets)
      .def("rank_node", [](const Topology& t) { return to_numpy(t.rank_node()); })
      .def("rank_socket", [](const Topology& t) { return to_numpy(t.rank_socket()); })
      .def("locality", &Topology::locality, py::arg("a"), py::arg("b"))
      .def("kind", &Topology::kind)
      .def("name", &Topology::name)
      .def("num_endpoints", &Topology::num_endpoints)
      .def("num_nodes", &Topology::num_nodes)
      .def("num_links", &Topology::num_links)
      .def("is_endpoint", &Topology::is_endpoint, py::arg("node"))
      .def("rows", &Topology::rows)
      .def("cols", &Topology::cols)
      .def("coords", &Topology::coords, py::arg("node"))
      .def("node_at", &Topology::node_at, py::arg("row"), py::arg("col"))
      .def("link_id", &Topology::link_id, py::arg("u"), py::arg("v"))
      .def(
          "link",
          [](const Topology& t, LinkId id) {
            const Link l = t.link(id);
            return py::make_tuple(l.src, l.dst, l.bandwidth_Bps, l.latency_s);
          },
          py::arg("id"), "(src, dst, bandwidth_Bps, latency_s) of one link.")
      .def(
          "route",
          [](const Topology& t, NodeId src, NodeId dst) {
            return to_numpy(t.route(src, dst));
          },
          py::arg("src"), py::arg("dst"))
      .def("hops", &Topology::hops, py::arg("src"), py::arg("dst"))
      .def(
          "hops_to",
          [](const Topology& t, NodeId dst) { return to_numpy(t.hops_to(dst)); },
          py::arg("dst"))
      .def("hops_matrix", &hops_matrix)
      .def("next_hops", &next_hops)
      .def(
          "search_route",
          [](const Topology& t, NodeId src, NodeId dst) {
            return to_numpy(t.search_route(src, dst));
          },
          py::arg("src"), py::arg("dst"),
          "route() by the per-destination search, without the next-hop table.")
      .def("link_src",
           [](const Topology& t) {
             return per_link<std::int32_t>(t, [](const Link& l) { return l.src; });
           })
      .def("link_dst",
           [](const Topology& t) {
             return per_link<std::int32_t>(t, [](const Link& l) { return l.dst; });
           })
      .def("link_bandwidth_Bps",
           [](const Topology& t) {
             return per_link<double>(t, [](const Link& l) { return l.bandwidth_Bps; });
           })
      .def("link_latency_s",
           [](const Topology& t) {
             return per_link<double>(t, [](const Link& l) { return l.latency_s; });
           })
      .def("__repr__", [](const Topology& t) {
        return "<_core.Topology " + t.name() + ">";
      });
}
