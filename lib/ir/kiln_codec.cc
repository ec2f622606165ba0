// Model <-> JSON for the .kiln sections; the layout is documented in docs/ir.md.
#include "kiln_codec.h"

#include <fmt/format.h>

#include <cstring>

#include "text_syntax.h"
#include "value_refs.h"

namespace kiln::kilnfmt {
namespace {

using textir::quoteForMessage;

uint32_t floatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float bitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

json encodePairs(const std::vector<std::pair<std::string, std::string>>& kv) {
  json out = json::array();
  for (const auto& [k, v] : kv) out.push_back(json::array({k, v}));
  return out;
}

void decodePairs(const json& j, std::vector<std::pair<std::string, std::string>>& out) {
  for (const json& kv : j)
    out.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
}

json encodeAnnotations(const Annotations& a) {
  json j = json::object();
  if (a.fusionGroup) j["fusion_group"] = *a.fusionGroup;
  if (!a.layout.empty()) j["layout"] = a.layout;
  if (!a.device.empty()) j["device"] = a.device;
  if (!a.sources.empty()) j["sources"] = a.sources;
  if (a.quant) {
    json scales = json::array();
    for (float s : a.quant->scales) scales.push_back(floatBits(s));
    j["quant"] = {{"scales", scales},
                  {"zero_points", a.quant->zeroPoints},
                  {"axis", a.quant->axis},
                  {"storage", dtypeName(a.quant->storage)}};
  }
  return j;
}

Expected<DType> decodeDType(const json& j) {
  auto d = parseDType(j.get<std::string>());
  if (!d) return makeError("unknown dtype {}", quoteForMessage(j.get<std::string>()));
  return *d;
}

Status decodeAnnotations(const json& j, Annotations& a) {
  if (j.contains("fusion_group")) a.fusionGroup = j.at("fusion_group").get<int64_t>();
  a.layout = j.value("layout", std::string());
  a.device = j.value("device", std::string());
  if (j.contains("sources")) a.sources = j.at("sources").get<std::vector<std::string>>();
  if (j.contains("quant")) {
    const json& q = j.at("quant");
    QuantParams p;
    for (const json& s : q.at("scales")) p.scales.push_back(bitsFloat(s.get<uint32_t>()));
    p.zeroPoints = q.at("zero_points").get<std::vector<int64_t>>();
    p.axis = q.at("axis").get<int64_t>();
    KILN_ASSIGN_OR_RETURN(p.storage, decodeDType(q.at("storage")));
    a.quant = std::move(p);
  }
  return Status();
}

Expected<TensorType> decodeType(const json& j) {
  TensorType t;
  KILN_ASSIGN_OR_RETURN(t.dtype, decodeDType(j.at("dtype")));
  const json& shape = j.at("shape");
  if (shape.is_null()) return t;
  std::vector<Dim> dims;
  for (const json& d : shape) {
    if (d.is_null())
      dims.push_back(Dim::unknown());
    else if (d.is_string())
      dims.push_back(Dim::named(d.get<std::string>()));
    else if (d.is_number_unsigned())
      dims.push_back(Dim::known(d.get<int64_t>()));
    else
      return makeError("a dimension is not a size, a symbol or null");
  }
  t.shape = Shape(std::move(dims));
  return t;
}

json encodeValue(const Value& v) {
  json j = {{"name", v.name()}};
  if (v.type() != TensorType{}) j["type"] = encodeType(v.type());
  if (!v.annotations().empty()) j["ann"] = encodeAnnotations(v.annotations());
  if (!v.docString().empty()) j["doc"] = v.docString();
  return j;
}

// Type, annotations and doc string of a value (the name is handled by the caller).
Status decodeValueExtras(const json& j, Value& v) {
  if (j.contains("type")) {
    KILN_ASSIGN_OR_RETURN(TensorType t, decodeType(j.at("type")));
    v.setType(std::move(t));
  }
  if (j.contains("ann")) KILN_RETURN_IF_ERROR(decodeAnnotations(j.at("ann"), v.annotations()));
  v.setDocString(j.value("doc", std::string()));
  return Status();
}

class GraphEncoder {
 public:
  explicit GraphEncoder(const TensorSink& sink) : sink_(sink) {}

  json graph(const Graph& g) {
    json j = {{"name", g.name()}};
    if (!g.docString().empty()) j["doc"] = g.docString();
    json inputs = json::array();
    for (const Value* v : g.inputs()) inputs.push_back(encodeValue(*v));
    json inits = json::array();
    for (const Value* v : g.initializers()) {
      json e = encodeValue(*v);
      e["tensor"] = tensor(*v->initializer(), v->name());
      inits.push_back(std::move(e));
    }
    json nodes = json::array();
    for (const auto& n : g.nodes()) nodes.push_back(node(*n));
    json outputs = json::array();
    for (const Value* v : g.outputs()) outputs.push_back(v ? json(v->name()) : json());
    j["inputs"] = std::move(inputs);
    j["inits"] = std::move(inits);
    j["nodes"] = std::move(nodes);
    j["outputs"] = std::move(outputs);
    return j;
  }

