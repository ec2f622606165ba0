// Renders a Model as kiln's textual IR (syntax in docs/ir.md).
#include <fmt/format.h>

#include <iterator>

#include "kiln/ir/text.h"
#include "kiln/support/sha256.h"
#include "text_syntax.h"

namespace kiln {
namespace {

using textir::appendFloat;
using textir::appendIdent;
using textir::appendName;
using textir::appendQuoted;

uint64_t loadLE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

class TextPrinter {
 public:
  explicit TextPrinter(const PrintOptions& options) : opts_(options) {}
  std::string take() { return std::move(out_); }
  void model(const Model& m);
  void graph(const Graph& g, int depth);

 private:
  template <typename... Args>
  void put(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(out_), f, std::forward<Args>(args)...);
  }
  void indent(int depth) { out_.append(size_t(2 * depth), ' '); }
  // Words that start statements or follow a node; an op or domain spelled so is quoted.
  void opWord(std::string_view s) { appendIdent(out_, s, {"const", "return", "doc"}); }
  void type(const TensorType& t);
  void valueSuffix(const Value& v);
  void node(const Node& n, int depth);
  void attributes(const std::map<std::string, Attribute>& attrs, int depth);
  void attribute(const Attribute& a, int depth);
  void tensor(const Tensor& t);
  void tensorData(const Tensor& t);
  bool listIsExact(const Tensor& t) const;
  void element(const Tensor& t, int64_t i);
  void annotations(const Annotations& a);
  void doc(const std::string& s);
  void elided(uint64_t bytes, const std::string& sha) {
    put("<elided {} bytes sha256:{}>", bytes, sha);
  }

  const PrintOptions& opts_;
  std::string out_;
};

void TextPrinter::model(const Model& model) {
  const ModelMetadata& m = model.meta;
  out_ += "model {\n";
  auto num = [&](const char* key, int64_t v) {
    if (v != 0) put("  {} = {}\n", key, v);
  };
  auto str = [&](const char* key, const std::string& v) {
    if (v.empty()) return;
    put("  {} = ", key);
    appendQuoted(out_, v);
    out_ += '\n';
  };
  num("ir_version", m.irVersion);
  num("model_version", m.modelVersion);
  str("producer_name", m.producerName);
  str("producer_version", m.producerVersion);
  str("domain", m.domain);
  str("doc", m.docString);
  str("source_format", m.sourceFormat);
  str("source_sha256", m.sourceSha256);
  str("kiln_version", m.kilnVersion);
  for (const OpsetImport& o : m.opsets) {
    out_ += "  opset ";
    appendQuoted(out_, o.domain);
    put(" = {}\n", o.version);
  }
  auto pairs = [&](const char* key, const std::vector<std::pair<std::string, std::string>>& kv) {
    for (const auto& [k, v] : kv) {
      put("  {} ", key);
      appendQuoted(out_, k);
      out_ += " = ";
      appendQuoted(out_, v);
      out_ += '\n';
    }
  };
  pairs("prop", m.props);
  pairs("hint", m.hints);
  out_ += "}\n";
  if (model.graph) {
    graph(*model.graph, 0);
    out_ += '\n';
  }
}

void TextPrinter::graph(const Graph& g, int depth) {
  out_ += "graph ";
  appendName(out_, '@', g.name());
  out_ += '(';
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    if (i) out_ += ", ";
    appendName(out_, '%', g.inputs()[i]->name());
    valueSuffix(*g.inputs()[i]);
  }
  out_ += ')';
  doc(g.docString());
  out_ += " {\n";
  for (const Value* v : g.initializers()) {
    indent(depth + 1);
    out_ += "const ";
    appendName(out_, '%', v->name());
    out_ += " = ";
    const Tensor& t = *v->initializer();
    tensor(t);
    // An initializer's type normally is its tensor's; print it only when a pass changed it.
    TensorType natural{t.dtype(), Shape::ofStatic(t.dims())};
    if (v->type() != natural) {
      out_ += " : ";
      type(v->type());
    }
    annotations(v->annotations());
    doc(v->docString());
    out_ += '\n';
  }
  for (const auto& n : g.nodes()) node(*n, depth + 1);
  indent(depth + 1);
  out_ += "return";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out_ += i ? ", " : " ";
    const Value* v = g.outputs()[i];
    if (v)
      appendName(out_, '%', v->name());
    else
      out_ += "none";  // not valid IR; the parser reports it
  }
  out_ += '\n';
  indent(depth);
  out_ += '}';
}

