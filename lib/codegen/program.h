// The generated program before it becomes files: kernel calls, constants, weights, plan.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/codegen/compile.h"
#include "kiln/ir/graph.h"

namespace kiln {

/// One graph input or output as the C API describes it.
struct SignatureEntry {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  int64_t bytes = 0;
};

/// One kernel call of the run function.
struct KernelCall {
  std::string kernel;                  ///< e.g. "kiln_ref::conv2d"
  std::vector<std::string> nodeNames;  ///< source node names it computes
  std::string opType;
  std::string statement;  ///< C++ with @V<id>@ / @S<id>@ offset placeholders
};

/// A constant tensor placed in the weights blob.
struct WeightSlot {
  Tensor data;
  int64_t offset = 0;
};

struct Program {
  std::string prefix;
  std::vector<SignatureEntry> inputs, outputs;
  std::set<std::string> headers;
  std::vector<std::string> constants;  ///< file-scope definitions
  std::vector<KernelCall> calls;
  std::vector<WeightSlot> weights;
  int64_t weightsBytes = 0;
  int64_t arenaBytes = 0;
  int64_t arenaLowerBound = 0;
  std::string planner;
};

/// Lowers an inferred model to a Program (emission + memory plan; placeholders resolved).
Expected<Program> buildProgram(Model& model, const CompileOptions& options);

/// Writes the artifact files for a program into options.outDir.
Status writeArtifact(const Model& model, const Program& program, const CompileOptions& options);

/// Compiles the artifact into lib<prefix>.so and lib<prefix>.a; returns the .so path.
Expected<std::string> buildArtifact(const Program& program, const CompileOptions& options);

}  // namespace kiln