 private:
  json tensor(const Tensor& t, const std::string& nameHint = {}) {
    if (!t.valid()) return {{"dtype", "undefined"}};
    json j = json::object();
    if (t.dtype() == DType::String)
      j["strings"] = t.strings();
    else
      j = sink_(t, nameHint);
    j["dtype"] = dtypeName(t.dtype());
    j["dims"] = t.dims();
    return j;
  }

  json node(const Node& n) {
    json j = {{"op", n.opType()}};
    if (!n.domain().empty()) j["domain"] = n.domain();
    if (!n.name().empty()) j["name"] = n.name();
    json in = json::array();
    for (const Value* v : n.inputs()) in.push_back(v ? json(v->name()) : json());
    json out = json::array();
    for (const Value* v : n.outputs()) out.push_back(encodeValue(*v));
    j["in"] = std::move(in);
    j["out"] = std::move(out);
    if (!n.attributes().empty()) {
      json attrs = json::object();
      for (const auto& [k, a] : n.attributes()) attrs[k] = attribute(a);
      j["attrs"] = std::move(attrs);
    }
    if (!n.annotations().empty()) j["ann"] = encodeAnnotations(n.annotations());
    if (!n.docString().empty()) j["doc"] = n.docString();
    return j;
  }

  json attribute(const Attribute& a) {
    json v;
    auto sub = [&](const Attribute::GraphPtr& g) { return g ? graph(*g) : json(); };
    switch (a.kind()) {
      case AttrKind::Int:
        v = a.i();
        break;
      case AttrKind::Float:
        v = floatBits(a.f());
        break;
      case AttrKind::String:
        v = a.s();
        break;
      case AttrKind::Tensor:
        v = tensor(a.t());
        break;
      case AttrKind::Graph:
        v = sub(a.g());
        break;
      case AttrKind::Ints:
        v = a.ints();
        break;
      case AttrKind::Floats:
        v = json::array();
        for (float f : a.floats()) v.push_back(floatBits(f));
        break;
      case AttrKind::Strings:
        v = a.strings();
        break;
      case AttrKind::Tensors:
        v = json::array();
        for (const Tensor& t : a.tensors()) v.push_back(tensor(t));
        break;
      case AttrKind::Graphs:
        v = json::array();
        for (const auto& g : a.graphs()) v.push_back(sub(g));
        break;
    }
    return {{"kind", attrKindName(a.kind())}, {"v", std::move(v)}};
  }

  const TensorSink& sink_;
};

class GraphDecoder {
 public:
  GraphDecoder(const TensorSource& source, int64_t maxNodes)
      : source_(source), maxNodes_(maxNodes) {}

  Expected<std::shared_ptr<Graph>> graph(const json& j, Graph* parent, int depth) {
    if (depth > textir::kMaxGraphDepth)
      return makeError("subgraphs are nested more than {} deep", textir::kMaxGraphDepth);
    auto g = std::make_shared<Graph>(j.at("name").get<std::string>(), parent);
    g->setDocString(j.value("doc", std::string()));
    for (const json& vj : j.at("inputs")) {
      KILN_ASSIGN_OR_RETURN(Value * v, g->addInput(vj.at("name").get<std::string>(), {}));
      KILN_RETURN_IF_ERROR(decodeValueExtras(vj, *v));
    }
    for (const json& vj : j.at("inits")) {
      KILN_ASSIGN_OR_RETURN(Tensor t, tensor(vj.at("tensor")));
      KILN_ASSIGN_OR_RETURN(Value * v, g->addInitializer(vj.at("name").get<std::string>(), t));
      KILN_RETURN_IF_ERROR(decodeValueExtras(vj, *v));
    }
    for (const json& nj : j.at("nodes")) KILN_RETURN_IF_ERROR(node(nj, *g, depth));
    std::vector<std::pair<std::string, std::string>> outs;
    for (const json& o : j.at("outputs")) {
      if (o.is_null()) return makeError("graph {} has a null output", quoteForMessage(g->name()));
      outs.emplace_back(o.get<std::string>(), fmt::format("graph {}", quoteForMessage(g->name())));
    }
    refs_.setOutputs(g.get(), std::move(outs));
    return g;
  }

  Status resolve() { return refs_.resolve(); }

