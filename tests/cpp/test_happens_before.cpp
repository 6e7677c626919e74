// The verifier's happens-before questions (cpp/src/analysis/happens_before.hpp).
// Expected answers come from the transitive closure of the dependencies,
// computed independently as one bit set of ancestors per transfer. The
// answers the index remembers depend on the order of the questions, so
// every schedule is asked every pair in several orders, each on a fresh index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "analysis/happens_before.hpp"
#include "wafercoll/schedule/schedule.hpp"

using namespace wafercoll;
using wafercoll::verify_detail::ChainCover;
using wafercoll::verify_detail::HappensBefore;

namespace {

// ancestors[t][u]: u is a transitive dependency of t (dependencies are
// earlier transfers, so the index order is a topological order).
std::vector<std::vector<bool>> closure(const Schedule& s) {
  const auto n = static_cast<std::size_t>(s.num_transfers());
  std::vector<std::vector<bool>> anc(n, std::vector<bool>(n, false));
  for (std::size_t t = 0; t < n; ++t) {
    for (const TransferId* d = s.deps_begin(static_cast<TransferId>(t));
         d != s.deps_end(static_cast<TransferId>(t)); ++d) {
      const auto u = static_cast<std::size_t>(*d);
      anc[t][u] = true;
      for (std::size_t v = 0; v < n; ++v)
        if (anc[u][v]) anc[t][v] = true;
    }
  }
  return anc;
}

// Every ordered pair (a, b), asked in the order `pairs` gives, on a fresh
// index; `given_order`: the cover gets the topological order (else none:
// the index order is one).
void expect_closure(const Schedule& s, const std::vector<std::pair<TransferId, TransferId>>& pairs,
                    const char* what, bool given_order) {
  const auto anc = closure(s);
  const ChainCover cover(s, given_order ? topological_order(s) : std::vector<TransferId>{});
  HappensBefore hb(cover);
  for (const auto& [a, b] : pairs) {
    const bool want = a == b || anc[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)];
    ASSERT_EQ(hb.reaches(a, b), want) << what << ": " << a << " -> " << b;
  }
}

// All pairs by ascending b (the forward pass), by descending b (the
// backward pass), and shuffled.
void expect_closure_in_every_order(const Schedule& s, std::uint32_t seed) {
  const TransferId n = s.num_transfers();
  std::vector<std::pair<TransferId, TransferId>> pairs;
  for (TransferId b = 0; b < n; ++b)
    for (TransferId a = 0; a < n; ++a) pairs.emplace_back(a, b);
  expect_closure(s, pairs, "ascending", true);
  std::reverse(pairs.begin(), pairs.end());
  expect_closure(s, pairs, "descending", false);
  std::mt19937 rng(seed);
  std::shuffle(pairs.begin(), pairs.end(), rng);
  expect_closure(s, pairs, "shuffled", true);
}

// A random DAG over `p` ranks: each transfer depends on up to three earlier
// ones, mostly recent ones or the last one its source sent (as programs do).
Schedule random_dag(RankId p, TransferId n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Schedule s(p, std::vector<Bytes>(4, 8), Collective{});
  std::vector<TransferId> last_sent(static_cast<std::size_t>(p), -1);
  for (TransferId t = 0; t < n; ++t) {
    const RankId src = std::uniform_int_distribution<RankId>(0, p - 1)(rng);
    RankId dst = std::uniform_int_distribution<RankId>(0, p - 2)(rng);
    if (dst >= src) ++dst;
    std::vector<TransferId> deps;
    if (last_sent[src] >= 0 && rng() % 2 == 0) deps.push_back(last_sent[src]);
    const int extra = static_cast<int>(rng() % 3);
    for (int k = 0; k < extra && t > 0; ++k) {
      const TransferId back = std::min<TransferId>(t, 1 + static_cast<TransferId>(rng() % 12));
      const TransferId d = rng() % 4 == 0
                               ? static_cast<TransferId>(rng() % static_cast<std::uint32_t>(t))
                               : t - back;
      if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
    }
    s.add_transfer(src, {dst}, {BlockRange{0, 1}}, Op::copy, deps);
    last_sent[src] = t;
  }
  return s;
}

