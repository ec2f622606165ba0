// `kiln run`: compile (cached) and run a model on input files, writing outputs as .npy.
#include <cctype>
#include <filesystem>
#include <iostream>
#include <set>

#include "prepare.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  ModelArgs model;
  CodegenArgs codegen;
  std::vector<std::string> inputs;
  std::string outDir;
  std::string cacheDir;
  int runThreads = 0;  ///< --run-threads: {P}_set_threads after create (0: as compiled)
};

std::string fileNameFor(const std::string& outputName) {
  std::string s;
  for (char c : outputName) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    s.push_back(ok ? c : '_');
  }
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

int runRun(const RunArgs& a) {
  auto inputs = readGivenInputs(a.inputs, a.model.path);
  if (!inputs.ok()) {
    // A model kiln refuses (a sequence or string input, say) is the first thing to report: its
    // input files may then not even be tensors.
    if (fs::is_regular_file(a.model.path))
      if (auto model = a.model.load(/*infer=*/false); !model.ok()) return fail(model.message());
    return fail(inputs.message());
  }
  auto dir = prepareArtifact(a.model, a.codegen,
                             a.cacheDir.empty() ? defaultCacheDir() : a.cacheDir, *inputs);
  if (!dir.ok()) return fail(dir.message());
  auto m = LoadedModel::open(*dir);
  if (!m.ok()) return fail(m.message());
  LoadedModel& model = **m;
  if (auto st = model.createContext(); !st.ok()) return fail(st.message());
  if (a.runThreads > 0)
    if (auto st = model.setThreads(a.runThreads); !st.ok()) return fail(st.message());
  if (auto st = bindInputs(model, *inputs); !st.ok()) return fail(st.message());
  if (auto st = model.run(); !st.ok()) return fail(st.message());
  std::error_code ec;
  fs::create_directories(a.outDir, ec);
  if (ec) return fail(a.outDir + ": cannot create the output folder: " + ec.message());
  // Names that sanitize alike ("a/b", "a_b") get -1, -2, ... in signature order, so no output
  // overwrites another. Case-insensitive, for file systems that fold case.
  std::set<std::string> taken;
  for (size_t i = 0; i < model.outputs().size(); ++i) {
    auto t = model.output(i);
    if (!t.ok()) return fail(t.message());
    std::string base = fileNameFor(model.outputs()[i].name), file = base;
    auto folded = [](std::string f) {
      for (char& c : f) c = char(std::tolower(static_cast<unsigned char>(c)));
      return f;
    };
    for (int k = 1; taken.count(folded(file)); ++k) file = base + "-" + std::to_string(k);
    taken.insert(folded(file));
    std::string path = (fs::path(a.outDir) / (file + ".npy")).string();
    if (auto st = writeNpy(path, *t); !st.ok()) return fail(st.message());
  }
  return kExitOk;
}

}  // namespace

Verb addRunVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run", "Run a model (.onnx, .kiln, or a compiled folder) on input files (.npy or .pb)");
  auto a = std::make_shared<RunArgs>();
  a->model.addTo(cmd);
  a->codegen.addTo(cmd, /*withName=*/false);
  cmd->add_option("-i,--input", a->inputs, "[NAME=]FILE, repeatable; without NAME= in order")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("-o,--output", a->outDir, "Folder for the outputs (<name>.npy)")->required();
  cmd->add_option("--cache", a->cacheDir, "Compile cache folder (default ~/.cache/kiln)");
  cmd->add_option("--run-threads", a->runThreads,
                  "Run the compiled context at N threads ({P}_set_threads after create; at most "
                  "the compiled --threads), without recompiling")
      ->check(CLI::Range(1, 64));
  return {cmd, [a] { return runRun(*a); }};
}

}  // namespace kiln::cli
