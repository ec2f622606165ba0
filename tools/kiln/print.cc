// `kiln print`: the model as textual IR.
#include <iostream>

#include "kiln/ir/text.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

struct PrintArgs {
  ModelArgs model;
  bool full = false;
  bool noInfer = false;
};

int runPrint(const PrintArgs& a) {
  auto model = a.model.load(!a.noInfer);
  if (!model.ok()) return fail(model.message());
  PrintOptions options;
  if (!a.full) options.elideDataAbove = 256;
  std::cout << printModel(*model, options);
  return kExitOk;
}

}  // namespace

Verb addPrintVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand("print", "Print a model as kiln's textual IR");
  auto a = std::make_shared<PrintArgs>();
  a->model.addTo(cmd);
  cmd->add_flag("--full", a->full, "Print all weight data (default: elide tensors over 256 bytes)");
  cmd->add_flag("--no-infer", a->noInfer, "Print as imported, before shape inference");
  return {cmd, [a] { return runPrint(*a); }};
}

}  // namespace kiln::cli
