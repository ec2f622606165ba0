// `kiln convert`: writes a model as a .kiln file (serialized IR with mappable weights).
#include <iostream>

#include "kiln/ir/kiln_format.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

struct ConvertArgs {
  ModelArgs model;
  std::string output;
  int64_t externalAbove = -1;
};

int runConvert(const ConvertArgs& a) {
  auto model = a.model.load();
  if (!model.ok()) return fail(model.message());
  KilnWriteOptions options;
  if (a.externalAbove >= 0) options.externalWeightsAbove = uint64_t(a.externalAbove);
  if (auto st = writeKilnFile(*model, a.output, options); !st.ok()) return fail(st.message());
  return kExitOk;
}

}  // namespace

Verb addConvertVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Convert a model to a .kiln file");
  auto a = std::make_shared<ConvertArgs>();
  a->model.addTo(cmd);
  cmd->add_option("-o,--output", a->output, "Output .kiln file")->required();
  cmd->add_option("--external-weights-above", a->externalAbove,
                  "Store tensors larger than this many bytes in a .safetensors file beside it");
  return {cmd, [a] { return runConvert(*a); }};
}

}  // namespace kiln::cli