void TextPrinter::type(const TensorType& t) {
  out_ += dtypeName(t.dtype);
  if (!t.shape.rankKnown()) {
    out_ += "[*]";
    return;
  }
  out_ += '[';
  const auto& dims = t.shape.dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out_ += ',';
    if (dims[i].isStatic())
      put("{}", dims[i].value);
    else if (dims[i].isSymbolic())
      appendIdent(out_, dims[i].symbol);
    else
      out_ += '?';
  }
  out_ += ']';
}

void TextPrinter::valueSuffix(const Value& v) {
  if (v.type() != TensorType{}) {
    out_ += ": ";
    type(v.type());
  }
  annotations(v.annotations());
  doc(v.docString());
}

void TextPrinter::node(const Node& n, int depth) {
  indent(depth);
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    if (i) out_ += ", ";
    appendName(out_, '%', n.output(i)->name());
    valueSuffix(*n.output(i));
  }
  if (n.numOutputs()) out_ += " = ";
  if (!n.domain().empty()) {
    opWord(n.domain());
    out_ += "::";
  }
  opWord(n.opType());
  out_ += '(';
  for (size_t i = 0; i < n.numInputs(); ++i) {
    if (i) out_ += ", ";
    if (const Value* v = n.input(i))
      appendName(out_, '%', v->name());
    else
      out_ += "none";
  }
  out_ += ')';
  if (!n.name().empty()) {
    out_ += ' ';
    appendName(out_, '@', n.name());
  }
  attributes(n.attributes(), depth);
  annotations(n.annotations());
  doc(n.docString());
  out_ += '\n';
}

void TextPrinter::attributes(const std::map<std::string, Attribute>& attrs, int depth) {
  if (attrs.empty()) return;
  bool multiline = false;
  for (const auto& [k, a] : attrs)
    multiline |= a.kind() == AttrKind::Graph || a.kind() == AttrKind::Graphs;
  out_ += multiline ? " {\n" : " {";
  size_t i = 0;
  for (const auto& [key, a] : attrs) {
    if (multiline) indent(depth + 1);
    appendIdent(out_, key);
    out_ += " = ";
    attribute(a, depth + 1);
    if (++i < attrs.size()) out_ += multiline ? ",\n" : ", ";
  }
  if (multiline) {
    out_ += '\n';
    indent(depth);
  }
  out_ += '}';
}

void TextPrinter::attribute(const Attribute& a, int depth) {
  auto list = [&](const auto& items, std::string_view kind, auto&& each) {
    if (items.empty()) {
      put("[] : {}", kind);
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += ", ";
      each(items[i]);
    }
    out_ += ']';
  };
  auto printFloat = [&](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    appendFloat(out_, DType::F32, bits);
  };
  auto printGraph = [&](const Attribute::GraphPtr& g) {
    if (g)
      graph(*g, depth);
    else
      out_ += "graph @\"\"() {\n}";  // a null subgraph; not valid IR
  };
  switch (a.kind()) {
    case AttrKind::Int:
      put("{}", a.i());
      break;
    case AttrKind::Float:
      printFloat(a.f());
      break;
    case AttrKind::String:
      appendQuoted(out_, a.s());
      break;
    case AttrKind::Tensor:
      tensor(a.t());
      break;
    case AttrKind::Graph:
      printGraph(a.g());
      break;
    case AttrKind::Ints:
      list(a.ints(), "ints", [&](int64_t v) { put("{}", v); });
      break;
    case AttrKind::Floats:
      list(a.floats(), "floats", printFloat);
      break;
    case AttrKind::Strings:
      list(a.strings(), "strings", [&](const std::string& s) { appendQuoted(out_, s); });
      break;
    case AttrKind::Tensors:
      list(a.tensors(), "tensors", [&](const Tensor& t) { tensor(t); });
      break;
    case AttrKind::Graphs:
      list(a.graphs(), "graphs", printGraph);
      break;
  }
}

void TextPrinter::tensor(const Tensor& t) {
  if (!t.valid()) {
    out_ += "undefined[] []";
    return;
  }
  out_ += dtypeName(t.dtype());
  out_ += '[';
  for (size_t i = 0; i < t.dims().size(); ++i) {
    if (i) out_ += ',';
    put("{}", t.dims()[i]);
  }
  out_ += "] ";
  tensorData(t);
}

