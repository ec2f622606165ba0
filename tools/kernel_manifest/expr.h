// Integer expressions of the kernel manifest ("mr - 1", "3 * nr + 4", "kc / 9 + 1"): numbers,
// the target's tile names, + - * / and parentheses, evaluated per ISA.
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kiln_manifest {

/// Evaluates `text` with `vars`; on a malformed expression or an unknown name, sets `error` and
/// returns nullopt. Division is integer division; dividing by zero is an error.
class Expr {
 public:
  Expr(const std::string& text, const std::map<std::string, int64_t>& vars)
      : s_(text), vars_(vars) {}

  std::optional<int64_t> eval(std::string& error) {
    std::optional<int64_t> v = sum();
    skip();
    if (v && pos_ != s_.size()) fail("unexpected '" + s_.substr(pos_, 1) + "'");
    if (!err_.empty()) {
      error = "expression \"" + s_ + "\": " + err_;
      return std::nullopt;
    }
    return v;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<int64_t> fail(const std::string& why) {
    if (err_.empty()) err_ = why;
    return std::nullopt;
  }
  std::optional<int64_t> sum() {
    std::optional<int64_t> v = product();
    while (v) {
      if (take('+')) {
        std::optional<int64_t> r = product();
        if (!r) return std::nullopt;
        *v += *r;
      } else if (take('-')) {
        std::optional<int64_t> r = product();
        if (!r) return std::nullopt;
        *v -= *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<int64_t> product() {
    std::optional<int64_t> v = atom();
    while (v) {
      if (take('*')) {
        std::optional<int64_t> r = atom();
        if (!r) return std::nullopt;
        *v *= *r;
      } else if (take('/')) {
        std::optional<int64_t> r = atom();
        if (!r) return std::nullopt;
        if (*r == 0) return fail("division by zero");
        *v /= *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<int64_t> atom() {
    skip();
    if (pos_ >= s_.size()) return fail("ends too early");
    if (take('(')) {
      std::optional<int64_t> v = sum();
      if (v && !take(')')) return fail("missing ')'");
      return v;
    }
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > (int64_t(1) << 40)) return fail("number too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      std::string name;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        name += s_[pos_++];
      auto it = vars_.find(name);
      if (it == vars_.end()) return fail("unknown name '" + name + "'");
      return it->second;
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string s_;
  const std::map<std::string, int64_t>& vars_;
  size_t pos_ = 0;
  std::string err_;
};

}  // namespace kiln_manifest
