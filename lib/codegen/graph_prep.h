// Lowering helpers used by buildProgram (graph_prep.cc).
#pragma once

#include "program.h"

namespace kiln {

/// Constant nodes become initializers so their data lands in the weights blob (in subgraphs
/// too; a subgraph may return an outer Constant directly).
Status constantsToInitializers(Graph& g);

/// A clear error unless v has a static (or bounded) shape, a rank the kernels index, a dtype
/// code generation handles and a byte size that fits. `role`: "input", "output", "value".
Status checkStatic(const Value* v, const char* role);

/// The C API's description of a graph input or output.
SignatureEntry signatureOf(const Value* v);

}  // namespace kiln
