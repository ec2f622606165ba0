// Data-dependent output sizes in generated code: planning at the bound, refusing consumers
// that cannot take a run-time size, and the C API's run-time shapes (docs/dynamic-shapes.md).
#pragma once

#include <map>
#include <string>
#include <utility>

#include "kiln/ir/graph.h"
#include "program.h"

namespace kiln {

/// Bytes of v's buffer: its static size, or its size with data-dependent dims at their bound.
/// Only valid when v's shape isBoundedOrStatic() and its size fits (checked before emission).
int64_t plannedBytes(const Value* v);

/// Fails, naming the node, when an input of n has a data-dependent size and n's op cannot take
/// one yet; or when an output of n has a data-dependent size with no compile-time bound.
Status checkDataDependentSizes(const Node& n);

/// Each graph output's data-dependent dims: the ctx->dyn slot its op's code assigns (from
/// runtimeDims, (value, dim) -> slot), into p.outputs[i].runtimeDimSlots (-1: a static dim).
Status bindOutputRuntimeDims(const Graph& g, Program& p,
                             const std::map<std::pair<const Value*, size_t>, int>& runtimeDims);

/// C++ for the generated model.cc: file-scope tables of the run-time shapes (after the
/// signature tables).
std::string runtimeShapeTables(const Program& p);
/// C++ statements at the end of run: copy each output's data-dependent sizes from ctx->dyn.
std::string runtimeShapeUpdate(const Program& p);
/// C++ for create: an output's run-time shape starts at its bound.
std::string runtimeShapeInit(const Program& p);
/// The extern "C" functions output_runtime_shape / output_runtime_bytes.
std::string runtimeShapeFunctions(const Program& p);

}  // namespace kiln
