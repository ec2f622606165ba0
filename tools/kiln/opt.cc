// `kiln opt`: textual IR (or a model) in, named passes, textual IR out — the pass tests'
// driver, in the style of mlir-opt.
#include <iostream>

#include "kiln/ir/text.h"
#include "kiln/ops/infer.h"
#include "kiln/passes/pass.h"
#include "kiln/support/file.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

struct OptArgs {
  ModelArgs model;
  std::string passes;
  int optLevel = -1;
  bool listPasses = false;
  bool passStats = false;
  bool tracePatterns = false;
  bool fastMath = false;
  bool elide = false;
  std::vector<std::string> printBefore, printAfter;
  bool printAfterAll = false;
};

Expected<Model> loadForOpt(const ModelArgs& m) {
  if (m.path.size() > 4 && m.path.substr(m.path.size() - 4) == ".kir") {
    KILN_ASSIGN_OR_RETURN(std::string text, readFile(m.path));
    KILN_ASSIGN_OR_RETURN(Model model, parseModel(text, m.path, m.limits.maxNodes));
    KILN_RETURN_IF_ERROR(inferShapes(*model.graph, OpRegistry::builtin()));
    return model;
  }
  return m.load();
}

int runOpt(const OptArgs& a) {
  if (a.listPasses) {
    for (const auto& [name, summary] : listPasses())
      std::cout << fmt::format("{:<18} {}\n", name, summary);
    return kExitOk;
  }
  if (a.model.path.empty()) return fail("opt: no model given (a .kir, .onnx or .kiln file)");
  auto model = loadForOpt(a.model);
  if (!model.ok()) return fail(model.message());
  std::vector<std::string> names;
  if (!a.passes.empty()) {
    auto parsed = parsePassList(a.passes);
    if (!parsed.ok()) return fail(parsed.message());
    names = *parsed;
  } else {
    names = pipelineFor(a.optLevel < 0 ? 3 : a.optLevel);
  }
  PassRunOptions options;
  options.printBefore = {a.printBefore.begin(), a.printBefore.end()};
  options.printAfter = {a.printAfter.begin(), a.printAfter.end()};
  options.printAfterAll = a.printAfterAll;
  options.context.options.fastMath = a.fastMath;
  if (a.tracePatterns) options.context.trace = &std::cerr;
  auto records = runPasses(*model, names, options);
  if (!records.ok()) return fail(records.message());
  if (a.passStats) std::cerr << passStatsTable(*records);
  PrintOptions po;
  if (a.elide) po.elideDataAbove = 256;
  std::cout << printModel(*model, po);
  return kExitOk;
}

}  // namespace

Verb addOptVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "opt", "Run graph passes on textual IR (.kir) or a model and print the resulting IR");
  auto a = std::make_shared<OptArgs>();
  a->model.addTo(cmd);
  cmd->get_option("MODEL")->required(false);
  cmd->add_option("--passes", a->passes, "Comma-separated passes to run, in order");
  cmd->add_option("-O", a->optLevel, "Run the -O pipeline instead (default 3)")
      ->check(CLI::Range(0, 3));
  cmd->add_flag("--list-passes", a->listPasses, "List the passes and exit");
  cmd->add_flag("--pass-stats", a->passStats,
                "Print per pass: nodes before/after, added, removed, fused, time (stderr)");
  cmd->add_flag("--trace-patterns", a->tracePatterns,
                "Print why each rewrite pattern did not apply (stderr)");
  cmd->add_flag("--fast-math", a->fastMath, "Allow rewrites that change the last bits");
  cmd->add_flag("--elide", a->elide, "Elide tensor data over 256 bytes in the output");
  cmd->add_option("--print-before", a->printBefore, "Print the IR before this pass (stderr)");
  cmd->add_option("--print-after", a->printAfter, "Print the IR after this pass (stderr)");
  cmd->add_flag("--print-after-all", a->printAfterAll, "Print the IR after every pass (stderr)");
  return {cmd, [a] { return runOpt(*a); }};
}

}  // namespace kiln::cli
