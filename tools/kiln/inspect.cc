// `kiln inspect`: a model's provenance, signature, op histogram and parameter sizes.
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>

#include "kiln/ops/infer.h"
#include "prepare.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

struct Census {
  std::map<std::string, int64_t> ops;
  int64_t nodes = 0;
  int64_t params = 0;
  int64_t bytes = 0;
  std::map<std::string, int64_t> bytesByDType;
};

void count(const Graph& g, Census& c) {
  for (const Value* v : g.initializers()) {
    const Tensor* t = v->initializer();
    c.params += t->numElements();
    int64_t b = t->dtype() == DType::String ? 0 : int64_t(t->byteSize());
    c.bytes += b;
    c.bytesByDType[std::string(dtypeName(t->dtype()))] += b;
  }
  for (const auto& n : g.nodes()) {
    ++c.nodes;
    std::string key = n->domain().empty() ? n->opType() : n->domain() + "." + n->opType();
    ++c.ops[key];
    for (const Graph* sub : n->subgraphs()) count(*sub, c);
  }
}

nlohmann::ordered_json dimsJson(const Shape& s) {
  if (!s.rankKnown()) return nullptr;
  auto arr = nlohmann::ordered_json::array();
  for (const Dim& d : s.dims()) {
    if (d.isStatic())
      arr.push_back(d.value);
    else if (d.isSymbolic())
      arr.push_back(d.symbol);
    else
      arr.push_back("?");
  }
  return arr;
}

nlohmann::ordered_json signatureJson(const std::vector<Value*>& values) {
  auto arr = nlohmann::ordered_json::array();
  for (const Value* v : values)
    arr.push_back({{"name", v->name()},
                   {"dtype", std::string(dtypeName(v->dtype()))},
                   {"shape", dimsJson(v->shape())}});
  return arr;
}

std::string humanBytes(int64_t b) {
  if (b >= (1 << 20)) return fmt::format("{:.1f} MiB", double(b) / (1 << 20));
  if (b >= (1 << 10)) return fmt::format("{:.1f} KiB", double(b) / (1 << 10));
  return fmt::format("{} B", b);
}

int runInspect(const ModelArgs& args, bool json) {
  auto model = args.load();
  if (!model.ok()) return fail(model.message());
  const Graph& g = *model->graph;
  const ModelMetadata& m = model->meta;
  Census c;
  count(g, c);
  auto unresolved = unresolvedDims(g);
  if (json) {
    nlohmann::ordered_json j;
    j["model"] = args.path;
    j["format"] = m.sourceFormat;
    j["producer"] = {{"name", m.producerName}, {"version", m.producerVersion}};
    j["ir_version"] = m.irVersion;
    auto opsets = nlohmann::ordered_json::object();
    for (const auto& o : m.opsets) opsets[o.domain.empty() ? "ai.onnx" : o.domain] = o.version;
    j["opsets"] = opsets;
    j["sha256"] = m.sourceSha256;
    j["inputs"] = signatureJson(g.inputs());
    j["outputs"] = signatureJson(g.outputs());
    j["nodes"] = c.nodes;
    j["op_histogram"] = c.ops;
    j["parameters"] = c.params;
    j["weight_bytes"] = c.bytes;
    j["weight_bytes_by_dtype"] = c.bytesByDType;
    j["unresolved_dims"] = unresolved;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "model:      " << args.path << " (" << m.sourceFormat << ")\n";
  std::cout << "producer:   " << (m.producerName.empty() ? "(none)" : m.producerName) << " "
            << m.producerVersion << ", ir_version " << m.irVersion << "\n";
  std::cout << "opsets:     ";
  for (const auto& o : m.opsets)
    std::cout << (o.domain.empty() ? "ai.onnx" : o.domain) << " " << o.version << "  ";
  std::cout << "\nsha256:     " << m.sourceSha256 << "\n";
  auto sig = [](const char* title, const std::vector<Value*>& vs) {
    std::cout << title << "\n";
    for (const Value* v : vs) std::cout << "  " << v->name() << "  " << toString(v->type()) << "\n";
  };
  sig("inputs:", g.inputs());
  sig("outputs:", g.outputs());
  std::cout << "ops:        " << c.nodes << " nodes\n";
  std::vector<std::pair<std::string, int64_t>> hist(c.ops.begin(), c.ops.end());
  std::stable_sort(hist.begin(), hist.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [op, n] : hist) std::cout << fmt::format("  {:<24} {:>6}\n", op, n);
  std::cout << "parameters: " << c.params << " (" << humanBytes(c.bytes) << ")\n";
  for (const auto& [dt, b] : c.bytesByDType)
    std::cout << fmt::format("  {:<24} {}\n", dt, humanBytes(b));
  std::cout << "unresolved dims: ";
  if (unresolved.empty()) std::cout << "none";
  for (size_t i = 0; i < unresolved.size(); ++i) std::cout << (i ? ", " : "") << unresolved[i];
  std::cout << (unresolved.empty() ? "" : "  (fix them with --shape NAME=d0,d1,...)") << "\n";
  return kExitOk;
}

/// `inspect --memory`: lower the model as compile would (nothing written) and print its plan.
int runInspectMemory(const ModelArgs& args, const CodegenArgs& codegen) {
  auto model = args.load();
  if (!model.ok()) return fail(model.message());
  auto options = codegen.toOptions(args.path, "", args.shapes);
  if (!options.ok()) return fail(options.message());
  auto report = planModelMemory(*model, *options);
  if (!report.ok()) return fail(report.message());
  std::cout << memoryTable(*report);
  return kExitOk;
}

}  // namespace

Verb addInspectVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect", "Show a model's producer, opsets, signature, ops and parameter sizes");
  auto args = std::make_shared<ModelArgs>();
  auto codegen = std::make_shared<CodegenArgs>();
  auto json = std::make_shared<bool>(false);
  auto memory = std::make_shared<bool>(false);
  args->addTo(cmd);
  cmd->add_flag("--json", *json, "Print one JSON document instead of text");
  cmd->add_flag("--memory", *memory,
                "Print the arena plan compile would make (-O and --target as for compile)");
  cmd->add_option("-O", codegen->optLevel, "Optimization level for --memory (default 3)")
      ->check(CLI::Range(0, 3));
  return {cmd, [args, codegen, json, memory] {
            return *memory ? runInspectMemory(*args, *codegen) : runInspect(*args, *json);
          }};
}

}  // namespace kiln::cli
