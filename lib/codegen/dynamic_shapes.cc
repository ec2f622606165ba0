// Data-dependent output sizes in generated code: planning at the bound, refusing consumers
// that cannot take a run-time size, and the C API's run-time shapes (docs/dynamic-shapes.md).
#include "dynamic_shapes.h"

#include "kiln/ops/emit.h"
#include "source_text.h"

namespace kiln {
namespace {

// Ops whose emitters take a --max-dim bound on their data-dependent output.
bool acceptsMaxDimHint(const Node& n) {
  return n.domain().empty() && n.opType() == "Range";
}

}  // namespace

int64_t plannedBytes(const Value* v) {
  return *dtypeStorageBytes(v->dtype(), *v->shape().upperBoundElements());
}

Status checkDataDependentSizes(const Node& n) {
  bool inputsSized = true;
  for (const Value* v : n.inputs()) {
    if (!v) continue;
    if (!v->shape().isBoundedOrStatic()) inputsSized = false;
    // Kernels are called with compile-time shapes; one fed the bound would read garbage.
    if (v->shape().hasDataDependentDims())
      return makeError(
          "{}: input '{}' has a data-dependent size (bound {}); kiln cannot feed it to {} yet "
          "— use it as a graph output, or file an issue",
          n.describe(), commentSafe(v->name()), toString(v->shape()), n.opType());
  }
  for (const Value* v : n.outputs()) {
    if (!v) continue;
    if (v->shape().hasDataDependentDims() && dtypeBits(v->dtype()) < 8)
      return makeError(
          "{}: output '{}' has a data-dependent size and the sub-byte type {}, "
          "which kiln does not support yet",
          n.describe(), commentSafe(v->name()), dtypeName(v->dtype()));
    // Static inputs but an output of unknown size: the data decides it with no bound known.
    if (inputsSized && v->shape().rankKnown() && !v->shape().isBoundedOrStatic())
      return makeError(
          "{}: output '{}' has a size decided by the data at run time ({}) and no compile-time "
          "bound{}",
          n.describe(), commentSafe(v->name()), toString(v->shape()),
          acceptsMaxDimHint(n) ? fmt::format(" — give one with --max-dim '{}=N' "
                                             "(docs/dynamic-shapes.md)",
                                             commentSafe(v->name()))
                               : std::string("; kiln cannot compile it yet — file an issue"));
  }
  return Status();
}

std::string runtimeShapeTables(const Program& p) {
  std::string offsets;
  size_t total = 0;
  for (const auto& e : p.outputs) {
    offsets += fmt::format("{}, ", total);
    total += e.dims.size();
  }
  if (p.outputs.empty()) offsets = "0, ";
  return fmt::format(
      "// Run-time shapes: outputs whose size the data decides (docs/dynamic-shapes.md).\n"
      "constexpr int kNumRuntimeDims = {};\nconstexpr size_t kOutDimsTotal = {};\n"
      "static const size_t kOutDimOffset[] = {{{}}};\n",
      p.runtimeDimCount, total, offsets);
}

std::string runtimeShapeInit(const Program&) {
  return "  for (int i = 0; i < kNumOutputs; ++i) {\n"
         "    for (int d = 0; d < kOutRanks[i]; ++d) ctx->out_dims[kOutDimOffset[i] + d] = "
         "kOutShapes[i][d];\n"
         "    ctx->out_runtime_bytes[i] = kOutBytes[i];\n  }\n";
}

std::string runtimeShapeUpdate(const Program& p) {
  std::string s;
  size_t offset = 0;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const SignatureEntry& e = p.outputs[i];
    if (!e.runtimeDimSlots.empty()) {
      std::string product;
      for (size_t d = 0; d < e.dims.size(); ++d) {
        int slot = e.runtimeDimSlots[d];
        if (slot >= 0) s += fmt::format("  ctx->out_dims[{}] = ctx->dyn[{}];\n", offset + d, slot);
        product += fmt::format(" * size_t(ctx->out_dims[{}])", offset + d);
      }
      s += fmt::format("  ctx->out_runtime_bytes[{}] = size_t({}){};\n", i,
                       *dtypeStorageBytes(e.dtype, 1), product);
    }
    offset += e.dims.size();
  }
  return s;
}

std::string runtimeShapeFunctions(const Program& p) {
  return fmt::format(
      R"(extern "C" const int64_t* {P}_output_runtime_shape(const {P}_context* ctx, int i) {{
  return ctx && i >= 0 && i < kNumOutputs ? ctx->out_dims + kOutDimOffset[i] : nullptr;
}}

extern "C" size_t {P}_output_runtime_bytes(const {P}_context* ctx, int i) {{
  return ctx && i >= 0 && i < kNumOutputs ? ctx->out_runtime_bytes[i] : 0;
}}

)",
      fmt::arg("P", p.prefix));
}

Status bindOutputRuntimeDims(const Graph& g, Program& p,
                             const std::map<std::pair<const Value*, size_t>, int>& runtimeDims) {
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value* v = g.outputs()[i];
    if (!v->shape().hasDataDependentDims()) continue;
    std::vector<int>& slots = p.outputs[i].runtimeDimSlots;
    for (size_t d = 0; d < v->shape().dims().size(); ++d) {
      auto it = runtimeDims.find({v, d});
      if (v->shape()[d].isBounded() && it == runtimeDims.end())
        return makeError(
            "output '{}' has a data-dependent size its op does not report — "
            "file an issue",
            commentSafe(v->name()));
      slots.push_back(it == runtimeDims.end() ? -1 : it->second);
    }
  }
  return Status();
}

}  // namespace kiln
