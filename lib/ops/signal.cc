// Signal-processing ops: DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix.
#include <cmath>

#include "dim_math.h"
#include "emit_support.h"
#include "family_registration.h"
#include "ref/signal.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

// A dim from a known non-negative scalar input, unknown otherwise.
Expected<Dim> scalarDim(const InferContext& ctx, size_t i, const char* what) {
  auto v = knownScalar(ctx, i);
  if (!v) return Dim::unknown();
  if (*v < 0) return ctx.error("{} is negative ({})", what, *v);
  return Dim::known(*v);
}

// floor(n / 2) + 1: the bins a one-sided (real-input) transform keeps.
Dim oneSidedBins(const Dim& n) {
  return n.isStatic() ? Dim::known(n.value / 2 + 1) : Dim::unknown();
}

/// The run-time scalar of integer or float input i as a C++ expression of type `as`.
std::string scalarExpr(EmitContext& ctx, size_t i, const char* as) {
  return fmt::format("{}(({})[0])", as, ctx.input(i));
}

bool isF32OrF64(DType t) {
  return t == DType::F32 || t == DType::F64;
}

/// DFT geometry of a node whose input dims are x: the axis (normalized) or nullopt.
std::optional<int64_t> dftAxis(const Node& n, const Tensor* axisValue, int64_t rank) {
  int64_t axis = n.attrInt("axis", -2);
  if (n.numInputs() > 2 && n.input(2)) {
    if (!axisValue || axisValue->numElements() != 1) return std::nullopt;
    axis = axisValue->intAt(0);
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank - 2) return std::nullopt;
  return a;
}

struct DFTOp {
  static constexpr std::string_view kName = "DFT";
  // Opset 20 takes axis as input 2; a legacy 'axis' attribute (opset 17) is also honoured.
  static OpSchema schema() {
    return {1,
            3,
            1,
            1,
            {{"inverse", AttrKind::Int}, {"onesided", AttrKind::Int}, {"axis", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "dft_length"));
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 2, "axis"));
    const TensorType& x = ctx.in(0);
    if (!x.shape.rankKnown()) return single(x.dtype, Shape::unknownRank());
    const int64_t r = x.shape.rank();
    if (r < 2) return ctx.error("input must have rank >= 2 (signal dims plus a complex dim)");
    const Dim& complex = x.shape[size_t(r - 1)];
    if (complex.isStatic() && complex.value != 1 && complex.value != 2)
      return ctx.error("the last dim must be 1 (real) or 2 (complex), got {}", complex.value);
    Shape out = x.shape;
    out.dims()[size_t(r - 1)] = Dim::known(2);
    std::optional<int64_t> axis = ctx.node().attrInt("axis", -2);
    if (ctx.has(2)) axis = knownScalar(ctx, 2);
    if (!axis) {
      for (int64_t i = 0; i < r - 1; ++i) out.dims()[size_t(i)] = Dim::unknown();
      return single(x.dtype, std::move(out));
    }
    int64_t a = *axis < 0 ? *axis + r : *axis;
    if (a < 0 || a > r - 2)
      return ctx.error("axis {} must name a signal dim (not the last, complex dim)", *axis);
    Dim n = x.shape[size_t(a)];
    if (ctx.has(1)) {
      KILN_ASSIGN_OR_RETURN(n, scalarDim(ctx, 1, "dft_length"));
    }
    const bool onesided = ctx.node().attrInt("onesided", 0) != 0;
    out.dims()[size_t(a)] = onesided ? oneSidedBins(n) : n;
    return single(x.dtype, std::move(out));
  }
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    if (!ctx.has(0)) return ctx.error("input is missing");
    const Tensor& x = ctx.in(0);
    const Node& n = ctx.node();
    const auto& d = x.dims();
    const int64_t r = int64_t(d.size());
    auto a = dftAxis(n, ctx.has(2) ? &ctx.in(2) : nullptr, r);
    if (!a || r < 2) return ctx.error("axis is out of range");
    if (ctx.has(1) && ctx.in(1).numElements() != 1) return ctx.error("dft_length is no scalar");
    const int64_t length = ctx.has(1) ? ctx.in(1).intAt(0) : d[size_t(*a)];
    const bool onesided = n.attrInt("onesided", 0) != 0, inverse = n.attrInt("inverse", 0) != 0;
    if (length < 1 || length > (int64_t(1) << 24))
      return ctx.error("dft_length {} is out of range", length);
    std::vector<int64_t> outDims = d;
    outDims[size_t(*a)] = onesided ? length / 2 + 1 : length;
    outDims.back() = 2;
    const int64_t outer = dimsProduct(d, 0, size_t(*a)),
                  inner = dimsProduct(d, size_t(*a) + 1, d.size() - 1);
    // O(length^2) per line: fold only small transforms.
    if (double(outer) * double(inner) * double(length) * double(length) > 1e8)
      return ctx.error("the transform is too large to evaluate at compile time");
    KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::zeros(x.dtype(), outDims));
    int rc = 1;
    if (x.dtype() == DType::F32)
      rc = kiln_ref::dft(outer, d[size_t(*a)], inner, d.back(), length, outDims[size_t(*a)],
                         onesided, inverse, x.data<float>(), y.mutableData<float>());
    else if (x.dtype() == DType::F64)
      rc = kiln_ref::dft(outer, d[size_t(*a)], inner, d.back(), length, outDims[size_t(*a)],
                         onesided, inverse, x.data<double>(), y.mutableData<double>());
    else
      return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
    if (rc != 0) return ctx.error("input shape or dft_length is invalid");
    return std::vector<Tensor>{std::move(y)};
  }
  // dft_length may be a run-time input: the kernel checks it against the static output dim.
  static Status emit(const Node& n, EmitContext& ctx) {
    const DType t = n.input(0)->dtype();
    if (!isF32OrF64(t)) return ctx.unsupported(fmt::format("DFT on {} tensors", dtypeName(t)));
    auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
    const int64_t r = int64_t(x.size());
    auto a = dftAxis(n, ctx.value(2), r);
    if (!a) return ctx.unsupported("DFT with an axis that is not a compile-time constant");
    const bool onesided = n.attrInt("onesided", 0) != 0, inverse = n.attrInt("inverse", 0) != 0;
    if (onesided && (inverse || x.back() == 2))
      return ctx.unsupported("onesided DFT of complex input or inverse onesided DFT");
    if (staticNumel(n.output(0)) == 0) return Status();
    const std::string length = n.numInputs() > 1 && n.input(1) ? scalarExpr(ctx, 1, "int64_t")
                                                               : std::to_string(x[size_t(*a)]);
    ctx.useHeader("kiln_ref/signal.h");
    callChecked(ctx, "kiln_ref::dft",
                fmt::format("kiln_ref::dft<{}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {})", cTypeOf(t),
                            dimsProduct(x, 0, size_t(*a)), x[size_t(*a)],
                            dimsProduct(x, size_t(*a) + 1, x.size() - 1), x.back(), length,
                            y[size_t(*a)], onesided, inverse, ctx.input(0), ctx.output(0)));
    return Status();
  }
};

