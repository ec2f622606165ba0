// Registration entry points of the files that make up the shape, tensor, control-flow and
// misc families; each family's public register function calls its parts.
#pragma once

#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {

/// Cast, CastLike (cast.cc).
void registerCastOps(OpRegistry& r);
/// Concat, Split, Slice, Tile (slice_concat.cc).
void registerSliceConcatOps(OpRegistry& r);
/// Pad, CenterCropPad (pad.cc).
void registerPadOps(OpRegistry& r);
/// ConstantOfShape, Range, EyeLike, Trilu, Dropout, DepthToSpace, SpaceToDepth (generate.cc).
void registerGenerateOps(OpRegistry& r);
/// Gather, GatherElements, GatherND, Scatter* (gather_scatter.cc).
void registerGatherScatterOps(OpRegistry& r);
/// Resize, GridSample, RoiAlign, NonMaxSuppression, AffineGrid (resize.cc).
void registerImageOps(OpRegistry& r);
/// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (quantize.cc).
void registerQuantizeOps(OpRegistry& r);
/// DFT, STFT, window functions, MelWeightMatrix (signal.cc).
void registerSignalOps(OpRegistry& r);
/// Adagrad, Momentum, Adam of domain ai.onnx.preview.training (training.cc).
void registerTrainingOps(OpRegistry& r);
/// RNN, GRU, LSTM (recurrent.cc), only where no other family defines them.
void registerRecurrentOps(OpRegistry& r);
/// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (loss.cc), only where not yet defined.
void registerLossOps(OpRegistry& r);

/// Registers Op unless another family already did: the misc family fills gaps without
/// replacing a more specific definition (registering a name twice replaces silently).
template <typename Op>
void addIfAbsent(OpRegistry& r) {
  std::string domain;
  if constexpr (requires { Op::kDomain; }) domain = std::string(Op::kDomain);
  if (!r.find(domain, std::string(Op::kName))) r.add<Op>();
}

}  // namespace kiln
