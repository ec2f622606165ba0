// kiln command-line entry: parses the verb and dispatches to it.
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include "verbs.h"

namespace kiln::cli {

void ModelArgs::addTo(CLI::App* cmd) {
  cmd->add_option("MODEL", path, "Model file (.onnx or .kiln)")->required();
  cmd->add_option("--shape", shapes,
                  "Fix an input's dims: NAME=d0,d1,... (repeatable; NAME= declares a scalar)")
      ->take_last()
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // Limits on untrusted models (docs/limits.md); raise them for a trusted model.
  cmd->add_option("--max-model-bytes", limits.maxModelBytes, "Largest model file accepted")
      ->capture_default_str();
  cmd->add_option("--max-tensor-bytes", limits.maxTensorBytes,
                  "Largest single tensor (initializer or external data) accepted")
      ->capture_default_str();
  cmd->add_option("--max-nesting", limits.maxSubgraphDepth,
                  "Deepest nesting of If/Loop/Scan subgraphs accepted")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--max-rank", limits.maxRank, "Largest tensor rank accepted")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 20))
      ->capture_default_str();
  cmd->add_option("--max-nodes", limits.maxNodes,
                  "Most nodes accepted, counted over the graph and all its subgraphs")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40))
      ->capture_default_str();
}

Expected<Model> ModelArgs::load(bool infer) const {
  LoadOptions options;
  options.infer = infer;
  options.onnx = limits;
  for (const auto& s : shapes) KILN_RETURN_IF_ERROR(parseShapeFlag(s, options.inputShapes));
  return loadModel(path, options);
}

int fail(const std::string& message) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::cerr << "kiln: " << line << "\n";
  return kExitUserError;
}

}  // namespace kiln::cli

int main(int argc, char** argv) {
  using namespace kiln::cli;
  CLI::App app{"kiln — an ahead-of-time compiler for neural networks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  std::vector<Verb> verbs = {addCompileVerb(app), addRunVerb(app),     addBenchVerb(app),
                             addInspectVerb(app), addConvertVerb(app), addPrintVerb(app),
                             addOptVerb(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " — run 'kiln --help' or 'kiln VERB --help'");
  }
  try {
    for (const Verb& v : verbs)
      if (v.command->parsed()) return v.run();
  } catch (const std::bad_alloc&) {
    return fail("out of memory — the model is too large for this machine or declares absurd sizes");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what() + " — please report this");
  }
  return kExitUserError;
}
