// The pass manager: runs named passes, re-infers types, verifies, prints and counts.
#include <algorithm>
#include <chrono>
#include <iostream>

#include "kiln/ir/text.h"
#include "kiln/ir/verifier.h"
#include "kiln/ops/infer.h"
#include "passes.h"

namespace kiln {
namespace {

struct PassEntry {
  const char* name;
  std::unique_ptr<Pass> (*make)();
};

// The table of passes; pipelines below refer to these names.
const PassEntry kPasses[] = {
    {"canonicalize", makeCanonicalizePass},
    {"fold-constants", makeFoldConstantsPass},
    {"dce", makeDcePass},
    {"cse", makeCsePass},
    {"fuse-batchnorm", makeFuseBatchNormPass},
    {"fuse-patterns", makeFusePatternsPass},
    {"fuse-epilogue", makeFuseEpiloguePass},
    {"fuse-elementwise", makeFuseElementwisePass},
    {"layout", makeLayoutPass},
    {"fuse-nhwc-expand", makeFuseNhwcExpandPass},
    {"fuse-nhwc-project", makeFuseNhwcProjectPass},
};

void printIR(std::ostream& os, const Graph& g, const std::string& when) {
  PrintOptions po;
  po.elideDataAbove = 1024;
  os << "// ----- IR " << when << " -----\n" << printGraph(g, po);
}

}  // namespace

std::unique_ptr<Pass> createPass(std::string_view name) {
  for (const PassEntry& e : kPasses)
    if (name == e.name) return e.make();
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> listPasses() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const PassEntry& e : kPasses) out.emplace_back(e.name, std::string(e.make()->summary()));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> pipelineFor(int optLevel) {
  std::vector<std::string> p;
  if (optLevel <= 0) return p;
  p = {"canonicalize", "fold-constants", "canonicalize", "cse", "dce"};
  if (optLevel >= 2) {
    for (const char* s : {"fuse-patterns", "fuse-batchnorm", "fold-constants", "canonicalize",
                          "dce", "fuse-epilogue", "fuse-elementwise", "dce"})
      p.push_back(s);
  }
  if (optLevel >= 3)
    for (const char* s : {"layout", "fuse-nhwc-expand", "fuse-nhwc-project", "canonicalize", "dce"})
      p.push_back(s);
  return p;
}

Expected<std::vector<std::string>> parsePassList(std::string_view list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string name(list.substr(pos, comma - pos));
    pos = comma + 1;
    if (name.empty()) continue;
    if (!createPass(name)) {
      std::string known;
      for (const auto& [n, s] : listPasses()) known += (known.empty() ? "" : ", ") + n;
      return makeError("unknown pass '{}' (known passes: {})", name, known);
    }
    out.push_back(std::move(name));
  }
  return out;
}

namespace {

void addOps(const Graph& g, std::map<std::string, int64_t>& h) {
  for (const auto& n : g.nodes()) {
    ++h[n->domain().empty() ? n->opType() : n->domain() + "." + n->opType()];
    if (n->domain().empty())  // control-flow bodies; a fused node's body is its own op
      for (const Graph* body : n->subgraphs()) addOps(*body, h);
  }
}

}  // namespace

int64_t nodesWithBodies(const Graph& g) {
  int64_t count = 0;
  for (const auto& n : g.nodes()) {
    ++count;
    if (n->domain().empty())
      for (const Graph* body : n->subgraphs()) count += nodesWithBodies(*body);
  }
  return count;
}

std::map<std::string, int64_t> opHistogram(const Graph& g) {
  std::map<std::string, int64_t> h;
  addOps(g, h);
  return h;
}

namespace {

/// True when inference typed every node output of `g` (a branch that cannot run with the
/// compiled shapes, or an If branch a constant condition never takes, keeps no types).
bool fullyTyped(const Graph& g) {
  return std::all_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) {
    return std::all_of(n->outputs().begin(), n->outputs().end(),
                       [](const Value* v) { return v->dtype() != DType::Undefined; });
  });
}

/// Runs `pass` on `g` and then inside the bodies of its control-flow nodes (If, Loop, Scan), at
/// every depth. Untyped bodies are left as they are (code generation makes them fail at run
/// time or never emits them), and so are the bodies of kiln's own fused nodes
/// (kiln.Elementwise), which are already the passes' result.
Expected<RewriteStats> runOnGraphAndBodies(Pass& pass, Graph& g, PassContext& ctx) {
  KILN_ASSIGN_OR_RETURN(RewriteStats stats, pass.run(g, ctx));
  std::vector<Graph*> bodies;
  for (const auto& n : g.nodes())
    if (n->domain().empty())
      for (Graph* body : n->subgraphs())
        if (fullyTyped(*body)) bodies.push_back(body);
  for (Graph* body : bodies) {
    auto inner = runOnGraphAndBodies(pass, *body, ctx);
    if (!inner.ok())
      return makeError("in subgraph '{}': {}", body->name(), inner.error().message());
    stats += *inner;
  }
  return stats;
}

}  // namespace

Expected<std::vector<PassRecord>> runPasses(Model& model, const std::vector<std::string>& passes,
                                            PassRunOptions& options) {
  Graph& g = *model.graph;
  std::ostream& os = options.printTo ? *options.printTo : std::cerr;
  std::vector<PassRecord> records;
  InferOptions io;
  io.maxEvalElements = options.context.options.maxEvalElements;
  io.maxDims = options.context.options.maxDims;
  for (const std::string& name : passes) {
    auto pass = createPass(name);
    if (!pass) return makeError("unknown pass '{}'", name);
    if (options.printBefore.count(name)) printIR(os, g, "before " + name);
    PassRecord rec;
    rec.pass = name;
    rec.nodesBefore = nodesWithBodies(g);
    auto start = std::chrono::steady_clock::now();
    auto stats = runOnGraphAndBodies(*pass, g, options.context);
    if (!stats.ok()) return makeError("pass {}: {}", name, stats.error().message());
    if (stats->changed()) {
      if (auto s = inferShapes(g, options.context.registry, io); !s.ok())
        return makeError("pass {} left a graph that does not type-check: {}", name,
                         s.error().message());
    }
    rec.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    if (options.verifyEach) {
      if (auto s = verifyGraph(g); !s.ok())
        return makeError("pass {} broke the graph: {}", name, s.error().message());
    }
    rec.stats = std::move(*stats);
    rec.nodesAfter = nodesWithBodies(g);
    rec.opsAfter = opHistogram(g);
    if (options.printAfterAll || options.printAfter.count(name)) printIR(os, g, "after " + name);
    records.push_back(std::move(rec));
  }
  return records;
}

std::string passStatsTable(const std::vector<PassRecord>& records) {
  std::string out = fmt::format("{:<18} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}\n", "pass", "nodes",
                                "after", "added", "removed", "fused", "ms");
  for (const PassRecord& r : records) {
    out += fmt::format("{:<18} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9.2f}\n", r.pass, r.nodesBefore,
                       r.nodesAfter, r.stats.nodesAdded, r.stats.nodesRemoved, r.stats.nodesFused,
                       r.milliseconds);
    for (const auto& [p, count] : r.stats.patterns)
      out += fmt::format("  {:<30} {:>6}\n", p, count);
  }
  return out;
}

}  // namespace kiln
