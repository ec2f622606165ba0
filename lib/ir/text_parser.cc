// Parses kiln's textual IR back into a Model (syntax in docs/ir.md).
#include <fmt/format.h>

#include <new>
#include <unordered_set>

#include "kiln/ir/text.h"
#include "kiln/support/checked_math.h"
#include "text_parser.h"
#include "text_syntax.h"

namespace kiln::textir {

Expected<std::string> TextParser::parseString(std::string_view what) {
  if (!is(TokKind::String)) return expected(what);
  std::string s = std::move(tok_.text);
  advance();
  return s;
}

Expected<int64_t> TextParser::parseInt(std::string_view what) {
  if (!is(TokKind::Number)) return expected(what);
  auto v = parseInt64(tok_.text);
  if (!v) return expected(what);
  advance();
  return *v;
}

Expected<Model> TextParser::run() {
  Model m;
  if (isWord("model")) KILN_RETURN_IF_ERROR(parseModelBlock(m.meta));
  if (!isWord("graph")) return expected("'graph' (or a 'model { ... }' block before it)");
  KILN_ASSIGN_OR_RETURN(m.graph, parseGraph(nullptr, 0));
  if (!is(TokKind::End)) return expected("end of input after the main graph");
  KILN_RETURN_IF_ERROR(refs_.resolve());
  return m;
}

Status TextParser::parseModelBlock(ModelMetadata& m) {
  advance();  // 'model'
  KILN_RETURN_IF_ERROR(expect(TokKind::LBrace, "'{' after 'model'"));
  std::unordered_set<std::string> seen;
  const std::pair<const char*, int64_t ModelMetadata::*> intFields[] = {
      {"ir_version", &ModelMetadata::irVersion}, {"model_version", &ModelMetadata::modelVersion}};
  const std::pair<const char*, std::string ModelMetadata::*> stringFields[] = {
      {"producer_name", &ModelMetadata::producerName},
      {"producer_version", &ModelMetadata::producerVersion},
      {"domain", &ModelMetadata::domain},
      {"doc", &ModelMetadata::docString},
      {"source_format", &ModelMetadata::sourceFormat},
      {"source_sha256", &ModelMetadata::sourceSha256},
      {"kiln_version", &ModelMetadata::kilnVersion}};
  while (!accept(TokKind::RBrace)) {
    if (!is(TokKind::Ident))
      return expected("a model field (producer_name = \"...\", opset ...) or '}'");
    Token key = tok_;
    advance();
    if (key.text == "opset" || key.text == "prop" || key.text == "hint") {
      KILN_ASSIGN_OR_RETURN(std::string k, parseString("a quoted name"));
      KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'='"));
      if (key.text == "opset") {
        KILN_ASSIGN_OR_RETURN(int64_t v, parseInt("an opset version number"));
        m.opsets.push_back({std::move(k), v});
      } else {
        KILN_ASSIGN_OR_RETURN(std::string v, parseString("a quoted value"));
        (key.text == "prop" ? m.props : m.hints).emplace_back(std::move(k), std::move(v));
      }
      continue;
    }
    if (!seen.insert(key.text).second)
      return errorAt(key, fmt::format("model field '{}' is given twice", key.text));
    bool known = false;
    for (const auto& [name, field] : intFields)
      if (key.text == name) {
        KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'='"));
        KILN_ASSIGN_OR_RETURN(m.*field, parseInt("an integer"));
        known = true;
      }
    for (const auto& [name, field] : stringFields)
      if (key.text == name) {
        KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'='"));
        KILN_ASSIGN_OR_RETURN(m.*field, parseString("a quoted string"));
        known = true;
      }
    if (!known)
      return errorAt(
          key, fmt::format("unknown model field '{}' (see docs/ir.md for the fields)", key.text));
  }
  return Status();
}

Expected<std::shared_ptr<Graph>> TextParser::parseGraph(Graph* parent, int depth) {
  if (depth > kMaxGraphDepth)
    return errorAt(tok_, fmt::format("subgraphs are nested more than {} deep", kMaxGraphDepth));
  KILN_RETURN_IF_ERROR(expectWord("graph"));
  if (!is(TokKind::Symbol)) return expected("a graph name such as @main");
  auto g = std::make_shared<Graph>(std::move(tok_.text), parent);
  advance();
  KILN_RETURN_IF_ERROR(expect(TokKind::LParen, "'(' before the graph inputs"));
  if (!is(TokKind::RParen)) {
    do {
      if (!is(TokKind::Value)) return expected("a graph input such as %x: f32[1,3]");
      Token at = tok_;
      advance();
      TensorType type;
      Annotations ann;
      std::string doc;
      KILN_RETURN_IF_ERROR(parseValueSuffix(&type, ann, doc));
      auto v = g->addInput(at.text, std::move(type));
      if (!v) return errorAt(at, v.message());
      (*v)->annotations() = std::move(ann);
      (*v)->setDocString(std::move(doc));
    } while (accept(TokKind::Comma));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::RParen, "',' or ')' after a graph input"));
  if (isWord("doc")) {
    advance();
    KILN_ASSIGN_OR_RETURN(std::string doc, parseString("a quoted doc string"));
    g->setDocString(std::move(doc));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::LBrace, "'{' to open the graph body"));
  KILN_RETURN_IF_ERROR(parseBody(*g, depth));
  return g;
}

