// Constant folding runs the kernels the generated code calls: each test folds a node through
// the registry's evaluate facet and compares the bytes with a direct call of the kernels/ref
// kernel (with the arguments the emitter computes), on the cases where separate folding loops
// used to disagree with the generated code.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops_shape_fixture.h"
#include "ref/activation.h"
#include "ref/cast.h"
#include "ref/elementwise.h"
#include "ref/gemm.h"
#include "ref/misc.h"
#include "ref/reduce.h"

namespace kiln {
namespace {

using namespace opstest;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// Folds one node over constant inputs (invalid tensors are omitted inputs).
Tensor fold(const std::string& op, std::vector<Tensor> ins,
            std::vector<std::pair<std::string, Attribute>> attrs = {}) {
  OpGraph t;
  std::vector<Value*> vs;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& x : ins) {
    vs.push_back(x.valid() ? t.init(x) : nullptr);
    ptrs.push_back(x.valid() ? &x : nullptr);
  }
  t.op(op, vs);
  for (auto& [k, v] : attrs) t.node->setAttr(k, v);
  auto r = evaluate(*t.node, ptrs);
  EXPECT_TRUE(r.ok()) << op << ": " << (r.ok() ? "" : r.message());
  return r.ok() ? (*r)[0] : Tensor();
}

/// Bit-for-bit equality of a folded tensor with what the kernel wrote.
template <typename S>
::testing::AssertionResult sameBits(const Tensor& folded, const std::vector<S>& kernel) {
  if (!folded.valid()) return ::testing::AssertionFailure() << "nothing folded";
  if (folded.byteSize() != kernel.size() * sizeof(S))
    return ::testing::AssertionFailure()
           << "folded " << folded.byteSize() << " bytes, kernel " << kernel.size() * sizeof(S);
  if (!kernel.empty() && std::memcmp(folded.bytes(), kernel.data(), folded.byteSize()) != 0)
    return ::testing::AssertionFailure() << "bytes differ";
  return ::testing::AssertionSuccess();
}

template <typename T>
Tensor tensor(DType t, std::vector<T> v, std::vector<int64_t> dims) {
  return Tensor::fromVector<T>(t, std::move(dims), v);
}

// ---- Cast ----

TEST(FoldKernel, CastFloatToIntWrapsLikeTheKernel) {
  // ONNX leaves out-of-range float→int undefined; kiln's one definition is the kernel's
  // (truncate, wrap to the width, NaN → 0, ±inf → INT64_MIN's low bits).
  std::vector<float> x = {3e9f, -3e9f, kNaN, kInf, -kInf, 1.5f, -2.7f, 1e20f};
  Tensor in = f32s(x, {8});
  for (const char* to : {"i32", "i8", "u8", "i64", "u64"}) {
    SCOPED_TRACE(to);
    Tensor out = fold("Cast", {in}, {{"to", astr(to)}});
    std::string name = to;
    if (name == "i32") {
      std::vector<int32_t> k(x.size());
      kiln_ref::cast<float, int32_t>(8, x.data(), k.data());
      EXPECT_TRUE(sameBits(out, k));
      EXPECT_EQ(k[0], int32_t(uint32_t(3000000000u)));  // wrapped, not saturated
      EXPECT_EQ(k[2], 0);
    } else if (name == "i8") {
      std::vector<int8_t> k(x.size());
      kiln_ref::cast<float, int8_t>(8, x.data(), k.data());
      EXPECT_TRUE(sameBits(out, k));
    } else if (name == "u8") {
      std::vector<uint8_t> k(x.size());
      kiln_ref::cast<float, uint8_t>(8, x.data(), k.data());
      EXPECT_TRUE(sameBits(out, k));
    } else if (name == "i64") {
      std::vector<int64_t> k(x.size());
      kiln_ref::cast<float, int64_t>(8, x.data(), k.data());
      EXPECT_TRUE(sameBits(out, k));
    } else {
      std::vector<uint64_t> k(x.size());
      kiln_ref::cast<float, uint64_t>(8, x.data(), k.data());
      EXPECT_TRUE(sameBits(out, k));
    }
  }
}

TEST(FoldKernel, CastDoubleToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies above the midpoint of two halves; rounding to float first lands
  // on the midpoint and then (ties to even) on 1.0. Rounding once gives 1 + 2^-10.
  std::vector<double> x = {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 65519.99, 1e300,
                           -1e-300, 0.1};
  Tensor in = tensor<double>(DType::F64, x, {5});
  std::vector<uint16_t> k(x.size());
  kiln_ref::cast<double, kiln_ref::f16_tag>(5, x.data(), k.data());
  EXPECT_EQ(k[0], 0x3c01);
  EXPECT_TRUE(sameBits(fold("Cast", {in}, {{"to", astr("f16")}}), k));
  kiln_ref::cast<double, kiln_ref::bf16_tag>(5, x.data(), k.data());
  EXPECT_TRUE(sameBits(fold("Cast", {in}, {{"to", astr("bf16")}}), k));
}

TEST(FoldKernel, CastToBFloat16RoundingModes) {
  std::vector<float> x = {0.47892547f, 0.48033667f, 0.81910545f, -0.7229038f,
                          kNaN,        kInf,        -kInf,       3.4e38f};
  Tensor in = f32s(x, {8});
  std::vector<uint16_t> nearest(x.size()), truncated(x.size());
  kiln_ref::cast<float, kiln_ref::bf16_tag>(8, x.data(), nearest.data());
  kiln_ref::cast_bf16_truncate<float>(8, x.data(), truncated.data());
  EXPECT_TRUE(sameBits(fold("Cast", {in}, {{"to", astr("bf16")}}), nearest));
  EXPECT_TRUE(sameBits(
      fold("Cast", {in}, {{"to", astr("bf16")}, {"round_mode", astr("nearest_even")}}), nearest));
  EXPECT_TRUE(sameBits(fold("Cast", {in}, {{"to", astr("bf16")}, {"round_mode", astr("truncate")}}),
                       truncated));
  // Truncation keeps the high half of the float's bits (NaN stays NaN).
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    if (!std::isnan(x[i])) {
      EXPECT_EQ(truncated[i], uint16_t(bits >> 16)) << i;
    }
  }
  EXPECT_NE(nearest, truncated);
  // CastLike takes the mode too; other targets ignore it.
  Tensor like = Tensor::fromVector<uint16_t>(DType::BF16, {1}, std::vector<uint16_t>{0});
  EXPECT_TRUE(
      sameBits(fold("CastLike", {in, like}, {{"round_mode", astr("truncate")}}), truncated));
  std::vector<int32_t> asInt(x.size());
  kiln_ref::cast<float, int32_t>(8, x.data(), asInt.data());
  EXPECT_TRUE(
      sameBits(fold("Cast", {in}, {{"to", astr("i32")}, {"round_mode", astr("truncate")}}), asInt));
}

