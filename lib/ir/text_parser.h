// The textual IR parser's state and grammar (shared by text_parser.cc and text_parse_values.cc).
#pragma once

#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"
#include "text_lexer.h"
#include "value_refs.h"

namespace kiln::textir {

/// A recursive-descent parser over the token stream. Recursion only follows subgraph
/// nesting, which parseGraph bounds by kMaxGraphDepth.
class TextParser {
 public:
  TextParser(std::string_view text, const std::string& source, int64_t maxNodes)
      : lex_(text), source_(source), maxNodes_(maxNodes) {
    advance();
  }
  Expected<Model> run();

 private:
  // ---- tokens and errors ----
  void advance() { tok_ = lex_.next(); }
  bool is(TokKind k) const { return tok_.kind == k; }
  bool isWord(std::string_view w) const { return tok_.kind == TokKind::Ident && tok_.text == w; }
  bool accept(TokKind k) {
    if (!is(k)) return false;
    advance();
    return true;
  }
  std::string where(const Token& t) const {
    return fmt::format("{}:{}:{}", source_, t.line, t.col);
  }
  Error errorAt(const Token& t, std::string_view message) const {
    return makeError("{}: {}", where(t), message);
  }
  // "expected X, got Y" at the current token (or the lexer's own message).
  Error expected(std::string_view what) const {
    if (is(TokKind::Error)) return errorAt(tok_, tok_.text);
    return errorAt(tok_, fmt::format("expected {}, got {}", what, describeToken(tok_)));
  }
  Status expect(TokKind k, std::string_view what) {
    if (!accept(k)) return expected(what);
    return Status();
  }
  Status expectWord(std::string_view w) {
    if (!isWord(w)) return expected(fmt::format("'{}'", w));
    advance();
    return Status();
  }
  Expected<std::string> parseString(std::string_view what);
  Expected<int64_t> parseInt(std::string_view what);

  // ---- grammar ----
  Status parseModelBlock(ModelMetadata& m);
  Expected<std::shared_ptr<Graph>> parseGraph(Graph* parent, int depth);
  Status parseBody(Graph& g, int depth);
  Status parseConst(Graph& g);
  Status parseReturn(Graph& g);
  Status parseNode(Graph& g, int depth);
  Status parseValueSuffix(TensorType* type, Annotations& ann, std::string& doc);
  Expected<TensorType> parseType();
  Expected<Tensor> parseTensor();
  Expected<Tensor> parseTensorElements(DType dtype, std::vector<int64_t> dims, int64_t count);
  Status parseAttributes(Graph& owner, int depth, std::map<std::string, Attribute>& attrs);
  Expected<Attribute> parseAttrValue(Graph& owner, int depth);
  Expected<Attribute> numericAttr(const std::vector<Token>& items, bool isList,
                                  std::optional<AttrKind> want);
  Status parseAnnotations(Annotations& a);
  Expected<QuantParams> parseQuant();
  bool atFloatWord() const {
    return is(TokKind::Ident) && (tok_.text.starts_with("inf") || tok_.text.starts_with("nan") ||
                                  tok_.text.starts_with("-inf") || tok_.text.starts_with("-nan"));
  }
  bool atNumber() const { return is(TokKind::Number) || atFloatWord(); }

  Lexer lex_;
  std::string source_;
  int64_t maxNodes_, nodes_ = 0;
  Token tok_;
  ValueRefs refs_;
};

}  // namespace kiln::textir
