// Code generation: a model → a standalone artifact folder (C API, kernels, weights, manifest).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/memory/pools.h"
#include "kiln/passes/pass.h"
#include "kiln/support/status.h"

namespace kiln {

enum class WeightsMode { Embedded, External };

struct CompileOptions {
  std::string outDir;
  std::string name = "model";   ///< C symbol prefix; sanitized to an identifier
  std::string target = "host";  ///< a name of targetNames(): host, x86-64-v4, ..., generic
  /// Most threads the generated context runs (its pool; {P}_set_threads lowers it); 0: the
  /// host's core count for --target host, else 1.
  int threads = 0;
  /// Time every kernel call of run ({P}_profile_*; docs/targets.md). Off: no timing code.
  bool profile = false;
  /// --amx fast|exact: where the target has AMX (Target::amxF32), f32 1x1 convs and GEMMs with
  /// constant weights in 2 or 3 bf16 pieces on AMX tiles; 0 (default): f32 FMAs.
  int amxPieces = 0;
  int optLevel = 3;
  WeightsMode weights = WeightsMode::Embedded;
  bool build = true;                    ///< run the C++ compiler to produce lib<name>.so / .a
  /// With build: also archive lib<name>.a. kiln run's and bench's cached compiles and the
  /// tuner's candidates load only the shared library (ar costs ~70 ms a build: its LTO
  /// plugin loads even for one object).
  bool archive = true;
  std::string cxx;                      ///< compiler; empty: $CXX, else "c++"
  /// With build and a GCC compiler: a folder that keeps precompiled system headers between
  /// builds (kiln run's and bench's cache); empty: none. The artifact's files do not change.
  std::string pchDir;
  std::string sourceFile;               ///< model file name for the manifest (no directories)
  std::vector<std::string> shapeFlags;  ///< --shape flags, recorded in the manifest
  /// --memory-pool NAME:BYTES, fastest first; empty: one arena of whatever size the plan needs.
  std::vector<MemoryPool> memoryPools;
  /// The optimizer: --print-before/-after, --fast-math, verification.
  PassRunOptions passes;
  /// Passes to run instead of the -O pipeline (--passes a,b,c); empty: pipelineFor(optLevel).
  std::vector<std::string> passList;
  /// Loop ops stop with KILN_ERR_DATA at run time beyond this many iterations (a trip count
  /// or condition from untrusted input must not hang the caller).
  int64_t maxLoopIterations = 1000000;
  /// --max-dim NAME=N: bounds for data-dependent dims no op bounds (docs/dynamic-shapes.md).
  std::map<std::string, int64_t> maxDims;
  /// Tuned choices (docs/tuning.md): op signature (EmitContext::tuned's key, prefixed with the
  /// target and thread count) → the implementation to emit. Ops not listed, or listed with a
  /// choice that is not one of their candidates, take the cost model's.
  std::map<std::string, std::string> tuning;
  /// For the tuner: when >= 0, every tunable op not in `tuning` that has more than `tuneSweep`
  /// candidates emits candidate number `tuneSweep`.
  int tuneSweep = -1;
};

/// The arena plan of a compiled model, for reports and pictures.
struct MemoryReport {
  struct Buffer {
    std::string label;  ///< the value name, or "scratch of step N"
    int64_t bytes = 0, firstStep = 0, lastStep = 0, offset = 0;
    std::string pool = "arena";  ///< the memory it lives in (--memory-pool)
  };
  std::vector<Buffer> buffers;
  int64_t arenaBytes = 0;
  int64_t lowerBoundBytes = 0;     ///< largest sum of simultaneously live buffers
  int64_t unsharedBytes = 0;       ///< sum of all buffers (no sharing)
  std::string planner;             ///< the planner whose plan was kept
  int64_t peakBeforeSchedule = 0;  ///< live-bytes peak in the model's node order (0: not run)
  int64_t peakAfterSchedule = 0;   ///< ... in the order kiln chose
  int64_t views = 0;               ///< values that are views of another buffer
  int64_t inPlace = 0;             ///< values written over a dead input
  int64_t concatPlacedInputs = 0;  ///< Concat inputs written straight into the output
};

/// The plan as an SVG picture: x = op step, y = arena offset, one rectangle per buffer.
std::string memoryPlotSvg(const MemoryReport& report);

/// The plan as a text table, one line per buffer, sorted by offset.
std::string memoryTable(const MemoryReport& report);

struct CompileResult {
  int64_t arenaBytes = 0;
  int64_t arenaLowerBoundBytes = 0;
  int64_t weightsBytes = 0;
  int64_t kernelCalls = 0;
  std::string libraryPath;  ///< lib<name>.so when built
  std::string symbolPrefix;
  MemoryReport memory;
  std::vector<PassRecord> passes;  ///< per-pass statistics of the optimizer
  /// The tunable ops: signature → candidates (the cost model's first), and what was emitted.
  std::map<std::string, std::vector<std::string>> tunables;
  std::map<std::string, std::string> tuneChosen;
};

/// Generates the artifact for a fully inferred model (every value's shape static) into
/// options.outDir and, when options.build, compiles it. The model is lowered in place
/// (Constant nodes become initializers, compile-time-known values become weights).
Expected<CompileResult> compileModel(Model& model, const CompileOptions& options);

/// Lowers the model and plans its memory without writing anything.
Expected<MemoryReport> planModelMemory(Model& model, const CompileOptions& options);

/// A C identifier derived from a file name ("my-model.onnx" → "my_model").
std::string symbolPrefixFor(const std::string& name);

}  // namespace kiln
