// `kiln compile --tune`: measures the candidates of every tunable op on this machine and keeps
// the fastest (docs/tuning.md).
#pragma once

#include <string>

#include "kiln/codegen/compile.h"
#include "verbs.h"

namespace kiln::cli {

struct TuneArgs {
  double budgetSeconds = 600;  ///< --tune-budget: no new measuring compile starts after this
  std::string cachePath;       ///< --tuning-cache (default: the compile cache's folder)
};

/// This machine's CPU, as tuning cache sections name it.
std::string tuningCpuName();

/// The tuning cache file --tune uses when --tuning-cache is not given.
std::string defaultTuningCachePath();

/// Fills options.tuning: cached choices for this CPU, and for the tunable ops the cache lacks,
/// the fastest candidate measured here (each candidate compiled into a folder under
/// options.outDir, run with profiling, and removed). Writes the new results to the cache.
Status tuneModel(const ModelArgs& model, CompileOptions& options, const TuneArgs& args);

}  // namespace kiln::cli
