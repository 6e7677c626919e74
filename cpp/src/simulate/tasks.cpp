// The simulator's task graph (simulate.hpp, TaskGraph): compute tasks and
// gates beside the schedule's transfers, joined by dependency edges, in the
// same event loop. Their preparation; the loop's handlers for tasks are in
// event_loop.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "wafercoll/simulate/simulation.hpp"

namespace wafercoll::sim {

namespace {
void fail(const std::string& msg) { throw std::invalid_argument(msg); }
}  // namespace

// Checks the graph, extends the per-transfer progress arrays by the tasks,
// and merges the schedule's successor lists with the graph's edges.
void Simulation::prepare_tasks() {
  const TaskGraph& g = *tasks_;
  const std::int64_t T = dim_.transfers, K = dim_.tasks, N = T + K;
  if (costs_.dataflow)
    fail("a task graph needs the model's dependencies='complete' (not 'dataflow')");
  if (static_cast<std::int64_t>(g.duration_s.size()) != K)
    fail("tasks: rank and duration_s must have the same length");
  if (N >= std::int64_t{1} << 31) fail("tasks: too many transfers and tasks (limit 2^31)");
  for (std::int64_t k = 0; k < K; ++k) {
    if (g.rank[k] < -1 || g.rank[k] >= dim_.ranks)
      fail("tasks: task " + std::to_string(k) + " has rank " + std::to_string(g.rank[k]) +
           ", outside [-1, " + std::to_string(dim_.ranks) + ")");
    const double d = g.duration_s[k];
    if (!(d >= 0.0 && d < 1e300 && (g.rank[k] >= 0 || d == 0.0)))
      fail("tasks: task " + std::to_string(k) +
           " needs a finite duration_s >= 0 (0 for a gate, rank -1)");
  }
  if (g.before.size() != g.after.size())
    fail("tasks: before and after must have the same length");
  const std::size_t E = g.before.size();
  for (std::size_t i = 0; i < E; ++i)
    if (g.before[i] < 0 || g.before[i] >= N || g.after[i] < 0 || g.after[i] >= N ||
        g.before[i] == g.after[i])
      fail("tasks: edge " + std::to_string(i) + " (" + std::to_string(g.before[i]) + ", " +
           std::to_string(g.after[i]) + ") is outside [0, " + std::to_string(N) +
           ") or a self-loop");
  Progress& pr = progress_;
  pr.pending.resize(static_cast<std::size_t>(N), 0);
  size_times(N);
  pr.task_start.assign(static_cast<std::size_t>(K), 0.0);
  // Merged CSR: each id's schedule successors, then its graph successors
  // in edge order.
  const SuccessorLists& old = pr.successors;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(N) + 1, 0);
  for (std::int64_t t = 0; t < T; ++t) {
    const auto [first, end] = old.range(t);
    offsets[t + 1] = end - first;
  }
  for (std::size_t i = 0; i < E; ++i) {
    ++offsets[g.before[i] + 1];
    ++pr.pending[g.after[i]];
  }
  for (std::int64_t i = 0; i < N; ++i) offsets[i + 1] += offsets[i];
  SuccessorLists merged;
  merged.list.resize(static_cast<std::size_t>(offsets[N]));
  std::vector<std::int64_t> fill(offsets.begin(), offsets.end() - 1);
  for (std::int64_t t = 0; t < T; ++t) {
    const auto [first, end] = old.range(t);
    for (std::int64_t i = first; i < end; ++i)
      merged.list[fill[t]++] = static_cast<TransferId>(old.entry(i, t));
  }
  for (std::size_t i = 0; i < E; ++i)
    merged.list[fill[g.before[i]]++] = static_cast<TransferId>(g.after[i]);
  merged.set_offsets(offsets.data(), N, kNarrowSuccessors);
  pr.successors = std::move(merged);
  // A cycle would leave work unfinished: find it now (Kahn's algorithm).
  std::vector<std::int32_t> indegree(pr.pending.begin(), pr.pending.end());
  std::vector<std::int64_t> stack;
  for (std::int64_t i = 0; i < N; ++i)
    if (indegree[i] == 0) stack.push_back(i);
  std::int64_t seen = 0;
  while (!stack.empty()) {
    const std::int64_t x = stack.back();
    stack.pop_back();
    ++seen;
    const auto [first, end] = pr.successors.range(x);
    for (std::int64_t i = first; i < end; ++i) {
      const std::int64_t y = pr.successors.entry(i, x);
      if (--indegree[y] == 0) stack.push_back(y);
    }
  }
  if (seen != N) fail("tasks: the dependencies of the transfers and tasks form a cycle");
}

}  // namespace wafercoll::sim