// The shape of a tree pipeline with a barrier: `chunks` chunks go up a
// chain of `depth` links (a reduction from rank i + 1 to rank i waits for
// the one into rank i + 1, and the previous chunk on its link), then, after
// the last chunk reached rank 0, down again the same way.
struct Pipeline {
  Schedule s;
  std::vector<TransferId> up;    // [c * depth + i]: chunk c, rank i + 1 -> i
  std::vector<TransferId> down;  // [c * depth + i]: chunk c, rank i -> i + 1
};

Pipeline barrier_pipeline(RankId depth, std::int32_t chunks) {
  Pipeline x{Schedule(depth + 1, std::vector<Bytes>(static_cast<std::size_t>(chunks), 8),
                      Collective{}),
             std::vector<TransferId>(static_cast<std::size_t>(chunks * depth)),
             std::vector<TransferId>(static_cast<std::size_t>(chunks * depth))};
  const auto at = [&](std::vector<TransferId>& v, std::int32_t c, RankId i) -> TransferId& {
    return v[static_cast<std::size_t>(c * depth + i)];
  };
  for (std::int32_t c = 0; c < chunks; ++c) {
    for (RankId i = depth - 1; i >= 0; --i) {
      std::vector<TransferId> deps;
      if (i + 1 < depth) deps.push_back(at(x.up, c, i + 1));
      if (c > 0) deps.push_back(at(x.up, c - 1, i));
      at(x.up, c, i) = x.s.add_transfer(i + 1, {i}, {BlockRange{c, c + 1}}, Op::reduce, deps);
    }
  }
  for (std::int32_t c = 0; c < chunks; ++c) {
    for (RankId i = 0; i < depth; ++i) {
      std::vector<TransferId> deps;
      deps.push_back(i > 0 ? at(x.down, c, i - 1) : at(x.up, chunks - 1, 0));
      if (c > 0) deps.push_back(at(x.down, c - 1, i));
      at(x.down, c, i) = x.s.add_transfer(i, {i + 1}, {BlockRange{c, c + 1}}, Op::copy, deps);
    }
  }
  return x;
}

}  // namespace

TEST(HappensBefore, RandomDagsMatchTheTransitiveClosure) {
  for (std::uint32_t seed = 1; seed <= 12; ++seed) {
    const RankId p = 2 + static_cast<RankId>(seed % 5);
    expect_closure_in_every_order(random_dag(p, 90, seed), seed);
  }
}

TEST(HappensBefore, BarrierPipelinesMatchTheTransitiveClosure) {
  for (RankId depth : {1, 2, 5}) {
    for (std::int32_t chunks : {1, 3, 8}) {
      expect_closure_in_every_order(barrier_pipeline(depth, chunks).s,
                                    static_cast<std::uint32_t>(depth * 10 + chunks));
    }
  }
}

TEST(HappensBefore, ChainsCoverEveryTransferAlongItsDependencies) {
  // Independent check of the cover: along a chain, each transfer depends
  // on the one before it, and levels are the longest dependency chains.
  const Schedule s = random_dag(5, 200, 7);
  const ChainCover cover(s, topological_order(s));
  std::vector<std::int32_t> level(static_cast<std::size_t>(s.num_transfers()), 0);
  std::vector<std::vector<TransferId>> chains;
  for (TransferId t = 0; t < s.num_transfers(); ++t) {
    for (const TransferId* d = s.deps_begin(t); d != s.deps_end(t); ++d)
      level[static_cast<std::size_t>(t)] =
          std::max(level[static_cast<std::size_t>(t)], level[static_cast<std::size_t>(*d)] + 1);
    EXPECT_EQ(cover.level(t), level[static_cast<std::size_t>(t)]) << t;
    const auto c = static_cast<std::size_t>(cover.chain(t));
    if (chains.size() <= c) chains.resize(c + 1);
    ASSERT_EQ(static_cast<std::size_t>(cover.index(t)), chains[c].size()) << t;
    if (!chains[c].empty()) {
      const TransferId prev = chains[c].back();
      EXPECT_TRUE(std::find(s.deps_begin(t), s.deps_end(t), prev) != s.deps_end(t)) << t;
    }
    chains[c].push_back(t);
  }
}