TEST(FoldKernel, CastIntegersAndDoublesToBFloat16Truncate) {
  std::vector<int64_t> xi = {16777217, -16777219, 123456789, int64_t(1) << 62};
  std::vector<uint16_t> k(xi.size());
  kiln_ref::cast_bf16_truncate<int64_t>(4, xi.data(), k.data());
  EXPECT_TRUE(sameBits(
      fold("Cast", {i64s(xi)}, {{"to", astr("bf16")}, {"round_mode", astr("truncate")}}), k));
  std::vector<double> xd = {1.0 - 1e-12, -3.99999999, 1e300};
  kiln_ref::cast_bf16_truncate<double>(3, xd.data(), k.data());
  EXPECT_EQ(k[0], 0x3f7f);  // just below 1 truncates to the bf16 below 1
  EXPECT_EQ(k[2], 0x7f7f);  // a finite overflow truncates to the largest finite value
  k.resize(3);
  EXPECT_TRUE(sameBits(fold("Cast", {tensor<double>(DType::F64, xd, {3})},
                            {{"to", astr("bf16")}, {"round_mode", astr("truncate")}}),
                       k));
}

TEST(FoldKernel, CastFourBitThroughBytes) {
  // 4-bit tensors have no kernel element type: folding goes through int8 and keeps the low
  // nibble, as integer narrowing does.
  Tensor out = fold("Cast", {f32s({7.9f, -8.5f, 20.0f}, {3})}, {{"to", astr("i4")}});
  ASSERT_TRUE(out.valid());
  EXPECT_EQ(ints(out), (std::vector<int64_t>{7, -8, 4}));
  Tensor back = fold("Cast", {out}, {{"to", astr("f32")}});
  EXPECT_EQ(doubles(back), (std::vector<double>{7, -8, 4}));
}

