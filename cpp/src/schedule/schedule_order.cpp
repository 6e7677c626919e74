// The orders and measures a schedule's dependency lists imply: the
// successor lists, a topological order, and the per-transfer steps and
// per-rank message counts (schedule_stats). They read a finished schedule
// and never change it; schedule.cpp builds and checks it.
#include "wafercoll/schedule/schedule.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "wafercoll/errors.hpp"

namespace wafercoll {

// The reverse of the dependency lists (fill_successors): successors of each
// transfer in increasing index, which keeps every consumer deterministic.
Successors successors(const Schedule& s) {
  Successors out;
  fill_successors(s, out);
  return out;
}

std::vector<TransferId> topological_order(const Schedule& s) {
  const TransferId n = s.num_transfers();
  std::vector<TransferId> order;
  order.reserve(n);
  if (s.deps_point_backward()) {
    for (TransferId t = 0; t < n; ++t) order.push_back(t);
    return order;
  }
  // Kahn's algorithm over the successor lists, smallest ready index first:
  // a deterministic order that equals index order whenever that is valid.
  const Successors succ = successors(s);
  std::vector<std::int32_t> indegree(n);
  for (TransferId t = 0; t < n; ++t) indegree[t] = static_cast<std::int32_t>(s.num_deps(t));
  std::priority_queue<TransferId, std::vector<TransferId>, std::greater<TransferId>> ready;
  for (TransferId t = 0; t < n; ++t)
    if (indegree[t] == 0) ready.push(t);
  std::int64_t popped = 0;
  while (!ready.empty()) {
    if ((++popped & 65535) == 0) poll_interrupt();
    const TransferId t = ready.top();
    ready.pop();
    order.push_back(t);
    for (std::int64_t i = succ.offsets[t]; i < succ.offsets[t + 1]; ++i)
      if (--indegree[succ.list[i]] == 0) ready.push(succ.list[i]);
  }
  if (static_cast<TransferId>(order.size()) != n) {
    TransferId first = -1;
    for (TransferId t = 0; t < n && first < 0; ++t)
      if (indegree[t] > 0) first = t;
    throw ScheduleError("cycle", "transfer " + std::to_string(first) +
                                     " is on a dependency cycle (or depends on one)", first);
  }
  return order;
}

// A transfer's step is the length of the longest dependency chain before
// it, so the steps of a textbook algorithm come out as its rounds.
ScheduleStats schedule_stats(const Schedule& s) {
  ScheduleStats st;
  const TransferId n = s.num_transfers();
  const RankId p = s.num_ranks();
  st.step.assign(n, 0);
  st.messages_sent.assign(p, 0);
  st.messages_received.assign(p, 0);
  st.bytes_sent.assign(p, 0);
  st.bytes_received.assign(p, 0);
  for (TransferId t : topological_order(s)) {
    std::int32_t step = 0;
    for (const TransferId* d = s.deps_begin(t); d != s.deps_end(t); ++d)
      step = std::max(step, st.step[*d] + 1);
    st.step[t] = step;
    st.num_steps = std::max(st.num_steps, step + 1);
    const Bytes bytes = s.transfer_bytes(t);
    st.messages_sent[s.src(t)] += 1;
    st.bytes_sent[s.src(t)] += bytes;
    for (const RankId* d = s.dsts_begin(t); d != s.dsts_end(t); ++d) {
      st.messages_received[*d] += 1;
      st.bytes_received[*d] += bytes;
    }
  }
  return st;
}

}  // namespace wafercoll
