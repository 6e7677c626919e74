// Bindings of the schedule area: the Schedule container, its derived views
// and the translation of ScheduleError into wafercoll.ScheduleError.
#include <new>
#include <optional>

#include "pybind.hpp"
#include "wafercoll/errors.hpp"
#include "wafercoll/schedule/schedule.hpp"

using namespace wafercoll;

namespace {

Collective make_collective(const std::string& kind, RankId root,
                           const std::vector<RankId>& owners,
                           const std::vector<std::uint8_t>& participants,
                           const std::vector<RankId>& targets,
                           const std::vector<std::uint8_t>& switches) {
  Collective c;
  c.switches = switches;
  c.kind = collective_from_string(kind);
  c.root = root;
  c.owners = owners;
  c.participants = participants;
  c.targets = targets;
  return c;
}

template <typename T>
std::vector<T> vec(const py::array_t<T, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 1) throw std::invalid_argument("expected a 1-D array");
  return std::vector<T>(a.data(), a.data() + a.size());
}

// The offsets as Python sees them: rows + 1 int64 values, written out here
// (the schedule itself stores regular offsets as nothing, the others in 32
// bits when they fit).
py::array_t<std::int64_t> offsets_to_numpy(const CsrOffsets& off) {
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(off.rows() + 1));
  off.copy_to(out.mutable_data());
  return out;
}

using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

bool is_i64(const py::array& a) { return py::isinstance<py::array_t<std::int64_t>>(a); }

// A bulk append's argument check: `where: what` unless ok.
void need_arg(bool ok, const char* where, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(where) + ": " + what);
}

// Offsets o[0..rows] start at 0 and do not decrease.
void check_offsets(const std::int64_t* o, std::int64_t rows, const char* where,
                   const char* what) {
  need_arg(o[0] == 0, where, what);
  for (std::int64_t i = 0; i < rows; ++i) need_arg(o[i] <= o[i + 1], where, what);
}

// The checks of Schedule.append_csr's shapes, then the core's append over
// arrays of integer type I (contiguous copies made only where needed).
template <typename I>
void append_csr_arrays(Schedule& s, const py::array& src_in, const py::array& op_in,
                       const std::optional<I64Array>& dst_off, const py::array& dsts_in,
                       const std::optional<I64Array>& rng_off, const py::array& lo_in,
                       const py::array& hi_in, const std::optional<I64Array>& dep_off,
                       const py::array& deps_in) {
  using Arr = py::array_t<I, py::array::c_style | py::array::forcecast>;
  const Arr src = Arr::ensure(src_in), dsts = Arr::ensure(dsts_in), lo = Arr::ensure(lo_in),
            hi = Arr::ensure(hi_in), deps = Arr::ensure(deps_in);
  const auto op = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(op_in);
  if (!src || !dsts || !lo || !hi || !deps || !op) throw py::error_already_set();
  const std::int64_t n = src.size();
  auto need = [](bool ok, const char* what) { need_arg(ok, "append_csr", what); };
  need(op.size() == n, "op must have one entry per transfer");
  need(!dep_off || dep_off->size() == n + 1, "dep_offsets must have n + 1 entries");
  // without offsets, deps is an n x width matrix of candidates (-1: none)
  std::int64_t width = 0;
  if (!dep_off) {
    need(deps.ndim() == 2 && deps.shape(0) == n,
         "deps without offsets must be an (n, width) matrix");
    width = deps.shape(1);
  }
  need(!dst_off || dst_off->size() == n + 1, "dst_offsets must have n + 1 entries");
  need(!rng_off || rng_off->size() == n + 1, "block_offsets must have n + 1 entries");
  const std::int64_t nd = dst_off ? dst_off->at(n) : n;
  const std::int64_t nr = rng_off ? rng_off->at(n) : n;
  need(dsts.size() == nd, "dst does not match its offsets");
  need(lo.size() == nr && hi.size() == nr, "block ranges do not match their offsets");
  need(!dep_off || deps.size() == dep_off->at(n), "deps does not match its offsets");
  auto monotone = [&](const std::int64_t* o, const char* what) {
    if (o) check_offsets(o, n, "append_csr", what);
  };
  monotone(dep_off ? dep_off->data() : nullptr, "dep_offsets must start at 0 and not decrease");
  monotone(dst_off ? dst_off->data() : nullptr, "dst_offsets must start at 0 and not decrease");
  monotone(rng_off ? rng_off->data() : nullptr,
           "block_offsets must start at 0 and not decrease");
  s.append_csr(n, src.data(), op.data(), dst_off ? dst_off->data() : nullptr, dsts.data(),
               rng_off ? rng_off->data() : nullptr, lo.data(), hi.data(),
               dep_off ? dep_off->data() : nullptr, deps.data(), width);
}

