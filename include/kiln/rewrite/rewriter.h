// The rewriter: every graph mutation a pass makes goes through it, so use lists stay
// consistent, graph outputs keep their names, provenance follows fused nodes, and the
// per-pass statistics (nodes added, removed, fused) count themselves.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

/// What a pass did, summed over the rewrites it made.
struct RewriteStats {
  int64_t nodesAdded = 0;
  int64_t nodesRemoved = 0;
  int64_t nodesFused = 0;  ///< source nodes merged into a fused node
  int64_t initializersAdded = 0;
  int64_t initializersRemoved = 0;
  std::map<std::string, int64_t> patterns;  ///< times each pattern fired
  bool changed() const {
    return nodesAdded || nodesRemoved || nodesFused || initializersAdded || initializersRemoved ||
           !patterns.empty();
  }
  RewriteStats& operator+=(const RewriteStats& o);
};

/// The source-model node names `nodes` stand for, in order, without repeats.
std::vector<std::string> sourcesOf(const std::vector<const Node*>& nodes);

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {}
  Graph& graph() { return g_; }

  /// A new node (appended; drivers restore topological order) named `nameHint` whose outputs
  /// get `types` (one per output) and fresh names derived from `nameHint`. `sources` are the
  /// nodes it replaces: their source names become its provenance.
  Expected<Node*> create(const std::string& opType, const std::string& domain,
                         std::vector<Value*> inputs, const std::vector<TensorType>& types,
                         const std::string& nameHint, const std::vector<const Node*>& sources);
  /// `base` when no value of the graph (or an enclosing one) has that name, else a fresh
  /// variant of it.
  std::string freshName(const std::string& base) const;
  /// A new initializer named after `nameHint`.
  Expected<Value*> constant(const std::string& nameHint, Tensor data);

  /// Whether `to` may take the place of `from`. A graph output's name is part of the
  /// artifact's API: it can be replaced only by a node output of this graph that is not itself
  /// a graph output, which then takes over the name.
  bool canReplace(const Value* from, const Value* to) const;
  /// Points every use of `from` (and the graph's outputs) at `to`; see canReplace.
  void replaceAllUses(Value* from, Value* to);
  /// Replaces the outputs of `n` (one replacement per output; null for an unused output)
  /// and erases it. Returns false, changing nothing, when an output with uses or a graph
  /// output cannot be replaced.
  bool replaceNode(Node* n, const std::vector<Value*>& replacements);
  void setInput(Node* n, size_t i, Value* v);
  /// Erases a node whose outputs are unused (its subgraphs' reads of outer values go too).
  void erase(Node* n);
  /// Erases an initializer nobody reads. Returns false when it is still read or an output.
  bool eraseInitializer(Value* v);
  /// Records `count` source nodes as merged into one (fusion statistics).
  void noteFused(int64_t count) { stats_.nodesFused += count; }
  /// Records that pattern `name` fired.
  void notePattern(const std::string& name) { ++stats_.patterns[name]; }

  /// True when `n` was erased by this rewriter (its pointer may be stale).
  bool erased(const Node* n) const { return erased_.count(n) != 0; }
  void forgetErased() { erased_.clear(); }

  /// Where match failures are reported (`--trace-patterns`); null: not reported.
  void setTrace(std::ostream* trace) { trace_ = trace; }
  /// Reports why `pattern` did not rewrite `n` and returns false (for early exits).
  bool fail(const std::string& pattern, const Node& n, std::string_view why);

  RewriteStats& stats() { return stats_; }

 private:
  Graph& g_;
  RewriteStats stats_;
  std::unordered_set<const Node*> erased_;
  std::ostream* trace_ = nullptr;
};

/// A rewrite rooted on one op type: tried on every node of that type until nothing fires.
class RewritePattern {
 public:
  RewritePattern(std::string name, std::string rootOp, std::string rootDomain = "")
      : name_(std::move(name)), rootOp_(std::move(rootOp)), rootDomain_(std::move(rootDomain)) {}
  virtual ~RewritePattern() = default;
  const std::string& name() const { return name_; }
  const std::string& rootOp() const { return rootOp_; }
  const std::string& rootDomain() const { return rootDomain_; }
  /// Rewrites at `n` and returns true, or returns rw.fail(name(), n, "why") unchanged.
  virtual bool matchAndRewrite(Node& n, Rewriter& rw) const = 0;

 private:
  std::string name_, rootOp_, rootDomain_;
};

struct GreedyOptions {
  int maxSweeps = 16;  ///< a fixpoint not reached by then is an error (a pattern cycle)
};

/// Applies `patterns` to the nodes of `g` (not its subgraphs) until none fires, restoring
/// topological order after each sweep that changed something. Returns whether anything
/// changed.
Expected<bool> applyPatternsGreedily(
    Graph& g, const std::vector<std::unique_ptr<RewritePattern>>& patterns, Rewriter& rw,
    const GreedyOptions& options = {});

}  // namespace kiln