// ---- reductions ----

TEST(FoldKernel, FloatReductionsAccumulateInTheElementType) {
  // In float, 1e8 + 1 is 1e8: the sum is 1; accumulating in double would give 2.
  std::vector<float> x = {1e8f, 1.0f, -1e8f, 1.0f, 0.5f, 0.25f, 3.0f, -1.0f};
  Tensor in = f32s(x, {2, 4});
  const int64_t dims[] = {2, 4};
  const int64_t all[] = {1, 1}, cols[] = {0, 1};
  std::vector<float> k(1), k2(2);
  kiln_ref::reduce(2, dims, all, x.data(), k.data(), kiln_ref::ReduceSum{});
  EXPECT_TRUE(sameBits(fold("ReduceSum", {in}, {{"keepdims", ai(0)}}), k));
  EXPECT_EQ(k[0], 3.75f);
  kiln_ref::reduce(2, dims, cols, x.data(), k2.data(), kiln_ref::ReduceSum{});
  EXPECT_EQ(k2[0], 1.0f);
  EXPECT_TRUE(sameBits(fold("ReduceSum", {in, i64s({1})}), k2));
  kiln_ref::reduce(2, dims, cols, x.data(), k2.data(), kiln_ref::ReduceMean{});
  EXPECT_TRUE(sameBits(fold("ReduceMean", {in, i64s({-1})}), k2));
  kiln_ref::reduce(2, dims, cols, x.data(), k2.data(), kiln_ref::ReduceL2{});
  EXPECT_TRUE(sameBits(fold("ReduceL2", {in, i64s({1})}), k2));
  kiln_ref::reduce(2, dims, cols, x.data(), k2.data(), kiln_ref::ReduceSumSquare{});
  EXPECT_TRUE(sameBits(fold("ReduceSumSquare", {in, i64s({1})}), k2));
  kiln_ref::reduce(2, dims, cols, x.data(), k2.data(), kiln_ref::ReduceL1{});
  EXPECT_TRUE(sameBits(fold("ReduceL1", {in, i64s({1})}), k2));
  kiln_ref::reduce(2, dims, cols, x.data(), k2.data(), kiln_ref::ReduceProd{});
  EXPECT_TRUE(sameBits(fold("ReduceProd", {in, i64s({1})}), k2));
  std::vector<float> small = {0.5f, 0.25f, 3.0f, -1.0f, 2.0f, 1.5f, -0.5f, 0.125f};
  kiln_ref::reduce(2, dims, cols, small.data(), k2.data(), kiln_ref::ReduceLogSum{});
  EXPECT_TRUE(sameBits(fold("ReduceLogSum", {f32s(small, {2, 4}), i64s({1})}), k2));
  double scratch[2];
  kiln_ref::reduce_log_sum_exp(2, dims, cols, x.data(), k2.data(), scratch);
  EXPECT_TRUE(sameBits(fold("ReduceLogSumExp", {in, i64s({1})}), k2));
}

TEST(FoldKernel, MaxMinPropagateNaNAndIntegersWrap) {
  std::vector<float> x = {1.0f, kNaN, 3.0f, -2.0f, 5.0f, 4.0f};
  const int64_t dims[] = {2, 3}, cols[] = {0, 1};
  std::vector<float> k(2);
  kiln_ref::reduce(2, dims, cols, x.data(), k.data(), kiln_ref::ReduceMax{});
  EXPECT_TRUE(std::isnan(k[0]));
  EXPECT_TRUE(sameBits(fold("ReduceMax", {f32s(x, {2, 3}), i64s({1})}), k));
  kiln_ref::reduce(2, dims, cols, x.data(), k.data(), kiln_ref::ReduceMin{});
  EXPECT_TRUE(sameBits(fold("ReduceMin", {f32s(x, {2, 3}), i64s({1})}), k));
  // int32 products wrap; u8 max is folded too (the emitter handles every plain type).
  std::vector<int32_t> xi = {65536, 65537, 3, -7, 100000, 100000};
  std::vector<int32_t> ki(2);
  kiln_ref::reduce(2, dims, cols, xi.data(), ki.data(), kiln_ref::ReduceProd{});
  EXPECT_TRUE(
      sameBits(fold("ReduceProd", {tensor<int32_t>(DType::I32, xi, {2, 3}), i64s({1})}), ki));
  std::vector<uint8_t> xu = {1, 200, 3, 250, 5, 6};
  std::vector<uint8_t> ku(2);
  kiln_ref::reduce(2, dims, cols, xu.data(), ku.data(), kiln_ref::ReduceMax{});
  EXPECT_TRUE(sameBits(fold("ReduceMax", {tensor<uint8_t>(DType::U8, xu, {2, 3}), i64s({1})}), ku));
}

