// `kiln compile`: model → standalone artifact folder (C API, kernels, weights, library).
#include <iostream>

#include "kiln/support/file.h"
#include "prepare.h"
#include "report.h"
#include "tune.h"

namespace kiln::cli {
namespace {

struct CompileArgs {
  ModelArgs model;
  CodegenArgs codegen;
  std::string outDir;
  bool noBuild = false;
  std::string memoryPlot;
  bool memoryTable = false;
  std::vector<std::string> printBefore, printAfter;
  bool printAfterAll = false, passStats = false, tracePatterns = false;
  std::string report;
  bool tune = false;
  TuneArgs tuneArgs;
};

int runCompile(const CompileArgs& a) {
  auto model = a.model.load();
  if (!model.ok()) return fail(model.message());
  auto options = a.codegen.toOptions(a.model.path, a.outDir, a.model.shapes);
  if (!options.ok()) return fail(options.message());
  options->build = !a.noBuild;
  if (a.tune) {
    TuneArgs t = a.tuneArgs;
    t.cachePath = a.codegen.tuningCache;
    if (auto st = tuneModel(a.model, *options, t); !st.ok()) return fail(st.message());
  }
  options->passes.printBefore = {a.printBefore.begin(), a.printBefore.end()};
  options->passes.printAfter = {a.printAfter.begin(), a.printAfter.end()};
  options->passes.printAfterAll = a.printAfterAll;
  if (a.tracePatterns) options->passes.context.trace = &std::cerr;
  auto before = opHistogram(*model->graph);
  int64_t nodesBefore = nodesWithBodies(*model->graph);
  auto r = compileModel(*model, *options);
  if (!r.ok()) return fail(r.message());
  if (a.passStats) std::cerr << passStatsTable(r->passes);
  if (!a.report.empty()) {
    std::string text = optimizationReport(*model, nodesBefore, before, r->passes, a.report);
    if (Status st = writeFile(a.report, text.data(), text.size()); !st.ok())
      return fail(st.message());
  }
  if (!a.memoryPlot.empty()) {
    std::string svg = memoryPlotSvg(r->memory);
    if (Status st = writeFile(a.memoryPlot, svg.data(), svg.size()); !st.ok())
      return fail(st.message());
  }
  if (a.memoryTable) std::cout << memoryTable(r->memory);
  std::cout << fmt::format(
      "compiled {} -> {}: {} kernel calls, arena {} bytes (lower bound {}), weights {} bytes{}\n",
      a.model.path, a.outDir, r->kernelCalls, r->arenaBytes, r->arenaLowerBoundBytes,
      r->weightsBytes, r->libraryPath.empty() ? "" : ", lib" + r->symbolPrefix + ".so/.a");
  return kExitOk;
}

}  // namespace

Verb addCompileVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model into a standalone library folder");
  auto a = std::make_shared<CompileArgs>();
  a->model.addTo(cmd);
  a->codegen.addTo(cmd, /*withName=*/true);
  cmd->add_option("-o,--output", a->outDir, "Output folder")->required();
  cmd->add_option("--memory-plot", a->memoryPlot,
                  "Also draw the arena plan as an SVG picture into this file");
  cmd->add_flag("--memory-table", a->memoryTable, "Print the arena plan, one line per buffer");
  cmd->add_flag("--no-build", a->noBuild, "Write the sources only; do not run the C++ compiler");
  cmd->add_flag("--profile", a->codegen.profile,
                "Time every kernel call of run ({P}_profile_*; `kiln bench --profile` reads them)");
  cmd->add_flag("--tune", a->tune,
                "Measure the candidate implementations of each tunable op on this machine and "
                "keep the fastest (results go to --tuning-cache, default "
                "~/.cache/kiln/tuning-cache.json; cached ones are not measured again)");
  cmd->add_option("--tune-budget", a->tuneArgs.budgetSeconds,
                  "Seconds --tune may spend measuring (default 600); ops left unmeasured keep "
                  "the cost model's choice")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--print-before", a->printBefore, "Print the IR before this pass (stderr)");
  cmd->add_option("--print-after", a->printAfter, "Print the IR after this pass (stderr)");
  cmd->add_flag("--print-after-all", a->printAfterAll, "Print the IR after every pass (stderr)");
  cmd->add_flag("--pass-stats", a->passStats,
                "Print per pass: nodes before/after, added, removed, fused, time (stderr)");
  cmd->add_flag("--trace-patterns", a->tracePatterns,
                "Print why each rewrite pattern did not apply (stderr)");
  cmd->add_option("--report", a->report,
                  "Write an optimization report: FILE.json, or FILE.html to read in a browser");
  return {cmd, [a] { return runCompile(*a); }};
}

}  // namespace kiln::cli
