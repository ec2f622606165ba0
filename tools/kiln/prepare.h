// Getting a runnable artifact for run/bench: an existing OUTDIR, or a cached compile.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/codegen/compile.h"
#include "loaded_model.h"
#include "verbs.h"

namespace kiln::cli {

/// Compile options shared by compile, run and bench.
struct CodegenArgs {
  std::string target = "host";
  int threads = 0;  ///< 0: the target's default
  int optLevel = 3;
  std::string name;
  std::string weights = "embedded";
  std::string cxx;
  std::vector<std::string> memoryPools;  ///< --memory-pool NAME:BYTES
  std::string passes;                    ///< --passes a,b,c instead of the -O pipeline
  bool fastMath = false;
  std::string amx;       ///< --amx fast|exact (empty: off)
  bool profile = false;  ///< set by compile --profile and bench --profile
  int64_t maxLoopIterations = 1000000;   ///< --max-loop-iterations
  std::vector<std::string> maxDims;      ///< --max-dim NAME=N
  std::string tuningCache;               ///< --tuning-cache FILE: tuned choices to use
  void addTo(CLI::App* cmd, bool withName);
  Expected<CompileOptions> toOptions(const std::string& modelPath, const std::string& outDir,
                                     const std::vector<std::string>& shapeFlags) const;
};

/// Model inputs given as "[NAME=]FILE", read from disk.
struct GivenInput {
  std::string name;  ///< empty: bind by position
  std::string path;
  HostTensor tensor;
};
Expected<std::vector<GivenInput>> readGivenInputs(const std::vector<std::string>& specs,
                                                  const std::string& modelPath);

/// Returns an artifact folder for MODEL: MODEL itself if it is one, else a compile cached
/// under cacheDir keyed by the model's hash, the options and kiln's version. Dynamic input
/// dims without --shape are specialized from `inputs`.
Expected<std::string> prepareArtifact(const ModelArgs& model, const CodegenArgs& codegen,
                                      const std::string& cacheDir,
                                      const std::vector<GivenInput>& inputs);

/// Binds given inputs to a loaded model by name or position, checking dtype and shape.
Status bindInputs(LoadedModel& m, const std::vector<GivenInput>& inputs);

/// Seeded inputs: floats uniform in [-1, 1], integers in [0, 8), bools fair.
HostTensor randomInput(const TensorSpec& s, std::mt19937_64& rng);

/// Default cache folder: $XDG_CACHE_HOME/kiln or ~/.cache/kiln.
std::string defaultCacheDir();

}  // namespace kiln::cli