TEST(FoldKernel, ArgMaxArgMinTreatNaNAsTheExtreme) {
  std::vector<float> x = {1.0f, kNaN, 3.0f, kNaN, 7.0f, -2.0f, 7.0f, -2.0f};
  Tensor in = f32s(x, {2, 4});
  std::vector<int64_t> k(2);
  for (bool last : {false, true}) {
    SCOPED_TRACE(last);
    std::vector<std::pair<std::string, Attribute>> attrs = {
        {"axis", ai(1)}, {"keepdims", ai(0)}, {"select_last_index", ai(last ? 1 : 0)}};
    kiln_ref::argmax(2, 4, 1, x.data(), k.data(), last);
    EXPECT_TRUE(sameBits(fold("ArgMax", {in}, attrs), k));
    if (!last) {
      EXPECT_EQ(k[0], 1);  // the first NaN, as numpy.argmax
    }
    kiln_ref::argmin(2, 4, 1, x.data(), k.data(), last);
    EXPECT_TRUE(sameBits(fold("ArgMin", {in}, attrs), k));
  }
  // Along axis 0: outer 1, n 2, inner 4.
  std::vector<int64_t> k4(4);
  kiln_ref::argmax(1, 2, 4, x.data(), k4.data(), false);
  EXPECT_TRUE(sameBits(fold("ArgMax", {in}, {{"axis", ai(0)}}), k4));
}

// ---- generators ----

TEST(FoldKernel, FloatRangeComputesInFloat) {
  const float start = 0.1f, limit = 10.0f, delta = 0.1f;
  const int64_t n = kiln_ref::range_count<float>(start, limit, delta);
  std::vector<float> k(static_cast<size_t>(n));
  kiln_ref::range<float>(start, delta, n, k.data());
  auto scalar = [](float v) { return Tensor::scalar<float>(DType::F32, v); };
  EXPECT_TRUE(sameBits(fold("Range", {scalar(start), scalar(limit), scalar(delta)}), k));
  std::vector<int32_t> ki(4);
  kiln_ref::range<int32_t>(-5, 3, 4, ki.data());
  auto i32 = [](int32_t v) { return Tensor::scalar<int32_t>(DType::I32, v); };
  EXPECT_TRUE(sameBits(fold("Range", {i32(-5), i32(7), i32(3)}), ki));
  // f16 computes in float and rounds each element once.
  auto half = [](float v) {
    return Tensor::scalar<uint16_t>(DType::F16, kiln_ref::float_to_half(v));
  };
  std::vector<uint16_t> kh(7);
  kiln_ref::range<kiln_ref::f16_tag>(kiln_ref::float_to_half(0.3f), kiln_ref::float_to_half(0.7f),
                                     7, kh.data());
  EXPECT_TRUE(sameBits(fold("Range", {half(0.3f), half(5.0f), half(0.7f)}), kh));
}

TEST(FoldKernel, EyeLikeOnHalfAndIntegers) {
  Tensor x = f32s(std::vector<float>(12, 0.0f), {3, 4});
  std::vector<uint16_t> kh(12);
  kiln_ref::eye_like<kiln_ref::bf16_tag>(3, 4, 1, kh.data());
  EXPECT_TRUE(sameBits(fold("EyeLike", {x}, {{"dtype", astr("bf16")}, {"k", ai(1)}}), kh));
  std::vector<int32_t> ki(12);
  kiln_ref::eye_like<int32_t>(3, 4, -1, ki.data());
  EXPECT_TRUE(sameBits(fold("EyeLike", {x}, {{"dtype", astr("i32")}, {"k", ai(-1)}}), ki));
}

