// `kiln compile`: model → standalone artifact folder (C API, kernels, weights, library).
#include <iostream>

#include "kiln/support/file.h"
#include "prepare.h"

namespace kiln::cli {
namespace {

struct CompileArgs {
  ModelArgs model;
  CodegenArgs codegen;
  std::string outDir;
  bool noBuild = false;
  std::string memoryPlot;
  bool memoryTable = false;
};

int runCompile(const CompileArgs& a) {
  auto model = a.model.load();
  if (!model.ok()) return fail(model.message());
  auto options = a.codegen.toOptions(a.model.path, a.outDir, a.model.shapes);
  if (!options.ok()) return fail(options.message());
  options->build = !a.noBuild;
  auto r = compileModel(*model, *options);
  if (!r.ok()) return fail(r.message());
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
  return {cmd, [a] { return runCompile(*a); }};
}

}  // namespace kiln::cli