TEST(HappensBefore, RepeatedQuestionsOfABarrierPipelineNeedFewSearches) {
  // The last reduction into every rank against the copy into it after the
  // barrier (the verifier's write/write question), chunk by chunk forwards
  // and then backwards (the backward pass's read/write question): a path
  // through the barrier each time. The pairs of chains remember what they
  // learned, so the searches do not grow with the chunks.
  std::int64_t searches[2] = {0, 0};
  const RankId depth = 6;
  for (int k = 0; k < 2; ++k) {
    const std::int32_t chunks = k == 0 ? 20 : 80;
    const Pipeline x = barrier_pipeline(depth, chunks);
    const ChainCover cover(x.s, topological_order(x.s));
    HappensBefore hb(cover);
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int32_t j = 0; j < chunks; ++j) {
        const std::int32_t c = pass == 0 ? j : chunks - 1 - j;
        for (RankId r = 1; r < depth; ++r) {
          const TransferId into = x.up[static_cast<std::size_t>(c * depth + r)];
          const TransferId back = x.down[static_cast<std::size_t>(c * depth + r - 1)];
          ASSERT_TRUE(hb.reaches(into, back)) << c << " " << r;
          ASSERT_FALSE(hb.reaches(back, into)) << c << " " << r;
        }
      }
    }
    searches[k] = hb.searches();
  }
  EXPECT_GT(searches[0], 0);
  EXPECT_EQ(searches[0], searches[1]);
}

TEST(HappensBefore, DependenciesThatPointForwardMatchTheTransitiveClosure) {
  // A random DAG with its transfers numbered backwards: every dependency
  // points to a later index, so the walk (a topological order) is not the
  // index order and the cheap rules compare walk positions, not indices.
  const Schedule s = random_dag(4, 80, 5);
  const TransferId n = s.num_transfers();
  const auto back = [n](TransferId t) { return n - 1 - t; };
  std::vector<RankId> src, dsts;
  std::vector<std::uint8_t> op;
  std::vector<std::int64_t> dst_off{0}, rng_off{0}, dep_off{0};
  std::vector<BlockId> lo, hi;
  std::vector<TransferId> deps;
  for (TransferId i = 0; i < n; ++i) {
    const TransferId t = back(i);
    src.push_back(s.src(t));
    op.push_back(static_cast<std::uint8_t>(s.op(t)));
    dsts.insert(dsts.end(), s.dsts_begin(t), s.dsts_end(t));
    dst_off.push_back(static_cast<std::int64_t>(dsts.size()));
    for (auto r = s.ranges_begin(t); r != s.ranges_end(t); ++r) {
      lo.push_back(r->lo);
      hi.push_back(r->hi);
    }
    rng_off.push_back(static_cast<std::int64_t>(lo.size()));
    for (const TransferId* d = s.deps_begin(t); d != s.deps_end(t); ++d) deps.push_back(back(*d));
    dep_off.push_back(static_cast<std::int64_t>(deps.size()));
  }
  const Schedule rev = Schedule::from_arrays(s.num_ranks(), s.block_bytes(), Collective{}, src, op,
                                             dst_off, dsts, rng_off, lo, hi, dep_off, deps);
  ASSERT_FALSE(rev.deps_point_backward());
  const auto anc = closure(s);
  const ChainCover cover(rev, topological_order(rev));
  HappensBefore hb(cover);
  for (TransferId b = n; b-- > 0;) {
    for (TransferId a = 0; a < n; ++a) {
      const bool want =
          a == b || anc[static_cast<std::size_t>(back(b))][static_cast<std::size_t>(back(a))];
      ASSERT_EQ(hb.reaches(a, b), want) << a << " -> " << b;
    }
  }
}
