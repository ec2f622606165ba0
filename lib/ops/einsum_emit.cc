// Emit facet for Einsum: the equation resolved at compile time into labels, extents and
// per-operand strides, then one call of kernels/ref/einsum.h.
#include <algorithm>
#include <map>

#include "emit_support.h"

namespace kiln {
namespace {

// A term's labels with "..." expanded into `ellipsisRank` synthetic labels ('0' + k, aligned
// to the right as numpy broadcasting does). Nullopt when the term is malformed.
std::optional<std::vector<char>> expandTerm(std::string_view term, int64_t rank,
                                            int64_t ellipsisRank) {
  std::vector<char> labels;
  int64_t letters = 0;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      ++letters;
    } else if (c == '.' && term.substr(i, 3) == "..." && !ellipsis) {
      ellipsis = true;
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  const int64_t own = rank < 0 ? ellipsisRank : rank - letters;  // this operand's ellipsis dims
  if (own < 0 || (!ellipsis && own != 0 && rank >= 0) || own > ellipsisRank) return std::nullopt;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      for (int64_t k = ellipsisRank - own; k < ellipsisRank; ++k) labels.push_back(char('0' + k));
      i += 2;
    } else {
      labels.push_back(term[i]);
    }
  }
  return labels;
}

Status emitEinsum(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string T, plainKernelType(n, n.output(0), ctx));
  if (n.output(0)->dtype() == DType::Bool) return ctx.unsupported("Einsum on bool tensors");
  std::string eq;
  for (char c : n.attrString("equation", ""))
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != n.numInputs()) return ctx.unsupported("Einsum term count");
  // The ellipsis covers the most dims any operand gives it.
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t letters =
        int64_t(std::count_if(terms[i].begin(), terms[i].end(), [](char c) { return c != '.'; }));
    if (terms[i].find("...") != std::string::npos)
      ellipsisRank = std::max(ellipsisRank, int64_t(staticDims(n.input(i)).size()) - letters);
  }
  std::map<char, int64_t> extent;
  std::map<char, int> count;
  std::vector<std::vector<char>> operandLabels;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto dims = staticDims(n.input(i));
    auto labels = expandTerm(terms[i], int64_t(dims.size()), ellipsisRank);
    if (!labels || labels->size() != dims.size())
      return ctx.unsupported("Einsum term that does not match its operand's rank");
    for (size_t k = 0; k < dims.size(); ++k) {
      char c = (*labels)[k];
      ++count[c];
      auto [it, fresh] = extent.emplace(c, dims[k]);
      if (!fresh && it->second != dims[k]) {
        if (it->second == 1)
          it->second = dims[k];
        else if (dims[k] != 1)
          return ctx.unsupported("Einsum labels of different sizes");
      }
    }
    operandLabels.push_back(std::move(*labels));
  }
  std::vector<char> out;
  if (arrow != std::string::npos) {
    auto o = expandTerm(eq.substr(arrow + 2), -1, ellipsisRank);
    if (!o) return ctx.unsupported("Einsum output term");
    out = *o;
  } else {  // implicit output: the ellipsis, then the labels seen once, alphabetically
    for (int64_t k = 0; k < ellipsisRank; ++k) out.push_back(char('0' + k));
    for (auto [c, k] : count)
      if (k == 1 && !(c >= '0' && c <= '9')) out.push_back(c);
  }
  std::vector<char> labels = out;
  for (auto [c, k] : extent)
    if (std::find(out.begin(), out.end(), c) == out.end()) labels.push_back(c);
  for (char c : out)
    if (!extent.count(c)) return ctx.unsupported("Einsum output label missing from the inputs");
  if (labels.empty()) return ctx.unsupported("Einsum of scalars");
  if (labels.size() > 32) return ctx.unsupported("Einsum with more than 32 labels");
  if (int64_t(out.size()) != int64_t(staticDims(n.output(0)).size()))
    return ctx.unsupported("Einsum output rank differs from the inferred one");
  std::vector<int64_t> dims, strides;
  for (char c : labels) dims.push_back(extent[c]);
  std::string ptrs;
  for (size_t i = 0; i < operandLabels.size(); ++i) {
    if (n.input(i)->dtype() != n.output(0)->dtype())
      return ctx.unsupported("Einsum with operands of mixed types");
    auto d = staticDims(n.input(i));
    std::vector<int64_t> s(labels.size(), 0);
    int64_t stride = 1;
    for (size_t k = d.size(); k-- > 0;) {
      size_t l =
          size_t(std::find(labels.begin(), labels.end(), operandLabels[i][k]) - labels.begin());
      if (d[k] != 1) s[l] += stride;
      stride *= d[k];
    }
    strides.insert(strides.end(), s.begin(), s.end());
    ptrs += (i ? ", " : "") + ctx.input(i);
  }
  ctx.useHeader("kiln_ref/einsum.h");
  ctx.call("kiln_ref::einsum",
           fmt::format("{{ const {}* const ins[] = {{{}}}; kiln_ref::einsum<{}>({}, ins, {}, {}, "
                       "{}, {}, {}); }}",
                       T, ptrs, T, operandLabels.size(), labels.size(), ctx.constArray(dims),
                       ctx.constArray(strides), out.size(), ctx.output(0)));
  return Status();
}

}  // namespace

void attachEinsumEmitters(OpRegistry& r) {
  r.setEmit("", "Einsum", emitEinsum);
}

}  // namespace kiln
