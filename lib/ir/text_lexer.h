// Tokenizer for the textual IR; tracks line and column for error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::textir {

enum class TokKind : uint8_t {
  End,
  Error,   ///< a lexical error; `text` holds the message
  Ident,   ///< f32, graph, Conv, ai.onnx.ml, inf, -nan, nan(0x1)
  Number,  ///< -12, 1.5, 2e-05 (validated by the parser, which knows the type)
  String,  ///< "..." with escapes decoded
  Value,   ///< %name or %"name"; `text` is the name
  Symbol,  ///< @name or @"name"; `text` is the name
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Equal,
  Colon,
  ColonColon,
  Hash,
  Question,
  Star,
  Less,
};

struct Token {
  TokKind kind = TokKind::End;
  std::string text;
  uint64_t line = 1, col = 1;
};

/// Splits text into tokens on demand; `//` starts a comment to the end of the line.
class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}
  /// The next token. After an Error token the lexer keeps returning End.
  Token next();

 private:
  char at(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  bool atEnd() const { return pos_ >= src_.size(); }
  void bump();
  void skipSpaceAndComments();
  bool lexString(Token& t);
  void lexBare(Token& t);
  std::string_view src_;
  size_t pos_ = 0;
  uint64_t line_ = 1, col_ = 1;
  bool failed_ = false;
};

/// "'foo'", "string \"...\"", "end of input" for "expected X, got Y" messages.
std::string describeToken(const Token& t);

}  // namespace kiln::textir
