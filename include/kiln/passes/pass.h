// Graph passes, the pass manager and the named -O pipelines.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/registry.h"
#include "kiln/rewrite/rewriter.h"
#include "kiln/support/status.h"

namespace kiln {

/// Knobs passes read.
struct PassOptions {
  /// Allows rewrites that change results in the last bits (x/c → x*(1/c) for any c).
  bool fastMath = false;
  /// A folded tensor may be at most this many bytes larger than the constants it is computed
  /// from, so folding never blows up the weights (Expand of a scalar to a huge shape).
  int64_t foldGrowthBytes = 64 * 1024;
  /// Largest tensor (elements) evaluated while resolving shapes during inference.
  int64_t maxEvalElements = 1 << 16;
  /// --max-dim bounds for data-dependent dims, used whenever a pass re-infers types.
  std::map<std::string, int64_t> maxDims;
};

/// What a pass sees besides the graph.
struct PassContext {
  const OpRegistry& registry = OpRegistry::builtin();
  PassOptions options;
  std::ostream* trace = nullptr;  ///< pattern match failures (--trace-patterns)
};

/// A whole-graph pass. Mutations go through a Rewriter, whose statistics the pass returns.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  virtual Expected<RewriteStats> run(Graph& g, PassContext& ctx) = 0;
};

/// Every pass kiln has, by name (e.g. "canonicalize", "fold-constants", "dce", "cse").
std::unique_ptr<Pass> createPass(std::string_view name);
/// Names and one-line summaries of all passes, sorted by name.
std::vector<std::pair<std::string, std::string>> listPasses();
/// The pass names of the -O<level> pipeline (0..3).
std::vector<std::string> pipelineFor(int optLevel);

/// One line of --pass-stats.
struct PassRecord {
  std::string pass;
  int64_t nodesBefore = 0, nodesAfter = 0;
  RewriteStats stats;
  double milliseconds = 0;
  std::map<std::string, int64_t> opsAfter;  ///< op histogram after the pass
};

/// How the pass manager runs a pipeline.
struct PassRunOptions {
  std::set<std::string> printBefore, printAfter;  ///< pass names
  bool printAfterAll = false;
  std::ostream* printTo = nullptr;  ///< where --print-* goes (stderr when null)
  /// Verify the graph (structure and types) after every pass; on by default in debug builds
  /// and tests, and cheap enough to leave on.
  bool verifyEach = true;
  PassContext context;
};

/// Runs the named passes in order on the model's main graph, re-inferring types after each
/// pass that changed something. Fails naming the pass that broke the graph.
Expected<std::vector<PassRecord>> runPasses(Model& model, const std::vector<std::string>& passes,
                                            PassRunOptions& options);

/// Parses "a,b,c" into pass names, failing on an unknown name (listing the known ones).
Expected<std::vector<std::string>> parsePassList(std::string_view list);

/// The op histogram of a graph and its control-flow bodies ("Conv" → 53; fused ops use their
/// domain: "kiln.FusedConv").
std::map<std::string, int64_t> opHistogram(const Graph& g);
/// Nodes of `g` and of its control-flow (If/Loop/Scan) bodies, at every depth; a fused node's
/// body is not counted (the node is).
int64_t nodesWithBodies(const Graph& g);

/// --pass-stats as a table, one line per pass.
std::string passStatsTable(const std::vector<PassRecord>& records);

}  // namespace kiln