Status TextParser::parseBody(Graph& g, int depth) {
  while (!accept(TokKind::RBrace)) {
    if (isWord("const")) {
      KILN_RETURN_IF_ERROR(parseConst(g));
    } else if (isWord("return")) {
      KILN_RETURN_IF_ERROR(parseReturn(g));
      return expect(TokKind::RBrace, "'}' after the return statement");
    } else if (is(TokKind::Value) || is(TokKind::Ident) || is(TokKind::String)) {
      KILN_RETURN_IF_ERROR(parseNode(g, depth));
    } else {
      return expected("a statement (const, a node, return) or '}'");
    }
  }
  return Status();
}

Status TextParser::parseConst(Graph& g) {
  advance();  // 'const'
  if (!is(TokKind::Value)) return expected("a value name such as %w after 'const'");
  Token at = tok_;
  advance();
  KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'=' after the constant's name"));
  KILN_ASSIGN_OR_RETURN(Tensor t, parseTensor());
  std::optional<TensorType> type;
  if (accept(TokKind::Colon)) {
    KILN_ASSIGN_OR_RETURN(type, parseType());
  }
  Annotations ann;
  std::string doc;
  KILN_RETURN_IF_ERROR(parseValueSuffix(nullptr, ann, doc));
  auto v = g.addInitializer(at.text, std::move(t));
  if (!v) return errorAt(at, v.message());
  if (type) (*v)->setType(std::move(*type));
  (*v)->annotations() = std::move(ann);
  (*v)->setDocString(std::move(doc));
  return Status();
}

Status TextParser::parseReturn(Graph& g) {
  advance();  // 'return'
  std::vector<std::pair<std::string, std::string>> names;
  if (is(TokKind::Value)) {
    do {
      if (!is(TokKind::Value)) return expected("a value such as %y in the return list");
      names.emplace_back(std::move(tok_.text), where(tok_));
      advance();
    } while (accept(TokKind::Comma));
  }
  refs_.setOutputs(&g, std::move(names));
  return Status();
}

// After a value's name: [':' type] ['#{' annotations '}'] ['doc' "..."]. With type == null
// (constants) the type is not accepted here.
Status TextParser::parseValueSuffix(TensorType* type, Annotations& ann, std::string& doc) {
  if (type && accept(TokKind::Colon)) {
    KILN_ASSIGN_OR_RETURN(*type, parseType());
  }
  if (is(TokKind::Hash)) KILN_RETURN_IF_ERROR(parseAnnotations(ann));
  if (isWord("doc")) {
    advance();
    KILN_ASSIGN_OR_RETURN(doc, parseString("a quoted doc string"));
  }
  return Status();
}

