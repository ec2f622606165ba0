// The CLI's verbs: each file registers one subcommand and returns its exit code when run.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/frontend/load.h"

namespace kiln::cli {

/// Exit codes: 0 success, 1 user error (one line on stderr).
constexpr int kExitOk = 0;
constexpr int kExitUserError = 1;

/// A registered verb: the parsed subcommand and what to run when it was chosen.
struct Verb {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

Verb addInspectVerb(CLI::App& app);
Verb addConvertVerb(CLI::App& app);
Verb addPrintVerb(CLI::App& app);
Verb addCompileVerb(CLI::App& app);
Verb addRunVerb(CLI::App& app);
Verb addBenchVerb(CLI::App& app);
Verb addOptVerb(CLI::App& app);

/// Options shared by verbs that load a model.
struct ModelArgs {
  std::string path;
  std::vector<std::string> shapes;
  /// --max-model-bytes, --max-tensor-bytes, --max-nesting, --max-rank, --max-nodes
  OnnxImportOptions limits;
  /// Adds MODEL, --shape and the import limits to a subcommand.
  void addTo(CLI::App* cmd);
  /// Loads the model with these options (infers shapes unless `infer` is false).
  Expected<Model> load(bool infer = true) const;
};

/// Prints "kiln: <message>" on stderr and returns kExitUserError.
int fail(const std::string& message);

}  // namespace kiln::cli
