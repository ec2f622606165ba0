// Code generation: a model → a standalone artifact folder (C API, kernels, weights, manifest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

enum class WeightsMode { Embedded, External };

struct CompileOptions {
  std::string outDir;
  std::string name = "model";   ///< C symbol prefix; sanitized to an identifier
  std::string target = "host";  ///< "host" or "generic"
  int optLevel = 3;
  WeightsMode weights = WeightsMode::Embedded;
  bool build = true;                    ///< run the C++ compiler to produce lib<name>.so / .a
  std::string cxx;                      ///< compiler; empty: $CXX, else "c++"
  std::string sourceFile;               ///< model file name for the manifest (no directories)
  std::vector<std::string> shapeFlags;  ///< --shape flags, recorded in the manifest
};

struct CompileResult {
  int64_t arenaBytes = 0;
  int64_t arenaLowerBoundBytes = 0;
  int64_t weightsBytes = 0;
  int64_t kernelCalls = 0;
  std::string libraryPath;  ///< lib<name>.so when built
  std::string symbolPrefix;
};

/// Generates the artifact for a fully inferred model (every value's shape static) into
/// options.outDir and, when options.build, compiles it. The model is lowered in place
/// (Constant nodes become initializers, compile-time-known values become weights).
Expected<CompileResult> compileModel(Model& model, const CompileOptions& options);

/// A C identifier derived from a file name ("my-model.onnx" → "my_model").
std::string symbolPrefixFor(const std::string& name);

}  // namespace kiln