 private:
  Expected<Tensor> tensor(const json& j) {
    KILN_ASSIGN_OR_RETURN(DType d, decodeDType(j.at("dtype")));
    if (d == DType::Undefined) return Tensor();
    auto dims = j.at("dims").get<std::vector<int64_t>>();
    if (d == DType::String)
      return Tensor::fromStrings(std::move(dims), j.at("strings").get<std::vector<std::string>>());
    return source_(j, d, std::move(dims));
  }

  Status node(const json& j, Graph& g, int depth) {
    if (++nodes_ > maxNodes_)
      return makeError("model has more than {} nodes (subgraphs included) — raise --max-nodes if "
                       "the model is trusted (docs/limits.md)",
                       maxNodes_);
    std::string name = j.value("name", std::string());
    std::vector<Value*> inputs;
    std::vector<std::pair<size_t, std::string>> deferred;
    for (const json& in : j.at("in")) {
      Value* v = nullptr;
      if (!in.is_null()) {
        std::string ref = in.get<std::string>();
        v = g.findValue(ref);
        if (!v) deferred.emplace_back(inputs.size(), std::move(ref));
      }
      inputs.push_back(v);
    }
    std::vector<std::string> outNames;
    for (const json& o : j.at("out")) {
      outNames.push_back(o.at("name").get<std::string>());
      if (outNames.back().empty())
        return makeError("node {} has an unnamed output", quoteForMessage(name));
    }
    KILN_ASSIGN_OR_RETURN(
        Node * n, g.addNode(j.at("op").get<std::string>(), j.value("domain", std::string()), name,
                            std::move(inputs), outNames));
    std::string where =
        fmt::format("graph {} node {}", quoteForMessage(g.name()), quoteForMessage(name));
    for (auto& [index, ref] : deferred) refs_.deferInput(n, index, std::move(ref), where);
    size_t i = 0;
    for (const json& o : j.at("out")) KILN_RETURN_IF_ERROR(decodeValueExtras(o, *n->output(i++)));
    if (j.contains("attrs"))
      for (const auto& [k, aj] : j.at("attrs").items()) {
        KILN_ASSIGN_OR_RETURN(Attribute a, attribute(aj, g, depth));
        n->setAttr(k, std::move(a));
      }
    if (j.contains("ann")) KILN_RETURN_IF_ERROR(decodeAnnotations(j.at("ann"), n->annotations()));
    n->setDocString(j.value("doc", std::string()));
    return Status();
  }

  Expected<Attribute> attribute(const json& j, Graph& owner, int depth) {
    std::string kind = j.at("kind").get<std::string>();
    const json& v = j.at("v");
    auto sub = [&](const json& gj) -> Expected<Attribute::GraphPtr> {
      if (gj.is_null()) return makeError("a graph attribute is null");
      return graph(gj, &owner, depth + 1);
    };
    if (kind == "int") return Attribute(v.get<int64_t>());
    if (kind == "float") return Attribute(bitsFloat(v.get<uint32_t>()));
    if (kind == "string") return Attribute(v.get<std::string>());
    if (kind == "ints") return Attribute(v.get<std::vector<int64_t>>());
    if (kind == "strings") return Attribute(v.get<std::vector<std::string>>());
    if (kind == "floats") {
      std::vector<float> fs;
      for (const json& b : v) fs.push_back(bitsFloat(b.get<uint32_t>()));
      return Attribute(std::move(fs));
    }
    if (kind == "tensor") {
      KILN_ASSIGN_OR_RETURN(Tensor t, tensor(v));
      return Attribute(std::move(t));
    }
    if (kind == "tensors") {
      std::vector<Tensor> ts;
      for (const json& tj : v) {
        KILN_ASSIGN_OR_RETURN(Tensor t, tensor(tj));
        ts.push_back(std::move(t));
      }
      return Attribute(std::move(ts));
    }
    if (kind == "graph") {
      KILN_ASSIGN_OR_RETURN(auto g, sub(v));
      return Attribute(std::move(g));
    }
    if (kind == "graphs") {
      std::vector<Attribute::GraphPtr> gs;
      for (const json& gj : v) {
        KILN_ASSIGN_OR_RETURN(auto g, sub(gj));
        gs.push_back(std::move(g));
      }
      return Attribute(std::move(gs));
    }
    return makeError("unknown attribute kind {}", quoteForMessage(kind));
  }

