// Helpers shared by the patterns.
#include <cmath>

#include "passes.h"

namespace kiln {

const Tensor* constantOf(const Value* v) { return v ? v->initializer() : nullptr; }

bool isSplat(const Value* v, double x) {
  const Tensor* t = constantOf(v);
  if (!t || t->numElements() == 0) return false;
  switch (t->dtype()) {
    case DType::F32: case DType::F64: case DType::F16: case DType::BF16:
    case DType::I8: case DType::I16: case DType::I32: case DType::I64:
    case DType::U8: case DType::U16: case DType::U32: case DType::U64:
      break;
    default:
      return false;
  }
  for (int64_t i = 0; i < t->numElements(); ++i)
    if (t->doubleAt(i) != x) return false;
  return true;
}

Node* soleUser(const Value* v) {
  if (!v || v->uses().size() != 1) return nullptr;
  const Graph* g = v->owner();
  for (const Value* o : g->outputs())
    if (o == v) return nullptr;
  Node* user = v->uses()[0].node;
  return user->owner() == g ? user : nullptr;
}

bool isStatic(const Value* v) {
  return v && v->dtype() != DType::Undefined && v->shape().numElements().has_value();
}

std::vector<int64_t> dimsOf(const Value* v) { return v->shape().staticDims(); }

bool isRandom(const Node& n) {
  static const char* const kRandom[] = {"RandomNormal",     "RandomUniform", "RandomNormalLike",
                                        "RandomUniformLike", "Bernoulli",    "Multinomial"};
  if (!n.domain().empty()) return false;
  for (const char* r : kRandom)
    if (n.opType() == r) return true;
  return false;
}

}  // namespace kiln

namespace kiln {

bool nearValue(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); }

bool splatNear(const Value* v, double x) {
  const Tensor* t = constantOf(v);
  if (!t || t->numElements() != 1 || (t->dtype() != DType::F32 && t->dtype() != DType::F64))
    return false;
  return nearValue(t->doubleAt(0), x);
}

const Node* soleProducer(const Value* v, const char* op) {
  const Node* p = v ? v->producer() : nullptr;
  return p && p->domain().empty() && p->opType() == op && soleUser(v) ? p : nullptr;
}

Value* timesConstant(const Value* v, double c) {
  const Node* m = soleProducer(v, "Mul");
  if (!m) return nullptr;
  for (int i : {0, 1})
    if (splatNear(m->input(size_t(i)), c)) return m->input(size_t(1 - i));
  return nullptr;
}

void collectMatched(const Node* n, const Value* x, std::vector<const Node*>& out) {
  out.push_back(n);
  for (const Value* v : n->inputs()) {
    if (v == x || !v || !v->producer() || !soleUser(v)) continue;
    collectMatched(v->producer(), x, out);
  }
}

bool forwardTo(Node& n, Value* v, Rewriter& rw, const std::string& pattern) {
  if (!rw.canReplace(n.output(0), v))
    return rw.fail(pattern, n, "its output is a graph output and the input cannot take its name");
  for (size_t i = 1; i < n.numOutputs(); ++i)
    if (!n.output(i)->uses().empty())
      return rw.fail(pattern, n, "another output is used");
  std::vector<Value*> repl(n.numOutputs(), nullptr);
  repl[0] = v;
  return rw.replaceNode(&n, repl);
}

std::optional<Tensor> mapFloats(const Tensor& t, double (*f)(double)) {
  if (t.dtype() == DType::F32) {
    std::vector<float> v(t.data<float>(), t.data<float>() + t.numElements());
    for (float& x : v) x = float(f(double(x)));
    return Tensor::fromVector(DType::F32, t.dims(), v);
  }
  if (t.dtype() == DType::F64) {
    std::vector<double> v(t.data<double>(), t.data<double>() + t.numElements());
    for (double& x : v) x = f(x);
    return Tensor::fromVector(DType::F64, t.dims(), v);
  }
  return std::nullopt;
}

}  // namespace kiln
