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

}  // namespace kiln
