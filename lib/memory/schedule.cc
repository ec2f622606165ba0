// Operator reordering for memory: greedy list schedulers that pick, among the ready nodes, the
// one that keeps the fewest bytes live; the order with the lowest peak wins.
#include "kiln/memory/schedule.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "kiln/ir/graph.h"
#include "kiln/memory/plan.h"
#include "placement.h"

namespace kiln {
namespace {

/// The graph as the schedulers see it: nodes by their position in the original order, and the
/// values those nodes define, with the bytes each keeps live until its last reader has run.
struct DataflowGraph {
  struct NodeInfo {
    std::vector<size_t> reads;  // distinct values read, directly or from a subgraph
    std::vector<size_t> writes;
    std::vector<size_t> successors;  // distinct nodes that read a value this one writes
  };
  struct ValueInfo {
    const Value* value = nullptr;
    int64_t bytes = 0;  // aligned; 0 for what the arena does not hold (graph outputs)
    size_t producer = 0;
    int64_t readers = 0;  // distinct reading nodes
  };
  std::vector<NodeInfo> nodes;
  std::vector<ValueInfo> values;
};

using ValueIds = std::unordered_map<const Value*, size_t>;

/// Values of the outer graph that `sub` (or a graph nested in it) reads or returns directly.
void collectSubgraphReads(const Graph& sub, const ValueIds& ids, std::vector<size_t>& reads) {
  auto note = [&](const Value* v) {
    if (auto it = ids.find(v); it != ids.end()) reads.push_back(it->second);
  };
  for (const Value* out : sub.outputs()) note(out);
  for (const auto& n : sub.nodes()) {
    for (const Value* in : n->inputs()) note(in);
    for (const Graph* inner : n->subgraphs())
      if (inner) collectSubgraphReads(*inner, ids, reads);
  }
}

Expected<DataflowGraph> buildDataflow(const Graph& g, std::span<const Node* const> original,
                                      int64_t alignment) {
  // computeLifetimes checks that `original` schedules every node once, topologically, and
  // that every intermediate has a static size.
  KILN_ASSIGN_OR_RETURN(std::vector<ValueLifetime> lives, computeLifetimes(g, original));
  DataflowGraph df;
  df.nodes.resize(original.size());
  ValueIds ids;
  for (size_t s = 0; s < original.size(); ++s)
    for (const Value* v : original[s]->outputs()) {
      if (!v) continue;
      ids.emplace(v, df.values.size());
      df.nodes[s].writes.push_back(df.values.size());
      df.values.push_back({v, 0, s, 0});
    }
  for (const ValueLifetime& life : lives)
    df.values[ids.at(life.value)].bytes =
        placement::alignUp(life.bytes, alignment).value_or(std::numeric_limits<int64_t>::max());

  for (size_t s = 0; s < original.size(); ++s) {
    DataflowGraph::NodeInfo& node = df.nodes[s];
    for (const Value* in : original[s]->inputs())
      if (auto it = ids.find(in); it != ids.end()) node.reads.push_back(it->second);
    for (const Graph* sub : original[s]->subgraphs())
      if (sub) collectSubgraphReads(*sub, ids, node.reads);
    std::sort(node.reads.begin(), node.reads.end());
    node.reads.erase(std::unique(node.reads.begin(), node.reads.end()), node.reads.end());
    // A node that reads its own output adds no ordering constraint.
    std::erase_if(node.reads, [&](size_t v) { return df.values[v].producer == s; });
    for (size_t v : node.reads) {
      size_t producer = df.values[v].producer;
      // computeLifetimes skips graph outputs; a graph output read by a later node must still
      // be produced first.
      if (producer > s)
        return makeError(
            "schedule step {}: {} reads '{}', which {} defines later at step {}; the "
            "schedule is not topological",
            s, original[s]->describe(), df.values[v].value->name(), original[producer]->describe(),
            producer);
      ++df.values[v].readers;
      df.nodes[producer].successors.push_back(s);
    }
  }
  for (DataflowGraph::NodeInfo& node : df.nodes) {
    std::sort(node.successors.begin(), node.successors.end());
    node.successors.erase(std::unique(node.successors.begin(), node.successors.end()),
                          node.successors.end());
  }
  return df;
}

/// How a list scheduler ranks ready nodes: by `primary`, then `secondary`, then the earlier in
/// the original order. Lower is better.
enum class Preference {
  kLeastGrowth,     // bytes newly kept live minus bytes freed, then bytes written
  kMostFreed,       // bytes freed (most first), then bytes written
  kLeastWritten,    // bytes written, then bytes freed (most first)
  kFinishBranches,  // the most recently readied (depth first), then least growth
};

/// One greedy list schedule, or nullopt if it would need more than `budget` evaluations.
std::optional<std::vector<size_t>> listSchedule(const DataflowGraph& df, Preference preference,
                                                int64_t budget) {
  const size_t n = df.nodes.size();
  std::vector<int64_t> readersLeft(df.values.size());
  for (size_t v = 0; v < df.values.size(); ++v) readersLeft[v] = df.values[v].readers;
  std::vector<size_t> predecessorsLeft(n, 0);
  for (const DataflowGraph::NodeInfo& node : df.nodes)
    for (size_t succ : node.successors) ++predecessorsLeft[succ];
  struct Ready {
    size_t node;
    size_t readiedAt;  // how many nodes were scheduled when it became ready
  };
  std::vector<Ready> ready;
  for (size_t s = 0; s < n; ++s)
    if (predecessorsLeft[s] == 0) ready.push_back({s, 0});

  // Saturating sums: sizes come from untrusted models, and only their order matters here.
  __extension__ typedef __int128 Wide;
  struct Key {
    Wide primary, secondary;
    size_t node;
    bool operator<(const Key& o) const {
      if (primary != o.primary) return primary < o.primary;
      if (secondary != o.secondary) return secondary < o.secondary;
      return node < o.node;
    }
  };
  auto keyOf = [&](const Ready& r) {
    const DataflowGraph::NodeInfo& node = df.nodes[r.node];
    Wide written = 0, kept = 0, freed = 0;
    for (size_t v : node.writes) {
      written += df.values[v].bytes;
      if (df.values[v].readers > 0) kept += df.values[v].bytes;
    }
    for (size_t v : node.reads)
      if (readersLeft[v] == 1) freed += df.values[v].bytes;
    switch (preference) {
      case Preference::kLeastGrowth:
        return Key{kept - freed, written, r.node};
      case Preference::kMostFreed:
        return Key{-freed, written, r.node};
      case Preference::kLeastWritten:
        return Key{written, -freed, r.node};
      case Preference::kFinishBranches:
        return Key{-Wide(r.readiedAt), kept - freed, r.node};
    }
    return Key{0, 0, r.node};
  };

  std::vector<size_t> order;
  order.reserve(n);
  int64_t evaluations = 0;
  while (!ready.empty()) {
    evaluations += int64_t(ready.size());
    if (evaluations > budget) return std::nullopt;
    size_t pick = 0;
    Key best = keyOf(ready[0]);
    for (size_t k = 1; k < ready.size(); ++k)
      if (Key key = keyOf(ready[k]); key < best) {
        best = key;
        pick = k;
      }
    size_t s = ready[pick].node;
    ready[pick] = ready.back();  // ties are broken by node index, not by position here
    ready.pop_back();
    order.push_back(s);
    for (size_t v : df.nodes[s].reads) --readersLeft[v];
    for (size_t succ : df.nodes[s].successors)
      if (--predecessorsLeft[succ] == 0) ready.push_back({succ, order.size()});
  }
  return order;  // every node is reached: the original order proves the graph acyclic
}

}  // namespace

Expected<int64_t> schedulePeakBytes(const Graph& g, std::span<const Node* const> schedule,
                                    int64_t alignment) {
  KILN_ASSIGN_OR_RETURN(std::vector<ValueLifetime> lives, computeLifetimes(g, schedule));
  std::vector<BufferRequest> requests;
  requests.reserve(lives.size());
  for (const ValueLifetime& l : lives) requests.push_back({l.bytes, l.firstStep, l.lastStep});
  return liveLowerBound(requests, alignment);
}

Expected<std::vector<const Node*>> scheduleForMemory(const Graph& g,
                                                     std::span<const Node* const> original,
                                                     const ScheduleOptions& options) {
  if (options.alignment <= 0)
    return makeError("schedule alignment must be positive, got {}", options.alignment);
  KILN_ASSIGN_OR_RETURN(DataflowGraph df, buildDataflow(g, original, options.alignment));
  std::vector<const Node*> best(original.begin(), original.end());
  KILN_ASSIGN_OR_RETURN(int64_t bestPeak, schedulePeakBytes(g, best, options.alignment));
  const Preference preferences[] = {Preference::kLeastGrowth, Preference::kMostFreed,
                                    Preference::kLeastWritten, Preference::kFinishBranches};
  std::vector<const Node*> candidate;
  for (Preference preference : preferences) {
    std::optional<std::vector<size_t>> order = listSchedule(df, preference, options.maxEvaluations);
    if (!order) continue;
    candidate.clear();
    for (size_t s : *order) candidate.push_back(original[s]);
    KILN_ASSIGN_OR_RETURN(int64_t peak, schedulePeakBytes(g, candidate, options.alignment));
    if (peak < bestPeak) {
      bestPeak = peak;
      best.swap(candidate);
    }
  }
  return best;
}

}  // namespace kiln