void TextPrinter::tensorData(const Tensor& t) {
  if (t.dtype() == DType::String) {
    uint64_t total = 0;
    for (const auto& s : t.strings()) total += s.size();
    if (total > opts_.elideDataAbove) {
      // Hash each string with its length so ["ab"] and ["a","b"] differ.
      Sha256 h;
      for (const auto& s : t.strings()) {
        uint8_t len[8];
        for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(s.size()) >> (8 * i));
        h.update(len, 8);
        h.update(s.data(), s.size());
      }
      elided(total, h.hexDigest());
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < t.strings().size(); ++i) {
      if (i) out_ += ", ";
      appendQuoted(out_, t.strings()[i]);
    }
    out_ += ']';
    return;
  }
  uint64_t size = t.byteSize();
  if (size > opts_.elideDataAbove) {
    Sha256 h;
    h.update(t.bytes(), size);
    elided(size, h.hexDigest());
    return;
  }
  if (uint64_t(t.numElements()) <= opts_.maxListElements && listIsExact(t)) {
    out_ += '[';
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if (i) out_ += ", ";
      element(t, i);
    }
    out_ += ']';
    return;
  }
  out_ += "hex\"";
  textir::appendHex(out_, t.bytes(), size);
  out_ += '"';
}

// A value list reproduces the bytes unless bools hold bytes other than 0/1 or a packed
// 4-bit tensor has a non-zero padding nibble; those print as hex.
bool TextPrinter::listIsExact(const Tensor& t) const {
  const uint8_t* p = t.bytes();
  if (t.dtype() == DType::Bool) {
    for (size_t i = 0; i < t.byteSize(); ++i)
      if (p[i] > 1) return false;
  }
  if (dtypeBits(t.dtype()) == 4 && t.numElements() % 2) return (p[t.byteSize() - 1] >> 4) == 0;
  return true;
}

void TextPrinter::element(const Tensor& t, int64_t i) {
  const uint8_t* p = t.bytes();
  DType d = t.dtype();
  int bits = dtypeBits(d);
  if (bits == 4) {
    int v = (p[i / 2] >> ((i % 2) * 4)) & 0xf;
    put("{}", d == DType::I4 && v >= 8 ? v - 16 : v);
    return;
  }
  int bytes = bits / 8;
  uint64_t raw = loadLE(p + size_t(i) * size_t(bytes), bytes);
  if (isFloat(d)) {
    appendFloat(out_, d, raw);
  } else if (d == DType::Bool) {
    out_ += raw ? "true" : "false";
  } else if (isSignedInteger(d)) {
    int shift = 64 - bits;
    put("{}", int64_t(raw << shift) >> shift);
  } else {
    put("{}", raw);
  }
}

void TextPrinter::annotations(const Annotations& a) {
  if (a.empty()) return;
  out_ += " #{";
  bool first = true;
  auto sep = [&]() {
    if (!first) out_ += ", ";
    first = false;
  };
  if (a.fusionGroup) {
    sep();
    put("fusion_group = {}", *a.fusionGroup);
  }
  if (!a.layout.empty()) {
    sep();
    out_ += "layout = ";
    appendQuoted(out_, a.layout);
  }
  if (a.quant) {
    sep();
    const QuantParams& q = *a.quant;
    out_ += "quant = {scales = [";
    for (size_t i = 0; i < q.scales.size(); ++i) {
      if (i) out_ += ", ";
      uint32_t bits;
      std::memcpy(&bits, &q.scales[i], 4);
      appendFloat(out_, DType::F32, bits);
    }
    out_ += "], zero_points = [";
    for (size_t i = 0; i < q.zeroPoints.size(); ++i) {
      if (i) out_ += ", ";
      put("{}", q.zeroPoints[i]);
    }
    put("], axis = {}, storage = {}}}", q.axis, dtypeName(q.storage));
  }
  if (!a.device.empty()) {
    sep();
    out_ += "device = ";
    appendQuoted(out_, a.device);
  }
  if (!a.sources.empty()) {
    sep();
    out_ += "sources = [";
    for (size_t i = 0; i < a.sources.size(); ++i) {
      if (i) out_ += ", ";
      appendQuoted(out_, a.sources[i]);
    }
    out_ += "]";
  }
  out_ += '}';
}

void TextPrinter::doc(const std::string& s) {
  if (s.empty()) return;
  out_ += " doc ";
  appendQuoted(out_, s);
}

}  // namespace

std::string printModel(const Model& model, const PrintOptions& options) {
  TextPrinter p(options);
  p.model(model);
  return p.take();
}

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  TextPrinter p(options);
  p.graph(graph, 0);
  std::string out = p.take();
  out += '\n';
  return out;
}

}  // namespace kiln
