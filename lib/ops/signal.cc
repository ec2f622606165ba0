// Signal-processing ops: DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix.
#include "dim_math.h"
#include "family_registration.h"

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