struct STFTOp {
  static constexpr std::string_view kName = "STFT";
  static OpSchema schema() { return {2, 4, 1, 1, {{"onesided", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "frame_step"));
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 3, "frame_length"));
    const TensorType& x = ctx.in(0);
    if (x.shape.rankKnown() && x.shape.rank() != 3)
      return ctx.error("signal must be [batch, length, 1 or 2], got {}", toString(x.shape));
    KILN_ASSIGN_OR_RETURN(Dim step, scalarDim(ctx, 1, "frame_step"));
    if (step.isStatic() && step.value == 0) return ctx.error("frame_step must be positive");
    Dim frameLen = Dim::unknown();
    if (ctx.has(3)) {
      KILN_ASSIGN_OR_RETURN(frameLen, scalarDim(ctx, 3, "frame_length"));
    } else if (ctx.has(2) && ctx.in(2).shape.rankKnown() && ctx.in(2).shape.rank() == 1) {
      frameLen = ctx.in(2).shape[0];
    }
    Dim batch = Dim::unknown(), frames = Dim::unknown();
    if (x.shape.rankKnown()) {
      batch = x.shape[0];
      const Dim& len = x.shape[1];
      if (len.isStatic() && frameLen.isStatic() && step.isStatic()) {
        if (frameLen.value > len.value)
          return ctx.error("frame_length {} exceeds the signal length {}", frameLen.value,
                           len.value);
        frames = Dim::known((len.value - frameLen.value) / step.value + 1);
      }
    }
    const bool onesided = ctx.node().attrInt("onesided", 1) != 0;
    Dim bins = onesided ? oneSidedBins(frameLen) : frameLen;
    return single(x.dtype, Shape({batch, frames, bins, Dim::known(2)}));
  }
  // frame_step and frame_length may be run-time inputs: the kernel checks them against the
  // static output dims.
  static Status emit(const Node& n, EmitContext& ctx) {
    const DType t = n.input(0)->dtype();
    if (!isF32OrF64(t)) return ctx.unsupported(fmt::format("STFT on {} tensors", dtypeName(t)));
    auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
    const bool onesided = n.attrInt("onesided", 1) != 0;
    if (onesided && x.back() == 2) return ctx.unsupported("onesided STFT of a complex signal");
    const Value* window = n.numInputs() > 2 ? n.input(2) : nullptr;
    if (window && window->dtype() != t)
      return ctx.unsupported("STFT with a window of another type than the signal");
    const bool hasLength = n.numInputs() > 3 && n.input(3);
    if (!hasLength && !window) return ctx.unsupported("STFT with neither window nor frame_length");
    if (!n.input(1)) return ctx.unsupported("STFT without frame_step");
    if (staticNumel(n.output(0)) == 0) return Status();
    const int64_t windowLen = window ? staticNumel(window) : 0;
    const std::string length =
        hasLength ? scalarExpr(ctx, 3, "int64_t") : std::to_string(windowLen);
    const std::string T(cTypeOf(t));
    ctx.useHeader("kiln_ref/signal.h");
    callChecked(ctx, "kiln_ref::stft",
                fmt::format("kiln_ref::stft<{}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", T,
                            x[0], x[1], x[2], scalarExpr(ctx, 1, "int64_t"), length,
                            window ? ctx.input(2) : "static_cast<const " + T + "*>(nullptr)",
                            windowLen, y[1], y[2], onesided, ctx.input(0), ctx.output(0)));
    return Status();
  }
};

