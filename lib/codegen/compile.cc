// compileModel: lower, write the artifact, and build it.
#include "kiln/codegen/compile.h"

#include "program.h"

namespace kiln {

Expected<CompileResult> compileModel(Model& model, const CompileOptions& options) {
  if (options.outDir.empty()) return makeError("no output folder given (-o DIR)");
  KILN_RETURN_IF_ERROR(targetByName(options.target).status());
  KILN_ASSIGN_OR_RETURN(Program program, buildProgram(model, options));
  KILN_RETURN_IF_ERROR(writeArtifact(model, program, options));
  CompileResult r;
  r.arenaBytes = program.arenaBytes;
  r.arenaLowerBoundBytes = program.arenaLowerBound;
  r.weightsBytes = program.weightsBytes;
  r.kernelCalls = int64_t(program.calls.size());
  r.symbolPrefix = program.prefix;
  r.memory = memoryReportOf(program);
  r.passes = program.passRecords;
  r.tunables = program.tunables;
  r.tuneChosen = program.tuneChosen;
  if (options.build) {
    KILN_ASSIGN_OR_RETURN(r.libraryPath, buildArtifact(program, options));
  }
  return r;
}

}  // namespace kiln