Status TextParser::parseNode(Graph& g, int depth) {
  if (++nodes_ > maxNodes_)
    return errorAt(tok_, fmt::format("model has more than {} nodes (subgraphs included) — raise "
                                     "--max-nodes if the model is trusted (docs/limits.md)",
                                     maxNodes_));
  struct Result {
    Token at;
    TensorType type;
    Annotations ann;
    std::string doc;
  };
  std::vector<Result> results;
  Token first = tok_;
  if (is(TokKind::Value)) {
    std::unordered_set<std::string_view> seen;
    do {
      if (!is(TokKind::Value)) return expected("a result value such as %y");
      Result r{tok_, {}, {}, {}};
      if (r.at.text.empty()) return errorAt(r.at, "a value name must not be empty");
      advance();
      KILN_RETURN_IF_ERROR(parseValueSuffix(&r.type, r.ann, r.doc));
      results.push_back(std::move(r));
    } while (accept(TokKind::Comma));
    for (const Result& r : results)
      if (!seen.insert(r.at.text).second)
        return errorAt(r.at, fmt::format("value %{} is defined twice by the same node",
                                         quoteForMessage(r.at.text)));
    KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "',' or '=' after the node's results"));
  }
  if (!is(TokKind::Ident) && !is(TokKind::String)) return expected("an op type such as Conv");
  std::string domain, op = std::move(tok_.text);
  advance();
  if (accept(TokKind::ColonColon)) {
    if (!is(TokKind::Ident) && !is(TokKind::String)) return expected("an op type after '::'");
    domain = std::move(op);
    op = std::move(tok_.text);
    advance();
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::LParen, "'(' before the node's inputs"));
  std::vector<Value*> inputs;
  std::vector<std::tuple<size_t, std::string, std::string>> deferred;
  if (!is(TokKind::RParen)) {
    do {
      if (isWord("none")) {
        inputs.push_back(nullptr);
      } else if (is(TokKind::Value)) {
        Value* v = g.findValue(tok_.text);
        if (!v) deferred.emplace_back(inputs.size(), std::move(tok_.text), where(tok_));
        inputs.push_back(v);
      } else {
        return expected("an input value such as %x, or none");
      }
      advance();
    } while (accept(TokKind::Comma));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::RParen, "',' or ')' after a node input"));
  std::string name;
  if (is(TokKind::Symbol)) {
    name = std::move(tok_.text);
    advance();
  }
  std::map<std::string, Attribute> attrs;
  if (is(TokKind::LBrace)) KILN_RETURN_IF_ERROR(parseAttributes(g, depth, attrs));
  Annotations ann;
  std::string doc;
  KILN_RETURN_IF_ERROR(parseValueSuffix(nullptr, ann, doc));

  std::vector<std::string> outNames;
  outNames.reserve(results.size());
  for (const Result& r : results) outNames.push_back(r.at.text);
  auto n = g.addNode(op, domain, name, std::move(inputs), outNames);
  if (!n) return errorAt(first, n.message());
  for (auto& [index, ref, loc] : deferred)
    refs_.deferInput(*n, index, std::move(ref), std::move(loc));
  for (size_t i = 0; i < results.size(); ++i) {
    Value* v = (*n)->output(i);
    v->setType(std::move(results[i].type));
    v->annotations() = std::move(results[i].ann);
    v->setDocString(std::move(results[i].doc));
  }
  for (auto& [k, a] : attrs) (*n)->setAttr(k, std::move(a));
  (*n)->annotations() = std::move(ann);
  (*n)->setDocString(std::move(doc));
  return Status();
}

Expected<TensorType> TextParser::parseType() {
  std::optional<DType> dtype;
  if (is(TokKind::Ident)) dtype = parseDType(tok_.text);
  if (!dtype) return expected("a type such as f32[1,3,?,N]");
  advance();
  KILN_RETURN_IF_ERROR(expect(TokKind::LBracket, "'[' after the element type"));
  if (accept(TokKind::Star)) {
    KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "']' after '*' (unknown rank)"));
    return TensorType{*dtype, Shape::unknownRank()};
  }
  std::vector<Dim> dims;
  if (!is(TokKind::RBracket)) {
    do {
      if (is(TokKind::Number)) {
        auto v = parseInt64(tok_.text);
        if (!v || *v < 0) return expected("a dimension: a size >= 0, ?, or a symbol");
        dims.push_back(Dim::known(*v));
      } else if (is(TokKind::Question)) {
        dims.push_back(Dim::unknown());
      } else if (is(TokKind::Ident) || is(TokKind::String)) {
        dims.push_back(Dim::named(std::move(tok_.text)));
      } else {
        return expected("a dimension: a size, ?, or a symbol");
      }
      advance();
    } while (accept(TokKind::Comma));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the shape"));
  return TensorType{*dtype, Shape(std::move(dims))};
}