  const TensorSource& source_;
  int64_t maxNodes_, nodes_ = 0;
  textir::ValueRefs refs_;
};

// Rejects CBOR nested deeper than a limit before nlohmann's recursive reader sees it.
class DepthCheck final : public nlohmann::json_sax<json> {
 public:
  explicit DepthCheck(int maxDepth) : maxDepth_(maxDepth) {}
  bool tooDeep = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool enter() {
    if (++depth_ <= maxDepth_) return true;
    tooDeep = true;
    return false;
  }
  int depth_ = 0, maxDepth_;
};

}  // namespace

json encodeType(const TensorType& t) {
  json shape;
  if (t.shape.rankKnown()) {
    shape = json::array();
    for (const Dim& d : t.shape.dims()) {
      if (d.isStatic())
        shape.push_back(d.value);
      else if (d.isSymbolic())
        shape.push_back(d.symbol);
      else
        shape.push_back(nullptr);
    }
  }
  return {{"dtype", dtypeName(t.dtype)}, {"shape", std::move(shape)}};
}

json encodeMetadata(const ModelMetadata& m) {
  json opsets = json::array();
  for (const OpsetImport& o : m.opsets) opsets.push_back(json::array({o.domain, o.version}));
  return {{"producer_name", m.producerName},
          {"producer_version", m.producerVersion},
          {"domain", m.domain},
          {"doc", m.docString},
          {"ir_version", m.irVersion},
          {"model_version", m.modelVersion},
          {"opsets", std::move(opsets)},
          {"source_sha256", m.sourceSha256},
          {"source_format", m.sourceFormat},
          {"kiln_version", m.kilnVersion},
          {"props", encodePairs(m.props)}};
}

json encodeHints(const ModelMetadata& m) {
  return encodePairs(m.hints);
}

json encodeSignature(const Graph& g) {
  auto list = [](const std::vector<Value*>& values) {
    json out = json::array();
    for (const Value* v : values)
      if (v) out.push_back({{"name", v->name()}, {"type", encodeType(v->type())}});
    return out;
  };
  return {{"inputs", list(g.inputs())}, {"outputs", list(g.outputs())}};
}

json encodeGraph(const Graph& g, const TensorSink& sink) {
  return GraphEncoder(sink).graph(g);
}

Status decodeMetadata(const json& j, ModelMetadata& m) {
  m.producerName = j.at("producer_name").get<std::string>();
  m.producerVersion = j.at("producer_version").get<std::string>();
  m.domain = j.at("domain").get<std::string>();
  m.docString = j.at("doc").get<std::string>();
  m.irVersion = j.at("ir_version").get<int64_t>();
  m.modelVersion = j.at("model_version").get<int64_t>();
  for (const json& o : j.at("opsets"))
    m.opsets.push_back({o.at(0).get<std::string>(), o.at(1).get<int64_t>()});
  m.sourceSha256 = j.at("source_sha256").get<std::string>();
  m.sourceFormat = j.at("source_format").get<std::string>();
  m.kilnVersion = j.at("kiln_version").get<std::string>();
  decodePairs(j.at("props"), m.props);
  return Status();
}

Status decodeHints(const json& j, ModelMetadata& m) {
  decodePairs(j, m.hints);
  return Status();
}

Expected<std::shared_ptr<Graph>> decodeGraph(const json& j, Graph* parent,
                                             const TensorSource& source, int64_t maxNodes) {
  GraphDecoder d(source, maxNodes);
  KILN_ASSIGN_OR_RETURN(auto g, d.graph(j, parent, 0));
  KILN_RETURN_IF_ERROR(d.resolve());
  return g;
}

Status checkSignature(const json& j, const Graph& g) {
  auto same = [](const json& list, const std::vector<Value*>& values) -> bool {
    size_t n = 0;
    for (const Value* v : values) {
      if (!v) continue;
      if (n >= list.size() || list[n].at("name").get<std::string>() != v->name()) return false;
      auto t = decodeType(list[n].at("type"));
      if (!t || *t != v->type()) return false;
      ++n;
    }
    return n == list.size();
  };
  if (!same(j.at("inputs"), g.inputs()) || !same(j.at("outputs"), g.outputs()))
    return makeError("the signature section does not match the graph's inputs and outputs");
  return Status();
}

Expected<json> parseCbor(const uint8_t* data, size_t size, int maxDepth) {
  try {
    DepthCheck check(maxDepth);
    bool ok = json::sax_parse(data, data + size, &check, json::input_format_t::cbor);
    if (check.tooDeep) return makeError("CBOR nested more than {} levels deep", maxDepth);
    if (!ok) return makeError("malformed CBOR");
    json j = json::from_cbor(data, data + size, true, false);
    if (j.is_discarded()) return makeError("malformed CBOR");
    return j;
  } catch (const std::exception& e) {
    return makeError("malformed CBOR ({})", e.what());
  }
}

}  // namespace kiln::kilnfmt