// HannWindow, HammingWindow, BlackmanWindow: a 1-D window of `size` elements.
template <int kKind>
struct WindowOp {
  static constexpr std::string_view kName = kKind == 0   ? "HannWindow"
                                            : kKind == 1 ? "HammingWindow"
                                                         : "BlackmanWindow";
  static OpSchema schema() {
    return {1, 1, 1, 1, {{"output_datatype", AttrKind::String}, {"periodic", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 0, "size"));
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "output_datatype", DType::F32));
    KILN_ASSIGN_OR_RETURN(Dim n, scalarDim(ctx, 0, "size"));
    return single(t, Shape({n}));
  }
  // Folds the window when `size` is known: w[k] = sum_j a_j cos(2 pi j k / N') with
  // N' = size (periodic) or size - 1 (symmetric), computed in double (ONNX reference).
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    const Tensor& sizeT = ctx.in(0);
    if (sizeT.numElements() != 1) return ctx.error("size must be a scalar");
    const int64_t size = sizeT.intAt(0);
    if (size < 0 || size > (int64_t(1) << 24)) return ctx.error("size {} is out of range", size);
    DType t = DType::F32;
    if (const Attribute* a = ctx.node().attr("output_datatype");
        a && a->kind() == AttrKind::String) {
      auto parsed = parseDType(a->s());
      t = parsed ? *parsed : DType::Undefined;
    }
    if (t != DType::F32 && t != DType::F64)
      return ctx.error("no compile-time evaluation for this output_datatype");
    const bool periodic = ctx.node().attrInt("periodic", 1) != 0;
    const double denom = double(periodic ? size : size - 1);
    const double a0 = kKind == 0 ? 0.5 : kKind == 1 ? 25.0 / 46.0 : 0.42;
    const double a1 = kKind == 2 ? 0.5 : 1.0 - a0, a2 = kKind == 2 ? 0.08 : 0.0;
    const double pi = 3.14159265358979323846;
    std::vector<double> w(size_t(size), 0.0);
    for (int64_t k = 0; k < size; ++k) {
      const double x = denom == 0 ? 0.0 : 2 * pi * double(k) / denom;
      w[size_t(k)] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
    }
    if (t == DType::F64) return std::vector<Tensor>{Tensor::fromVector<double>(t, {size}, w)};
    std::vector<float> f(w.begin(), w.end());
    return std::vector<Tensor>{Tensor::fromVector<float>(t, {size}, f)};
  }
  // With a static output length the window is a constant: checks that the run-time size
  // agrees, then copies the values folded above.
  static Status emit(const Node& n, EmitContext& ctx) {
    if (n.output(0)->dtype() != DType::F32 || !n.output(0)->shape().numElements())
      return ctx.unsupported("window of a non-f32 type");
    const int64_t size = *n.output(0)->shape().numElements();
    KILN_ASSIGN_OR_RETURN(Tensor sizeT, Tensor::fromBytes(DType::I64, {}, &size, sizeof(size)));
    std::vector<const Tensor*> ins{&sizeT};
    KILN_ASSIGN_OR_RETURN(auto folded, evaluate(EvalContext(n, ins)));
    const float* v = folded[0].data<float>();
    ctx.call("memcpy",
             fmt::format("if (int64_t(({})[0]) != {}) return KILN_ERR_DATA;", ctx.input(0), size));
    if (size > 0)
      ctx.call("memcpy",
               fmt::format("std::memcpy({}, {}, {});", ctx.output(0),
                           ctx.constFloatArray(std::vector<float>(v, v + size)), size * 4));
    return Status();
  }
};

