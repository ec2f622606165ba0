// Tokenizer for the textual IR.
#include "text_lexer.h"

#include <fmt/format.h>

#include "text_syntax.h"

namespace kiln::textir {
namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string printableChar(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

}  // namespace

void Lexer::bump() {
  if (src_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skipSpaceAndComments() {
  while (!atEnd()) {
    char c = at();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      bump();
    } else if (c == '/' && at(1) == '/') {
      while (!atEnd() && at() != '\n') bump();
    } else {
      return;
    }
  }
}

// Reads a "..." literal starting at the opening quote; false with t set to an Error on failure.
bool Lexer::lexString(Token& t) {
  bump();  // opening quote
  std::string value;
  while (true) {
    if (atEnd() || at() == '\n') {
      t.kind = TokKind::Error;
      t.text = "unterminated string literal (strings end on the same line with '\"')";
      return false;
    }
    char c = at();
    if (c == '"') {
      bump();
      break;
    }
    if (c != '\\') {
      // Copy a run of plain bytes at once: strings may hold megabytes of hex.
      size_t start = pos_;
      while (!atEnd() && at() != '"' && at() != '\\' && at() != '\n') ++pos_;
      col_ += pos_ - start;
      value.append(src_.data() + start, pos_ - start);
      continue;
    }
    bump();
    char e = at();
    switch (e) {
      case '"':
        value += '"';
        break;
      case '\\':
        value += '\\';
        break;
      case 'n':
        value += '\n';
        break;
      case 't':
        value += '\t';
        break;
      case 'r':
        value += '\r';
        break;
      case 'x': {
        int hi = hexValue(at(1)), lo = hexValue(at(2));
        if (hi < 0 || lo < 0) {
          t.kind = TokKind::Error;
          t.text = "bad escape in string: \\x needs two hex digits";
          return false;
        }
        value += char(hi << 4 | lo);
        bump();
        bump();
        break;
      }
      default:
        t.kind = TokKind::Error;
        t.text = "unknown escape in string (use \\\\, \\\", \\n, \\t, \\r or \\xHH)";
        return false;
    }
    bump();
  }
  t.text = std::move(value);
  return true;
}

// Reads a %/@ name body: bare characters up to (not including) a "//" comment.
void Lexer::lexBare(Token& t) {
  size_t start = pos_;
  while (!atEnd() && isBareNameChar(at()) && !(at() == '/' && at(1) == '/')) bump();
  t.text.assign(src_.data() + start, pos_ - start);
}

Token Lexer::next() {
  Token t;
  if (failed_) return t;
  skipSpaceAndComments();
  t.line = line_;
  t.col = col_;
  if (atEnd()) return t;
  char c = at();
  auto single = [&](TokKind k) {
    bump();
    t.kind = k;
    return t;
  };
  switch (c) {
    case '(':
      return single(TokKind::LParen);
    case ')':
      return single(TokKind::RParen);
    case '{':
      return single(TokKind::LBrace);
    case '}':
      return single(TokKind::RBrace);
    case '[':
      return single(TokKind::LBracket);
    case ']':
      return single(TokKind::RBracket);
    case ',':
      return single(TokKind::Comma);
    case '=':
      return single(TokKind::Equal);
    case '#':
      return single(TokKind::Hash);
    case '?':
      return single(TokKind::Question);
    case '*':
      return single(TokKind::Star);
    case '<':
      return single(TokKind::Less);
    case ':':
      if (at(1) == ':') {
        bump();
        return single(TokKind::ColonColon);
      }
      return single(TokKind::Colon);
    default:
      break;
  }
  if (c == '"') {
    t.kind = TokKind::String;
    if (!lexString(t)) failed_ = true;
    return t;
  }
  if (c == '%' || c == '@') {
    bump();
    t.kind = c == '%' ? TokKind::Value : TokKind::Symbol;
    if (at() == '"') {
      if (!lexString(t)) failed_ = true;
    } else {
      lexBare(t);
      if (t.text.empty()) {
        t.kind = TokKind::Error;
        t.text = fmt::format("'{}' must be followed by a name or a quoted string", c);
        failed_ = true;
      }
    }
    return t;
  }
  if (isDigit(c) || (c == '-' && isDigit(at(1)))) {
    size_t start = pos_;
    bump();
    while (!atEnd()) {
      char d = at();
      char prev = src_[pos_ - 1];
      if (isDigit(d) || isAlpha(d) || d == '.' || d == '_' ||
          ((d == '+' || d == '-') && (prev == 'e' || prev == 'E')))
        bump();
      else
        break;
    }
    t.kind = TokKind::Number;
    t.text.assign(src_.data() + start, pos_ - start);
    return t;
  }
  if (isIdentStart(c) || (c == '-' && isIdentStart(at(1)))) {
    size_t start = pos_;
    bump();
    while (!atEnd() && isIdentChar(at())) bump();
    std::string_view word(src_.data() + start, pos_ - start);
    // A NaN payload, nan(0x...), is one token so a float literal is always one token.
    if ((word == "nan" || word == "-nan") && at() == '(') {
      size_t k = 1;
      while (k < 40 && pos_ + k < src_.size() && (isIdentChar(at(k)))) ++k;
      if (at(k) == ')')
        for (size_t i = 0; i <= k; ++i) bump();
    }
    t.kind = TokKind::Ident;
    t.text.assign(src_.data() + start, pos_ - start);
    return t;
  }
  t.kind = TokKind::Error;
  t.text = fmt::format("unexpected {}", printableChar(c));
  failed_ = true;
  return t;
}

std::string describeToken(const Token& t) {
  switch (t.kind) {
    case TokKind::End:
      return "end of input";
    case TokKind::Error:
      return t.text;
    case TokKind::Ident:
    case TokKind::Number:
      return "'" + (t.text.size() > 40 ? t.text.substr(0, 40) + "..." : t.text) + "'";
    case TokKind::String:
      return "string " + quoteForMessage(t.text);
    case TokKind::Value:
      return "value %" + quoteForMessage(t.text);
    case TokKind::Symbol:
      return "name @" + quoteForMessage(t.text);
    case TokKind::LParen:
      return "'('";
    case TokKind::RParen:
      return "')'";
    case TokKind::LBrace:
      return "'{'";
    case TokKind::RBrace:
      return "'}'";
    case TokKind::LBracket:
      return "'['";
    case TokKind::RBracket:
      return "']'";
    case TokKind::Comma:
      return "','";
    case TokKind::Equal:
      return "'='";
    case TokKind::Colon:
      return "':'";
    case TokKind::ColonColon:
      return "'::'";
    case TokKind::Hash:
      return "'#'";
    case TokKind::Question:
      return "'?'";
    case TokKind::Star:
      return "'*'";
    case TokKind::Less:
      return "'<'";
  }
  return "token";
}

}  // namespace kiln::textir
