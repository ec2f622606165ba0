// Loading models from .onnx or .kiln files, fixing input shapes, and inferring types.
#include "kiln/frontend/load.h"

#include <fstream>

#include "kiln/ir/kiln_format.h"
#include "kiln/ir/verifier.h"
#include "kiln/ops/infer.h"

namespace kiln {
namespace {

std::string baseName(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Status parseShapeFlag(const std::string& flag, std::map<std::string, std::vector<int64_t>>& out) {
  auto eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return makeError("--shape '{}': expected NAME=d0,d1,... (an empty list declares a scalar)",
                     flag);
  std::string name = flag.substr(0, eq);
  std::string list = flag.substr(eq + 1);
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string item =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty() || item.size() > 18 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return makeError("--shape '{}': dim '{}' is not a non-negative integer", flag, item);
    dims.push_back(std::stoll(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
    if (pos == list.size()) return makeError("--shape '{}': trailing comma", flag);
  }
  if (out.count(name)) return makeError("--shape: input '{}' is given twice", name);
  out[name] = std::move(dims);
  return Status();
}

Status applyInputShapes(Graph& g, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::map<std::string, int64_t> bound;  // symbol -> value, from the given shapes
  for (const auto& [name, dims] : shapes) {
    Value* in = nullptr;
    for (Value* v : g.inputs())
      if (v->name() == name) in = v;
    if (!in) {
      std::string names;
      for (Value* v : g.inputs()) names += (names.empty() ? "" : ", ") + v->name();
      return makeError("--shape {}: the model has no input named '{}' (inputs: {})", name, name,
                       names);
    }
    const Shape& old = in->shape();
    if (old.rankKnown() && old.rank() != int64_t(dims.size()))
      return makeError("--shape {}: gives {} dims but input '{}' has rank {} ({})", name,
                       dims.size(), name, old.rank(), toString(old));
    if (old.rankKnown())
      for (size_t i = 0; i < dims.size(); ++i) {
        const Dim& d = old[i];
        if (d.isStatic() && d.value != dims[i])
          return makeError("--shape {}: dim {} is fixed to {} by the model, not {}", name, i,
                           d.value, dims[i]);
        if (d.isSymbolic()) {
          auto [it, fresh] = bound.emplace(d.symbol, dims[i]);
          if (!fresh && it->second != dims[i])
            return makeError("--shape: symbolic dim '{}' is given as both {} and {}", d.symbol,
                             it->second, dims[i]);
        }
      }
    in->setType(TensorType{in->dtype(), Shape::ofStatic(dims)});
  }
  // A symbol bound through one input binds it in every other input too.
  for (Value* v : g.inputs()) {
    if (!v->shape().rankKnown()) continue;
    TensorType t = v->type();
    for (Dim& d : t.shape.dims())
      if (d.isSymbolic())
        if (auto it = bound.find(d.symbol); it != bound.end()) d = Dim::known(it->second);
    v->setType(std::move(t));
  }
  return Status();
}

Expected<Model> loadModel(const std::string& path, const LoadOptions& options) {
  char head[16] = {};
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) return makeError("{}: cannot open the model file", path);
    f.read(head, sizeof head);
  }
  Model model;
  if (looksLikeKilnFile(std::string_view(head, sizeof head))) {
    KILN_ASSIGN_OR_RETURN(model, readKilnFile(path, options.onnx.maxNodes));
  } else {
    KILN_ASSIGN_OR_RETURN(model, importOnnxFile(path, options.onnx));
  }
  Graph& g = *model.graph;
  std::string file = baseName(path);
  if (auto st = applyInputShapes(g, options.inputShapes); !st.ok())
    return makeError("{}: {}", file, st.message());
  if (!options.infer) return model;
  if (auto st = verifyGraph(g); !st.ok()) return makeError("{}: {}", file, st.message());
  if (auto st = inferShapes(g, OpRegistry::builtin()); !st.ok())
    return makeError("{}: {}", file, st.message());
  return model;
}

}  // namespace kiln