struct MelWeightMatrixOp {
  static constexpr std::string_view kName = "MelWeightMatrix";
  static OpSchema schema() { return {5, 5, 1, 1, {{"output_datatype", AttrKind::String}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 0, "num_mel_bins"));
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "dft_length"));
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 2, "sample_rate"));
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "output_datatype", DType::F32));
    KILN_ASSIGN_OR_RETURN(Dim mel, scalarDim(ctx, 0, "num_mel_bins"));
    KILN_ASSIGN_OR_RETURN(Dim dft, scalarDim(ctx, 1, "dft_length"));
    return single(t, Shape({oneSidedBins(dft), mel}));
  }
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    for (size_t i = 0; i < 5; ++i)
      if (!ctx.has(i) || ctx.in(i).numElements() != 1)
        return ctx.error("input {} must be a scalar", i);
    const int64_t mel = ctx.in(0).intAt(0), dft = ctx.in(1).intAt(0);
    DType t = DType::F32;
    if (const Attribute* a = ctx.node().attr("output_datatype");
        a && a->kind() == AttrKind::String) {
      auto parsed = parseDType(a->s());
      t = parsed ? *parsed : DType::Undefined;
    }
    if (!isF32OrF64(t)) return ctx.error("no compile-time evaluation for this output_datatype");
    if (mel < 0 || dft < 1 || mel > (int64_t(1) << 16) || dft > (int64_t(1) << 20))
      return ctx.error("num_mel_bins {} or dft_length {} is out of range", mel, dft);
    KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::zeros(t, {dft / 2 + 1, mel}));
    auto run = [&](auto* out) {
      return kiln_ref::mel_weight_matrix(mel, dft, ctx.in(2).intAt(0), ctx.in(3).doubleAt(0),
                                         ctx.in(4).doubleAt(0), dft / 2 + 1, mel, out);
    };
    int rc = t == DType::F64 ? run(y.mutableData<double>()) : run(y.mutableData<float>());
    if (rc != 0) return ctx.error("sample_rate or the edge frequencies are out of range");
    return std::vector<Tensor>{std::move(y)};
  }
  // Every input may be a run-time scalar: the kernel checks the sizes against the static
  // output dims.
  static Status emit(const Node& n, EmitContext& ctx) {
    const DType t = n.output(0)->dtype();
    if (!isF32OrF64(t))
      return ctx.unsupported(fmt::format("MelWeightMatrix producing {}", dtypeName(t)));
    for (size_t i = 0; i < 5; ++i)
      if (!n.input(i)) return ctx.unsupported("MelWeightMatrix with an omitted input");
    for (size_t i = 3; i < 5; ++i)
      if (!isF32OrF64(n.input(i)->dtype()))
        return ctx.unsupported(fmt::format("MelWeightMatrix with {} edge frequencies",
                                           dtypeName(n.input(i)->dtype())));
    auto y = staticDims(n.output(0));
    ctx.useHeader("kiln_ref/signal.h");
    callChecked(
        ctx, "kiln_ref::mel_weight_matrix",
        fmt::format("kiln_ref::mel_weight_matrix<{}>({}, {}, {}, {}, {}, {}, {}, {})", cTypeOf(t),
                    scalarExpr(ctx, 0, "int64_t"), scalarExpr(ctx, 1, "int64_t"),
                    scalarExpr(ctx, 2, "int64_t"), scalarExpr(ctx, 3, "double"),
                    scalarExpr(ctx, 4, "double"), y[0], y[1], ctx.output(0)));
    return Status();
  }
};

}  // namespace

void registerSignalOps(OpRegistry& r) {
  r.add<DFTOp>();
  r.add<STFTOp>();
  r.add<WindowOp<0>>();
  r.add<WindowOp<1>>();
  r.add<WindowOp<2>>();
  r.add<MelWeightMatrixOp>();
}

}  // namespace kiln
