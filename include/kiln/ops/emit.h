// Code emission facet of op definitions: the interface the code generator implements.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/target/target.h"
#include "kiln/support/status.h"

namespace kiln {

/// What an op's emit facet sees. Expressions returned are C++17 source text valid inside the
/// generated run function; buffers are typed pointers to the value's element type.
class EmitContext {
 public:
  virtual ~EmitContext() = default;
  /// `const T*` expression for input i (a weight, a graph input or an arena slot).
  virtual std::string input(size_t i) = 0;
  /// `T*` expression for output i.
  virtual std::string output(size_t i) = 0;
  /// The value of input i when it is known at compile time (a weight or a folded value);
  /// null when it is only known at run time or absent.
  virtual const Tensor* value(size_t i) = 0;
  /// Makes output `out` a view of input `in` from `byteOffset` bytes on: no code and no
  /// memory of its own (Reshape-like ops, outer-axis Split/Slice). Returns false where that is
  /// not allowed (the output is a graph output, or memory sharing is off); the op then copies.
  virtual bool aliasOutput(size_t out, size_t in, int64_t byteOffset) = 0;
  /// `T*` expression for output `out` that reuses the buffer of the first input among
  /// `candidates` that no later op reads, has the output's dtype and size and lives in the
  /// arena; otherwise the same as output(out). Only for kernels that read element i of that
  /// input before writing element i of the output and never read it afterwards.
  virtual std::string outputInPlace(size_t out, std::initializer_list<size_t> candidates) = 0;
  /// outputInPlace(out, {in}) for kernels that read element i of input `in` once, just before
  /// writing element i of the output, while they read their other inputs throughout (a conv's
  /// residual): also refused where another input of the node shares `in`'s buffer. The default
  /// writes a buffer of its own.
  virtual std::string outputOverInput(size_t out, size_t in) {
    (void)in;
    return output(out);
  }
  /// `T*` expression for output `out` written over input `in` shifted down by `shiftBytes`:
  /// the output starts that far before the input, whose buffer is planned with the room before
  /// it (a depthwise conv whose output pixel lands on an input pixel every later window has
  /// passed). Only where the input is a whole arena buffer of the output's size and dtype that
  /// no later op and no other input of the node reads; otherwise empty, and the op writes a
  /// buffer of its own (output(out)).
  virtual std::string outputShiftedOverInput(size_t out, size_t in, int64_t shiftBytes) {
    (void)out;
    (void)in;
    (void)shiftBytes;
    return {};
  }
  /// `unsigned char*` expression for a scratch buffer live only during this op (64-byte
  /// aligned, counted in the arena plan).
  virtual std::string scratch(int64_t bytes) = 0;
  /// Makes a kernel header available to the generated code, e.g. "kiln_ref/conv.h"
  /// (copied from kernels/ref/conv.h into the artifact).
  virtual void useHeader(const std::string& header) = 0;
  /// Emits one statement that calls `kernel` (the name is recorded in the manifest).
  virtual void call(const std::string& kernel, const std::string& statement) = 0;
  /// Emits a file-scope `static const int64_t name[] = {...}` and returns its identifier.
  virtual std::string constArray(const std::vector<int64_t>& values) = 0;
  /// Emits a file-scope `static const float name[] = {...}` (bit-exact) and returns it.
  virtual std::string constFloatArray(const std::vector<float>& values) = 0;
  /// `int64_t` lvalue expression for the run-time size of dim `dim` of output `out`, a
  /// data-dependent dim (Dim::isBounded; buffers are sized by its bound). The op's code must
  /// assign it on every run; the C API reports it (docs/dynamic-shapes.md). Empty when the
  /// context cannot track run-time sizes.
  virtual std::string runtimeDim(size_t out, size_t dim) {
    (void)out;
    (void)dim;
    return {};
  }
  /// Which of `candidates` to emit for this node: implementations of the same op (an algorithm,
  /// a thread split, a cache blocking), the first being the cost model's pick. `key` is the op's
  /// signature (kernel family, shapes, attributes: what the speed depends on); `kiln compile
  /// --tune` measures the candidates per key and the tuning cache remembers the fastest
  /// (docs/tuning.md). Returns a member of `candidates`.
  virtual std::string tuned(const std::string& key, const std::vector<std::string>& candidates) {
    (void)key;
    return candidates.front();
  }
  /// The target the code is generated for: which kernels, which tiles.
  virtual const Target& target() const = 0;
  /// Most threads the context's pool runs (kernels size per-thread scratch by it).
  virtual int threads() const { return 1; }
  /// `kiln_cpu::ThreadPool*` expression for the context's thread pool (nullptr with one
  /// thread); using it makes the artifact start a pool at create.
  virtual std::string threadPool() = 0;
  /// Adds a tensor computed at compile time from weights (e.g. repacked into a kernel's panel
  /// layout) to the weights blob and returns a `const T*` expression for it. The same bytes
  /// share one slot.
  virtual std::string derivedWeight(const Tensor& t) = 0;
  /// An error naming the node being emitted.
  virtual Error unsupported(const std::string& what) = 0;
};

/// The C++ element type used for a dtype in generated code ("float", "int64_t", "bool",
/// "uint16_t" for f16/bf16 storage); empty for dtypes codegen cannot handle.
std::string_view cTypeOf(DType t);

/// `{1, 3, 224, 224}` style literal.
std::string intListLiteral(const std::vector<int64_t>& values);

/// A float as a C++ literal that reproduces the same bits (hex float; inf/nan spelled out).
std::string floatLiteral(float v);

using EmitFn = Status (*)(const Node&, EmitContext&);

}  // namespace kiln