Status TextParser::parseAnnotations(Annotations& a) {
  advance();  // '#'
  KILN_RETURN_IF_ERROR(expect(TokKind::LBrace, "'{' after '#'"));
  std::unordered_set<std::string> seen;
  if (!is(TokKind::RBrace)) {
    do {
      if (!is(TokKind::Ident)) return expected("fusion_group, layout, quant, device or sources");
      Token key = tok_;
      advance();
      if (!seen.insert(key.text).second)
        return errorAt(key, fmt::format("annotation '{}' is given twice", key.text));
      KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'=' after the annotation name"));
      if (key.text == "fusion_group") {
        KILN_ASSIGN_OR_RETURN(a.fusionGroup, parseInt("an integer fusion group"));
      } else if (key.text == "layout") {
        KILN_ASSIGN_OR_RETURN(a.layout, parseString("a quoted layout such as \"NCHW16c\""));
      } else if (key.text == "device") {
        KILN_ASSIGN_OR_RETURN(a.device, parseString("a quoted device such as \"cpu:0\""));
      } else if (key.text == "quant") {
        KILN_ASSIGN_OR_RETURN(a.quant, parseQuant());
      } else if (key.text == "sources") {
        KILN_RETURN_IF_ERROR(expect(TokKind::LBracket, "'[' to open the source node names"));
        if (!is(TokKind::RBracket)) {
          do {
            KILN_ASSIGN_OR_RETURN(std::string name, parseString("a quoted source node name"));
            a.sources.push_back(std::move(name));
          } while (accept(TokKind::Comma));
        }
        KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the source node names"));
      } else {
        return errorAt(key, fmt::format("unknown annotation '{}' (expected fusion_group, layout, "
                                        "quant, device or sources)",
                                        key.text));
      }
    } while (accept(TokKind::Comma));
  }
  return expect(TokKind::RBrace, "',' or '}' in the annotations");
}

Expected<QuantParams> TextParser::parseQuant() {
  QuantParams q;
  KILN_RETURN_IF_ERROR(expect(TokKind::LBrace, "'{' to open the quant parameters"));
  std::unordered_set<std::string> seen;
  if (!is(TokKind::RBrace)) {
    do {
      if (!is(TokKind::Ident)) return expected("scales, zero_points, axis or storage");
      Token key = tok_;
      advance();
      if (!seen.insert(key.text).second)
        return errorAt(key, fmt::format("quant field '{}' is given twice", key.text));
      KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'=' after the quant field"));
      if (key.text == "scales" || key.text == "zero_points") {
        KILN_RETURN_IF_ERROR(expect(TokKind::LBracket, "'[' to open the list"));
        if (!is(TokKind::RBracket)) {
          do {
            if (!atNumber()) return expected("a number");
            if (key.text == "scales") {
              auto bits = parseFloatBits(DType::F32, tok_.text);
              if (!bits) return errorAt(tok_, bits.message());
              uint32_t b = uint32_t(*bits);
              float f;
              std::memcpy(&f, &b, 4);
              q.scales.push_back(f);
            } else {
              auto v = parseInt64(tok_.text);
              if (!v) return expected("an integer zero point");
              q.zeroPoints.push_back(*v);
            }
            advance();
          } while (accept(TokKind::Comma));
        }
        KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the list"));
      } else if (key.text == "axis") {
        KILN_ASSIGN_OR_RETURN(q.axis, parseInt("an integer axis"));
      } else if (key.text == "storage") {
        std::optional<DType> d;
        if (is(TokKind::Ident)) d = parseDType(tok_.text);
        if (!d) return expected("a storage type such as i8");
        q.storage = *d;
        advance();
      } else {
        return errorAt(key, fmt::format("unknown quant field '{}' (expected scales, zero_points, "
                                        "axis or storage)",
                                        key.text));
      }
    } while (accept(TokKind::Comma));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::RBrace, "',' or '}' in the quant parameters"));
  return q;
}

}  // namespace kiln::textir

namespace kiln {

Expected<Model> parseModel(std::string_view text, const std::string& sourceName,
                           int64_t maxNodes) {
  try {
    textir::TextParser p(text, sourceName, maxNodes);
    auto m = p.run();
    if (!m) return Error(textir::singleLine(m.message()));
    return m;
  } catch (const std::bad_alloc&) {
    return makeError("{}: out of memory while parsing", sourceName);
  } catch (const std::exception& e) {
    return makeError("{}: internal error while parsing: {}", sourceName, e.what());
  }
}

}  // namespace kiln
