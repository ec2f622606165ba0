// The generated program before it becomes files: kernel calls, constants, weights, plan.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/codegen/compile.h"
#include "kiln/ir/graph.h"
#include "kiln/memory/plan.h"

namespace kiln {

/// One graph input or output as the C API describes it.
struct SignatureEntry {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;  ///< data-dependent dims at their bound
  int64_t bytes = 0;          ///< at the bounds
  /// Per dim: the run-time size slot (ctx->dyn[k]) of a data-dependent dim, else -1; empty
  /// when every dim is static (docs/dynamic-shapes.md).
  std::vector<int> runtimeDimSlots;
};

/// One kernel call of the run function.
struct KernelCall {
  std::string kernel;                  ///< e.g. "kiln_ref::conv2d"
  std::vector<std::string> nodeNames;  ///< source node names it computes
  std::string opType;
  std::string statement;  ///< C++ with @V<id>@ / @S<id>@ offset placeholders
  int64_t flops = 0;      ///< floating-point operations of one run (multiply-add = 2); 0: not counted
  int64_t bytes = 0;      ///< bytes its node reads and writes (inputs + outputs), one run
  std::string tuneKey;    ///< the tunable op signature this call implements (empty: none)
  std::string tuneChoice; ///< the candidate emitted for it
};

/// FLOPs of one node (Conv, ConvTranspose, Gemm, MatMul and their fused forms exactly;
/// elementwise-like ops one per output element), for profiles and reports.
int64_t estimateFlops(const Node& n);

/// A constant tensor placed in the weights blob.
struct WeightSlot {
  Tensor data;
  int64_t offset = 0;
};

struct Program {
  std::string prefix;
  Target target;                ///< resolved from CompileOptions::target
  int threads = 1;              ///< most threads the context's pool runs
  bool usesThreadPool = false;  ///< some kernel takes ctx->thread_pool
  std::vector<SignatureEntry> inputs, outputs;
  std::set<std::string> headers;
  std::vector<std::string> constants;  ///< file-scope definitions
  std::vector<KernelCall> calls;
  std::vector<WeightSlot> weights;
  int64_t weightsBytes = 0;
  int64_t arenaBytes = 0;
  int64_t arenaLowerBound = 0;
  std::string planner;
  /// The arena plan's buffers (intermediates, then scratch), labels and offsets.
  std::vector<BufferRequest> buffers;
  std::vector<std::string> bufferLabels;
  std::vector<int64_t> bufferOffsets;
  int64_t unsharedBytes = 0;       ///< every buffer at its own address (64-byte aligned)
  int64_t peakBeforeSchedule = 0;  ///< live-bytes peak of the model's own node order
  int64_t peakAfterSchedule = 0;   ///< ... of the order chosen to lower it
  int64_t viewCount = 0;           ///< values that are views of another buffer (no copy)
  int64_t inPlaceCount = 0;        ///< values written over a dead input
  int64_t overShiftedInput = 0;    ///< of those, shifted below it (depthwise convs)
  int64_t concatPlacedInputs = 0;  ///< Concat inputs written straight into the output
  /// Memories: pool 0 is the arena; --memory-pool gives more. Sizes are what the plan uses.
  std::vector<std::string> poolNames;
  std::vector<int64_t> poolBytes;
  std::vector<int64_t> poolCapacities;  ///< as given by --memory-pool (empty without)
  std::vector<int> bufferPools;         ///< bufferPools[i]: the pool of buffers[i]
  std::vector<PassRecord> passRecords;  ///< what the optimizer did (--pass-stats, --report)
  int runtimeDimCount = 0;              ///< ctx->dyn[] slots: sizes decided by the data
  /// Tunable ops met while emitting (EmitContext::tuned): key → candidates, and the choice.
  std::map<std::string, std::vector<std::string>> tunables;
  std::map<std::string, std::string> tuneChosen;
};

/// The plan part of a Program as a report.
MemoryReport memoryReportOf(const Program& p);

/// Lowers an inferred model to a Program (emission + memory plan; placeholders resolved).
Expected<Program> buildProgram(Model& model, const CompileOptions& options);

/// Writes the artifact files for a program into options.outDir.
Status writeArtifact(const Model& model, const Program& program, const CompileOptions& options);

/// The flags model.cc is compiled with, wherever it is built (kiln compile, the generated
/// CMakeLists.txt, the manifest's cxx_flags for other build systems): the optimization level,
/// the floating-point semantics and the target's ISA flags. Not -std, -fPIC, -I or -pthread.
std::vector<std::string> modelCxxFlags(const Program& program, const CompileOptions& options);

/// Compiles the artifact into lib<prefix>.so and lib<prefix>.a; returns the .so path.
Expected<std::string> buildArtifact(const Program& program, const CompileOptions& options);

}  // namespace kiln