// The op codes of a bulk append of unicast transfers (one destination and
// one range each), after checking that every field has one entry per
// transfer.
py::array_t<std::uint8_t, py::array::c_style> unicast_op(const I64Array& src,
                                                       const py::array& op_in,
                                                       const I64Array& dst, const I64Array& lo,
                                                       const I64Array& hi, const char* where) {
  auto op = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(op_in);
  if (!op) throw py::error_already_set();
  const std::int64_t n = src.size();
  need_arg(op.size() == n && dst.size() == n && lo.size() == n && hi.size() == n, where,
           "src, op, dst, lo and hi must have one entry per transfer");
  return op;
}

}  // namespace

void bind_schedule(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ScheduleError& e) {
      py::object cls = py::module_::import("wafercoll._errors").attr("ScheduleError");
      py::object exc = cls(e.what(), py::arg("kind") = e.kind(),
                           py::arg("transfer") = e.transfer(), py::arg("rank") = e.rank(),
                           py::arg("block") = e.block());
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });

  py::class_<Schedule>(m, "Schedule")
      .def(py::init([](RankId num_ranks, std::vector<Bytes> block_bytes,
                       const std::string& kind, RankId root,
                       const std::vector<RankId>& owners,
                       const std::vector<std::uint8_t>& participants,
                       const std::vector<RankId>& targets,
                       const std::vector<std::uint8_t>& switches) {
             return Schedule(
                 num_ranks, std::move(block_bytes),
                 make_collective(kind, root, owners, participants, targets, switches));
           }),
           py::arg("num_ranks"), py::arg("block_bytes"), py::arg("kind"),
           py::arg("root") = -1, py::arg("owners") = std::vector<RankId>{},
           py::arg("participants") = std::vector<std::uint8_t>{},
           py::arg("targets") = std::vector<RankId>{},
           py::arg("switches") = std::vector<std::uint8_t>{})
      .def_static(
          "from_arrays",
          [](RankId num_ranks, std::vector<Bytes> block_bytes, const std::string& kind,
             RankId root, const std::vector<RankId>& owners,
             const std::vector<std::uint8_t>& participants,
             const py::array_t<RankId, py::array::c_style | py::array::forcecast>& src,
             const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& op,
             const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& dst_off,
             const py::array_t<RankId, py::array::c_style | py::array::forcecast>& dsts,
             const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& rng_off,
             const py::array_t<BlockId, py::array::c_style | py::array::forcecast>& rng_lo,
             const py::array_t<BlockId, py::array::c_style | py::array::forcecast>& rng_hi,
             const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& dep_off,
             const py::array_t<TransferId, py::array::c_style | py::array::forcecast>& deps,
             const std::vector<RankId>& targets, const std::vector<std::uint8_t>& switches) {
            return Schedule::from_arrays(
                num_ranks, std::move(block_bytes),
                make_collective(kind, root, owners, participants, targets, switches),
                vec(src), vec(op),
                vec(dst_off), vec(dsts), vec(rng_off), vec(rng_lo), vec(rng_hi), vec(dep_off),
                vec(deps));
          },
          py::arg("num_ranks"), py::arg("block_bytes"), py::arg("kind"), py::arg("root"),
          py::arg("owners"), py::arg("participants"), py::arg("src"), py::arg("op"),
          py::arg("dst_offsets"), py::arg("dsts"), py::arg("range_offsets"),
          py::arg("range_lo"), py::arg("range_hi"), py::arg("dep_offsets"), py::arg("deps"),
          py::arg("targets") = std::vector<RankId>{},
          py::arg("switches") = std::vector<std::uint8_t>{})
      .def(
          "append_csr",
          [](Schedule& s, const py::array& src, const py::array& op,
             const std::optional<I64Array>& dst_off, const py::array& dsts,
             const std::optional<I64Array>& rng_off, const py::array& lo, const py::array& hi,
             const std::optional<I64Array>& dep_off, const py::array& deps) {
            // int64 arrays (NumPy's default) are read in place, the core
            // checking every value before it narrows; anything else is
            // converted to the core's 32-bit types first.
            const bool wide = is_i64(src) && is_i64(dsts) && is_i64(lo) && is_i64(hi) &&
                              is_i64(deps);
            if (wide)
              append_csr_arrays<std::int64_t>(s, src, op, dst_off, dsts, rng_off, lo, hi,
                                              dep_off, deps);
            else
              append_csr_arrays<std::int32_t>(s, src, op, dst_off, dsts, rng_off, lo, hi,
                                              dep_off, deps);
          },
          "Append transfers in CSR form (offsets relative to the batch; None: one each).")
      .def(
          "append_tiled",
          [](Schedule& s, const I64Array& src, const py::array& op_in, const I64Array& dst,
             const I64Array& lo, const I64Array& hi, const I64Array& first_off,
             const I64Array& first, const I64Array& later_off, const I64Array& later,
             std::int64_t chunks, std::int64_t block_stride) {
            const auto op = unicast_op(src, op_in, dst, lo, hi, "append_tiled");
            const std::int64_t n = src.size();
            auto csr = [&](const I64Array& off, const I64Array& flat, const char* what) {
              need_arg(off.size() == n + 1, "append_tiled", what);
              need_arg(off.data()[n] == flat.size(), "append_tiled", what);
              check_offsets(off.data(), n, "append_tiled", what);
            };
            csr(first_off, first, "first_offsets must be n + 1 offsets from 0 to len(first)");
            csr(later_off, later, "later_offsets must be n + 1 offsets from 0 to len(later)");
            py::gil_scoped_release nogil;
            s.append_tiled(n, chunks, block_stride, src.data(), op.data(), dst.data(),
                           lo.data(), hi.data(), first_off.data(), first.data(),
                           later_off.data(), later.data());
          },
          py::arg("src"), py::arg("op"), py::arg("dst"), py::arg("lo"), py::arg("hi"),
          py::arg("first_offsets"), py::arg("first"), py::arg("later_offsets"),
          py::arg("later"), py::arg("chunks"), py::arg("block_stride"),
          "Append `chunks` copies of one chunk's transfers (Schedule::append_tiled).")
      .def(
          "append_sendrecv",
          [](Schedule& s, const I64Array& src, const py::array& op_in, const I64Array& dst,
             const I64Array& lo, const I64Array& hi, const I64Array& step_off,
             py::array_t<std::int64_t, py::array::c_style> last_in,
             py::array_t<std::int64_t, py::array::c_style> last_out) {
            const auto op = unicast_op(src, op_in, dst, lo, hi, "append_sendrecv");
            const std::int64_t n = src.size();
            const char* where = "append_sendrecv";
            need_arg(step_off.size() >= 1, where, "step_offsets must hold at least one entry");
            need_arg(last_in.size() == s.num_ranks() && last_out.size() == s.num_ranks(), where,
                 "last_in and last_out must have one entry per rank");
            const std::int64_t* o = step_off.data();
            const std::int64_t steps = step_off.size() - 1;
            need_arg(o[steps] == n, where, "step_offsets must run from 0 to n");
            check_offsets(o, steps, where, "step_offsets must start at 0 and not decrease");
            std::int64_t* li = last_in.mutable_data();
            std::int64_t* lo_ = last_out.mutable_data();
            py::gil_scoped_release nogil;
            s.append_sendrecv(n, src.data(), op.data(), dst.data(), lo.data(), hi.data(),
                              steps, o, li, lo_);
          },
          py::arg("src"), py::arg("op"), py::arg("dst"), py::arg("lo"), py::arg("hi"),
          py::arg("step_offsets"), py::arg("last_in"), py::arg("last_out"),
          "Append steps under the sendrecv rule (Schedule::append_sendrecv).")
      .def(
          "reserve",
          [](Schedule& s, std::int64_t more) {
            if (more < 0)
              throw py::value_error("reserve: transfers must be >= 0, got " +
                                    std::to_string(more));
            // a hint: room beyond the schedule's limit is never needed
            const std::int64_t room = std::min(Schedule::kMaxTransfers - s.num_transfers(), more);
            try {
              s.reserve(s.num_transfers() + room);
            } catch (const std::bad_alloc&) {
              // no room to spare now: the arrays grow as they are filled
            }
          },
          py::arg("transfers"),
          "Room for `transfers` more transfers, made at once (Schedule::reserve).")
      .def(
          "add_transfer",
          [](Schedule& s, RankId src, const std::vector<RankId>& dsts,
             const std::vector<std::pair<BlockId, BlockId>>& ranges, const std::string& op,
             const std::vector<TransferId>& deps) {
            std::vector<BlockRange> r;
            r.reserve(ranges.size());
            for (const auto& [lo, hi] : ranges) r.push_back(BlockRange{lo, hi});
            return s.add_transfer(src, dsts, std::move(r), op_from_string(op), deps);
          },
          py::arg("src"), py::arg("dsts"), py::arg("ranges"), py::arg("op"), py::arg("deps"))
      .def_property_readonly("num_ranks", &Schedule::num_ranks)
      .def_property_readonly("num_blocks", &Schedule::num_blocks)
      .def_property_readonly("num_transfers", &Schedule::num_transfers)
      .def_property_readonly("total_bytes", &Schedule::total_bytes)
      .def_readwrite("name", &Schedule::name)
      .def_property_readonly("kind", [](const Schedule& s) {
        return std::string(to_string(s.collective().kind));
      })
      .def_property_readonly("root", [](const Schedule& s) { return s.collective().root; })
      .def_property_readonly("owners", [](const Schedule& s) { return to_numpy(s.collective().owners); })
      .def_property_readonly("targets", [](const Schedule& s) { return to_numpy(s.collective().targets); })
      .def_property_readonly("participants", [](const Schedule& s) {
        std::vector<std::uint8_t> out(s.num_ranks());
        for (RankId r = 0; r < s.num_ranks(); ++r) out[r] = s.participates(r) ? 1 : 0;
        return to_numpy(out);
      })
      .def_property_readonly("switches", [](const Schedule& s) {
        std::vector<std::uint8_t> out(s.num_ranks());
        for (RankId r = 0; r < s.num_ranks(); ++r) out[r] = s.is_switch(r) ? 1 : 0;
        return to_numpy(out);
      })
      .def_property_readonly("block_bytes", [](const Schedule& s) { return to_numpy(s.block_bytes()); })
      .def_property_readonly("src", [](const Schedule& s) { return to_numpy(s.src_array()); })
      .def_property_readonly("op", [](const Schedule& s) { return to_numpy(s.op_array()); })
      .def_property_readonly("dst_offsets", [](const Schedule& s) { return offsets_to_numpy(s.dst_offsets()); })
      .def_property_readonly("dsts", [](const Schedule& s) { return to_numpy(s.dst_array()); })
      .def_property_readonly("range_offsets", [](const Schedule& s) { return offsets_to_numpy(s.range_offsets()); })
      .def_property_readonly("range_lo", [](const Schedule& s) {
        const BlockRangeList& l = s.range_list();
        std::vector<BlockId> v(static_cast<std::size_t>(l.size()));
        for (std::int64_t i = 0; i < l.size(); ++i) v[static_cast<std::size_t>(i)] = l[i].lo;
        return to_numpy(v);
      })
      .def_property_readonly("range_hi", [](const Schedule& s) {
        const BlockRangeList& l = s.range_list();
        std::vector<BlockId> v(static_cast<std::size_t>(l.size()));
        for (std::int64_t i = 0; i < l.size(); ++i) v[static_cast<std::size_t>(i)] = l[i].hi;
        return to_numpy(v);
      })
      .def_property_readonly("dep_offsets", [](const Schedule& s) { return offsets_to_numpy(s.dep_offsets()); })
      .def_property_readonly("deps", [](const Schedule& s) { return to_numpy(s.dep_array()); })
      .def_property_readonly("transfer_array_bytes", &Schedule::transfer_array_bytes,
                             "Bytes held by the per-transfer arrays (by size).")
      .def("transfer_bytes", [](const Schedule& s) {
        std::vector<Bytes> v(s.num_transfers());
        for (TransferId t = 0; t < s.num_transfers(); ++t) v[t] = s.transfer_bytes(t);
        return to_numpy(v);
      })
      .def("topological_order", [](const Schedule& s) { return to_numpy(topological_order(s)); })
      .def("stats", [](const Schedule& s) {
        ScheduleStats st;
        {
          py::gil_scoped_release release;  // pure C++ over the schedule's own arrays
          st = schedule_stats(s);
        }
        py::dict d;
        d["step"] = to_numpy(st.step);
        d["num_steps"] = st.num_steps;
        d["messages_sent"] = to_numpy(st.messages_sent);
        d["messages_received"] = to_numpy(st.messages_received);
        d["bytes_sent"] = to_numpy(st.bytes_sent);
        d["bytes_received"] = to_numpy(st.bytes_received);
        return d;
      });

  m.def("even_blocks", &even_blocks, py::arg("total_bytes"), py::arg("n"));
}
