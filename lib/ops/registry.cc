// The built-in op registry.
#include "kiln/ops/registry.h"

#include "emit_support.h"

namespace kiln {

void OpRegistry::addDef(OpDef def) {
  auto key = std::make_pair(def.domain, def.name);
  defs_[key] = std::move(def);
}

const OpDef* OpRegistry::find(const std::string& domain, const std::string& name) const {
  auto it = defs_.find({domain == "ai.onnx" ? std::string() : domain, name});
  return it == defs_.end() ? nullptr : &it->second;
}

void OpRegistry::setEmit(const std::string& domain, const std::string& name, EmitFn emit) {
  auto it = defs_.find({domain, name});
  if (it != defs_.end() && !it->second.emit) it->second.emit = emit;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [k, d] : defs_) out.push_back(&d);
  return out;
}

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerActivationOps(r);
    registerConvOps(r);
    registerPoolOps(r);
    registerMatMulOps(r);
    registerNormOps(r);
    registerReduceOps(r);
    registerShapeOps(r);
    registerTensorOps(r);
    registerControlFlowOps(r);
    registerMiscOps(r);
    registerFusedOps(r);
    attachNnEmitters(r);
    attachDataEmitters(r);
    attachIndexEmitters(r);
    attachDynamicEmitters(r);
    attachGenerateEmitters(r);
    attachReduceEmitters(r);
    attachResizeEmitters(r);
    attachNormEmitters(r);
    attachQuantEmitters(r);
    attachLossEmitters(r);
    attachQuantNnEmitters(r);
    attachImageEmitters(r);
    attachRecurrentEmitters(r);
    attachEinsumEmitters(r);
    attachFusedEmitters(r);
    return r;
  }();
  return registry;
}

}  // namespace kiln