// ---- activations and MatMul ----

TEST(FoldKernel, ActivationsApplyTheKernelFunctors) {
  std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.7f, 2.5f, 40.0f, -100.0f, kNaN};
  Tensor in = f32s(x, {8});
  std::vector<float> k(x.size());
  kiln_ref::unary(8, x.data(), k.data(), kiln_ref::Sigmoid{});
  EXPECT_TRUE(sameBits(fold("Sigmoid", {in}), k));
  kiln_ref::unary(8, x.data(), k.data(), kiln_ref::Gelu{true});
  EXPECT_TRUE(sameBits(fold("Gelu", {in}, {{"approximate", astr("tanh")}}), k));
  kiln_ref::unary(8, x.data(), k.data(), kiln_ref::LeakyRelu{0.3f});
  EXPECT_TRUE(sameBits(fold("LeakyRelu", {in}, {{"alpha", Attribute(0.3f)}}), k));
  kiln_ref::unary(8, x.data(), k.data(), kiln_ref::Selu{});
  EXPECT_TRUE(sameBits(fold("Selu", {in}), k));
  kiln_ref::unary(8, x.data(), k.data(), kiln_ref::Softplus{});
  EXPECT_TRUE(sameBits(fold("Softplus", {in}), k));
  kiln_ref::unary(8, x.data(), k.data(), kiln_ref::HardSwish{});
  EXPECT_TRUE(sameBits(fold("HardSwish", {in}), k));
  std::vector<int32_t> xi = {-4, 0, 9};
  std::vector<int32_t> ki(3);
  kiln_ref::unary(3, xi.data(), ki.data(), kiln_ref::Relu{});
  EXPECT_TRUE(sameBits(fold("Relu", {tensor<int32_t>(DType::I32, xi, {3})}), ki));
}

TEST(FoldKernel, ClipWithoutABoundKeepsInfinity) {
  std::vector<float> x = {-kInf, -2.0f, 0.5f, kInf, kNaN};
  std::vector<float> k(x.size());
  kiln_ref::unary(5, x.data(), k.data(),
                  kiln_ref::Clip<float>{-1.0f, kiln_ref::ClipBounds<float>::highest()});
  EXPECT_EQ(k[3], kInf);
  EXPECT_TRUE(sameBits(
      fold("Clip", {f32s(x, {5}), Tensor::scalar<float>(DType::F32, -1.0f), Tensor()}), k));
}

TEST(FoldKernel, MatMulBatchedAndBroadcast) {
  // a [2, 2, 3] @ b [3, 2]: b broadcasts over the batch (stride 0).
  std::vector<float> a = {1e8f, 1.0f,  -1e8f, 0.5f, 0.25f, 2.0f,
                          3.0f, -1.0f, 0.1f,  7.0f, 1e-3f, 2.0f};
  std::vector<float> b = {1.0f, 2.0f, 1.0f, 3.0f, 1.0f, 0.5f};
  const int64_t batch[] = {2}, sa[] = {6}, sb[] = {0};
  std::vector<float> k(8);
  kiln_ref::matmul(1, batch, sa, sb, 2, 2, 3, a.data(), b.data(), k.data());
  EXPECT_TRUE(sameBits(fold("MatMul", {f32s(a, {2, 2, 3}), f32s(b, {3, 2})}), k));
  // Vector @ matrix, and wrapping int32.
  std::vector<int32_t> av = {65536, 65536, 1};
  std::vector<int32_t> bm = {65536, 1, 65536, 2, 7, 3};
  std::vector<int32_t> ki(2);
  kiln_ref::matmul(0, batch, sa, sb, 1, 2, 3, av.data(), bm.data(), ki.data());
  EXPECT_TRUE(sameBits(fold("MatMul", {tensor<int32_t>(DType::I32, av, {3}),
                                       tensor<int32_t>(DType::I32, bm, {3, 2})}),
                       ki));
}

}  // namespace
}  // namespace kiln
