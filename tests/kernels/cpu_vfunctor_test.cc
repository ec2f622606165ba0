// Tests of kernels/cpu/vfunctor.h (the vector form of each kernels/ref element-wise functor, alone
// and as the GEMM drivers' in-register activation), vmath.h's expm1, log, softplus and tanh
// against double-precision std:: functions within the bounds vmath.h states, and eltwise.h's
// map_n_f32 / map_nest_f32 with Dense, Splat and Nested operands at the edges of the vector width
// and at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/eltwise.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/vfunctor.h"

namespace {

using kiln_cpu::V;
using namespace kiln_cpu_test;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kMax = std::numeric_limits<float>::max();

// Inputs that find the edges: zeros of both signs, infinities, NaN, a denormal, the largest
// float, values at the functors' thresholds (0.5, 1, 3, 6), ties for Round.
const Vec kSpecial{0.0f,   -0.0f,   1.0f,    -1.0f,  0.5f,   -0.5f,   1.5f,
                   2.5f,   -2.5f,   3.0f,    -3.0f,  6.0f,   -6.0f,   0.3f,
                   -0.3f,  1e-40f,  -1e-40f, kInf,   -kInf,  kMax,    -kMax,
                   1e-30f, -1e-30f, 88.0f,   -88.0f, 100.0f, -100.0f, std::nanf("")};

// Lane 0 of f applied to one element (a masked one-lane load): the kernels' per-lane result.
template <class F, class... X>
float lane0(F f, X... x) {
  float out = 0;
  V::store(&out, f(V::load(&x, 1)...), 1);
  return out;
}

Vec inputs(Rng& rng, float scale) {
  Vec x = kSpecial;
  for (int i = 0; i < 2000; ++i) x.push_back(rng.value(Data::kRandom) * scale);
  return x;
}

bool sameBits(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// Every unary functor with kExact gives the scalar functor's bits (NaN for NaN).
template <class F>
void expectExactUnary(F f, const char* what) {
  static_assert(kiln_cpu::VectorForm<F>::kExact);
  Rng rng{5};
  for (float x : inputs(rng, 8.0f)) {
    const float want = f(x), got = lane0([&](V::R v) { return kiln_cpu::vapply(f, v); }, x);
    ASSERT_TRUE(sameBits(want, got)) << what << "(" << x << "): want " << want << " got " << got;
  }
}

template <class F>
void expectExactBinary(F f, const char* what) {
  static_assert(kiln_cpu::VectorForm<F>::kExact);
  Rng rng{6};
  const Vec x = inputs(rng, 8.0f);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < x.size(); j += (i < kSpecial.size() ? 1 : 97)) {
      const float want = f(x[i], x[j]);
      const float got =
          lane0([&](V::R a, V::R b) { return kiln_cpu::vapply(f, a, b); }, x[i], x[j]);
      ASSERT_TRUE(sameBits(want, got))
          << what << "(" << x[i] << ", " << x[j] << "): want " << want << " got " << got;
    }
}

TEST(CpuVectorForm, ExactFormsMatchTheScalarFunctorsBitForBit) {
  KILN_REQUIRE_ISA();
  expectExactUnary(kiln_ref::NoActivation{}, "NoActivation");
  expectExactUnary(kiln_ref::Relu{}, "Relu");
  expectExactUnary(kiln_ref::LeakyRelu{0.1f}, "LeakyRelu");
  expectExactUnary(kiln_ref::ThresholdedRelu{1.0f}, "ThresholdedRelu");
  expectExactUnary(kiln_ref::Clip<float>{-1.0f, 2.0f}, "Clip");
  expectExactUnary(kiln_ref::Clip<float>{2.0f, -1.0f}, "Clip lo > hi");
  expectExactUnary(kiln_ref::HardSigmoid{0.2f, 0.5f}, "HardSigmoid");
  expectExactUnary(kiln_ref::HardSwish{}, "HardSwish");
  expectExactUnary(kiln_ref::Softsign{}, "Softsign");
  expectExactUnary(kiln_ref::Shrink{0.3f, 0.5f}, "Shrink");
  expectExactUnary(kiln_ref::Neg{}, "Neg");
  expectExactUnary(kiln_ref::Abs{}, "Abs");
  expectExactUnary(kiln_ref::Sign{}, "Sign");
  expectExactUnary(kiln_ref::Reciprocal{}, "Reciprocal");
  expectExactUnary(kiln_ref::Sqrt{}, "Sqrt");
  expectExactUnary(kiln_ref::Floor{}, "Floor");
  expectExactUnary(kiln_ref::Ceil{}, "Ceil");
  expectExactUnary(kiln_ref::Round{}, "Round");
  expectExactBinary(kiln_ref::Add{}, "Add");
  expectExactBinary(kiln_ref::Sub{}, "Sub");
  expectExactBinary(kiln_ref::Mul{}, "Mul");
  expectExactBinary(kiln_ref::Div{}, "Div");
  expectExactBinary(kiln_ref::Max{}, "Max");
  expectExactBinary(kiln_ref::Min{}, "Min");
  expectExactBinary(kiln_ref::Pow{}, "Pow");
  // Clip with bounds in lanes (a fused chain's Clip): the scalar Clip with those bounds.
  Rng rng{7};
  const Vec x = inputs(rng, 4.0f);
  for (size_t i = 0; i < x.size(); i += 3) {
    const float lo = x[(i + 1) % x.size()], hi = x[(i + 2) % x.size()];
    const float want = kiln_ref::Clip<float>{lo, hi}(x[i]);
    const float got =
        lane0([](V::R a, V::R l, V::R h) { return kiln_cpu::vclip(a, l, h); }, x[i], lo, hi);
    ASSERT_TRUE(sameBits(want, got)) << "clip(" << x[i] << ", " << lo << ", " << hi << ")";
  }
}

// Pow with whole vectors (lane0's zero lanes would always take the per-lane path): each
// exponent alike in every lane (the fast forms: 2, 1, -1, 0.5; the others per lane), mixed
// exponents, and a NaN lane among squares; every lane the scalar functor's bits.
TEST(CpuVectorForm, PowMatchesTheScalarFunctorBitForBitOnWholeVectors) {
  KILN_REQUIRE_ISA();
  constexpr int L = V::kLanes;
  Rng rng{11};
  Vec x = inputs(rng, 8.0f);
  for (float t = 1e-44f; t < 1e38f; t *= 9.3f) x.insert(x.end(), {t, -t});
  while (x.size() % L != 0) x.push_back(0.25f);
  auto check = [&](const float* a, const float* b, const char* what) {
    float got[L];
    V::store(got, kiln_cpu::vapply(kiln_ref::Pow{}, V::load(a), V::load(b)));
    for (int i = 0; i < L; ++i)
      ASSERT_TRUE(sameBits(kiln_ref::Pow{}(a[i], b[i]), got[i]))
          << what << ": pow(" << a[i] << ", " << b[i] << ") = " << kiln_ref::Pow{}(a[i], b[i])
          << ", vector " << got[i];
  };
  for (float e : {2.0f, 1.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.0f, 0.3f, -0.5f}) {
    const Vec b(L, e);
    for (size_t i = 0; i < x.size(); i += L) check(x.data() + i, b.data(), "uniform exponent");
  }
  Vec mixed(L);
  for (int i = 0; i < L; ++i) mixed[size_t(i)] = i % 2 ? 2.0f : 0.5f;
  for (size_t i = 0; i < x.size(); i += L) check(x.data() + i, mixed.data(), "mixed exponents");
  Vec with_nan(L, 3.0f), two(L, 2.0f);
  with_nan[size_t(L - 1)] = std::nanf("");
  check(with_nan.data(), two.data(), "a NaN lane");
}

// vsin (cos false) or vcos on whole vectors of x (its size a multiple of the lanes), then
// f(x, result) per element.
template <class F>
void forEachSinCos(const Vec& x, bool cos, F f) {
  constexpr int L = V::kLanes;
  for (size_t i = 0; i < x.size(); i += L) {
    float got[L];
    const V::R v = V::load(x.data() + i);
    V::store(got, cos ? kiln_cpu::vcos(v) : kiln_cpu::vsin(v));
    for (int l = 0; l < L; ++l) f(x[i + size_t(l)], got[l]);
  }
}

// vsin / vcos against double precision: within 2 ulp plus 2e-11 |x| (vmath.h) over
// [-8192, 8192], at and next to the floats nearest multiples of pi/2 and at tiny arguments; past
// 8192, at infinities and NaN, lane by lane std::sin / std::cos (the scalar functors' bits).
TEST(CpuMath, SinCosWithinStatedBounds) {
  KILN_REQUIRE_ISA();
  Vec x;
  for (int i = 0; i <= 400000; ++i) x.push_back(float(-8192.0 + 16384.0 * i / 400000));
  for (int k = -5200; k <= 5200; k += 7) {
    float lo = float(k * 1.5707963267948966), hi = lo;
    x.push_back(lo);
    for (int d = 0; d < 2; ++d) {
      lo = std::nextafter(lo, -kInf);
      hi = std::nextafter(hi, kInf);
      x.insert(x.end(), {lo, hi});
    }
  }
  for (float t = 1e-38f; t < 1.0f; t *= 2.9f) x.insert(x.end(), {t, -t});
  x.insert(x.end(), {0.0f, -0.0f, 8192.0f, -8192.0f});
  while (x.size() % V::kLanes != 0) x.push_back(1.0f);
  double worst[2] = {0, 0};
  for (int c = 0; c < 2; ++c)
    forEachSinCos(x, c == 1, [&](double xv, float got) {
      const double want = c ? std::cos(xv) : std::sin(xv);
      const float w = float(want);
      const double ulp = std::nextafter(std::fabs(w), kInf) - std::fabs(w);
      const double err = std::fabs(double(got) - want);
      EXPECT_LE(err, 2 * ulp + 2e-11 * std::fabs(xv))
          << (c ? "cos(" : "sin(") << xv << "): want " << want << " got " << got;
      worst[c] = std::max(worst[c], err / ulp);
    });
  std::printf("vsin worst %.2f ulp, vcos worst %.2f ulp (absolute part included)\n", worst[0],
              worst[1]);
  EXPECT_TRUE(std::signbit(lane0(kiln_cpu::vsin, -0.0f)));
  EXPECT_EQ(lane0(kiln_cpu::vcos, 0.0f), 1.0f);
  // Beyond the reduction, lane by lane the scalar functor (vectors mixing both kinds).
  Vec big{1e6f, kInf, -kInf, std::nanf(""), 3e38f, 8193.0f, -1e5f, 0.5f};
  while (big.size() % V::kLanes != 0) big.push_back(2.0f);
  for (int c = 0; c < 2; ++c)
    forEachSinCos(big, c == 1, [&](float xv, float got) {
      if (std::fabs(xv) <= 8192.0f) return;
      const float want = c ? kiln_ref::Cos{}(xv) : kiln_ref::Sin{}(xv);
      EXPECT_TRUE(sameBits(want, got)) << (c ? "cos(" : "sin(") << xv << ")";
    });
}

// The approximate forms against the scalar functors (std:: functions): relative `rel` plus
// absolute `abs` (times max(1, |x|) where scaled), NaN for NaN, and each special value's
// expected limit.
template <class F>
void expectNear(F f, const char* what, double rel, double abs, bool scaled, float scale) {
  static_assert(!kiln_cpu::VectorForm<F>::kExact);
  Rng rng{8};
  double worst = 0;
  for (float x : inputs(rng, scale)) {
    const float want = f(x), got = lane0([&](V::R v) { return kiln_cpu::vapply(f, v); }, x);
    if (std::isnan(x) || std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << what << "(" << x << ") = " << got;
      continue;
    }
    if (std::isinf(want)) {
      EXPECT_EQ(want, got) << what << "(" << x << ")";
      continue;
    }
    const double tol = rel * std::fabs(double(want)) +
                       abs * (scaled ? std::max(1.0, std::fabs(double(x))) : 1.0) + 1e-35;
    const double err = std::fabs(double(got) - double(want));
    EXPECT_LE(err, tol) << what << "(" << x << "): want " << want << " got " << got;
    worst = std::max(worst, err / tol);
  }
  std::printf("%-16s worst error %.2f of its bound\n", what, worst);
}

TEST(CpuVectorForm, ApproximateFormsWithinTheirBounds) {
  KILN_REQUIRE_ISA();
  constexpr double kUlps8 = 8 * 5.96e-8;  // 8 ulp relative, the functors' own rounding included
  expectNear(kiln_ref::Sigmoid{}, "Sigmoid", kUlps8, 0, false, 30.0f);
  expectNear(kiln_ref::Swish{1.0f}, "Swish", kUlps8, 0, false, 30.0f);
  expectNear(kiln_ref::Swish{0.5f}, "Swish 0.5", kUlps8, 0, false, 30.0f);
  expectNear(kiln_ref::Tanh{}, "Tanh", kUlps8, 0, false, 12.0f);
  expectNear(kiln_ref::Elu{0.7f}, "Elu", kUlps8, 0, false, 20.0f);
  expectNear(kiln_ref::Selu{}, "Selu", kUlps8, 0, false, 20.0f);
  expectNear(kiln_ref::Celu{1.5f}, "Celu", kUlps8, 0, false, 20.0f);
  expectNear(kiln_ref::Softplus{}, "Softplus", kUlps8, 0, false, 40.0f);
  expectNear(kiln_ref::Mish{}, "Mish", kUlps8, 0, false, 40.0f);
  expectNear(kiln_ref::Exp{}, "Exp", kUlps8, 0, false, 80.0f);
  expectNear(kiln_ref::Log{}, "Log", kUlps8, 0, false, 1e6f);
  // 0.5 x (1 + tanh(...)) cancels for negative x in both forms: an absolute bound of 2 ulp of 1
  // times |x| (the scalar functor computes it in float as well).
  expectNear(kiln_ref::Gelu{true}, "Gelu tanh", kUlps8, 2.4e-7, true, 10.0f);
  // The erf forms: Abramowitz & Stegun's absolute bound (vmath.h).
  expectNear(kiln_ref::Erf{}, "Erf", 0, 5e-7, false, 5.0f);
  expectNear(kiln_ref::Gelu{false}, "Gelu", 0, 4e-7, true, 10.0f);
  // sin and cos near 1 in magnitude mostly: 8 ulp of the result or of 1 (absolute 4.8e-7).
  expectNear(kiln_ref::Sin{}, "Sin", kUlps8, 4.8e-7, false, 100.0f);
  expectNear(kiln_ref::Cos{}, "Cos", kUlps8, 4.8e-7, false, 100.0f);
}

// vmath.h's stated bounds, over dense grids and tiny arguments, against double precision.
double ulps(double want, float got) {
  const float w = float(want);
  if (w == got) return 0;
  const double ulp = std::nextafter(std::fabs(w), kInf) - std::fabs(w);
  return std::fabs(double(got) - want) / ulp;
}

template <class VF, class Ref>
double worstUlps(VF vf, Ref ref, const Vec& x) {
  double worst = 0;
  for (float v : x) worst = std::max(worst, ulps(ref(double(v)), lane0(vf, v)));
  return worst;
}

Vec gridWithTiny(double lo, double hi, int n) {
  Vec x;
  for (int i = 0; i <= n; ++i) x.push_back(float(lo + (hi - lo) * i / n));
  for (float t = 1e-30f; t < 1.0f; t *= 3.7f) {
    x.push_back(t);
    x.push_back(-t);
  }
  return x;
}

TEST(CpuMath, Expm1LogSoftplusTanhWithinStatedBounds) {
  KILN_REQUIRE_ISA();
  const double expm1 = worstUlps(
      kiln_cpu::vexpm1, [](double x) { return std::expm1(x); }, gridWithTiny(-20, 20, 200000));
  const double tanh = worstUlps(
      kiln_cpu::vtanh, [](double x) { return std::tanh(x); }, gridWithTiny(-12, 12, 200000));
  const double softplus = worstUlps(
      kiln_cpu::vsoftplus, [](double x) { return std::log1p(std::exp(x)); },
      gridWithTiny(-80, 80, 200000));
  // log over every binade, denormals included: e^t for a grid of t, and 1 + small.
  Vec lx;
  for (int i = 0; i <= 200000; ++i) lx.push_back(float(std::exp(-103.0 + 191.0 * i / 200000)));
  for (float t = 1e-8f; t < 0.5f; t *= 1.9f) {
    lx.push_back(1.0f + t);
    lx.push_back(1.0f - t);
  }
  const double log = worstUlps(
      kiln_cpu::vlog, [](double x) { return std::log(x); }, lx);
  std::printf("vexpm1 %.2f ulp, vtanh %.2f, vsoftplus %.2f, vlog %.2f\n", expm1, tanh, softplus,
              log);
  EXPECT_LE(expm1, 4.0);
  EXPECT_LE(tanh, 4.0);
  EXPECT_LE(softplus, 4.0);
  EXPECT_LE(log, 2.0);
  // Special values.
  const float nan = std::nanf("");
  EXPECT_EQ(lane0(kiln_cpu::vlog, 0.0f), -kInf);
  EXPECT_EQ(lane0(kiln_cpu::vlog, -0.0f), -kInf);
  EXPECT_TRUE(std::isnan(lane0(kiln_cpu::vlog, -1.0f)));
  EXPECT_TRUE(std::isnan(lane0(kiln_cpu::vlog, -kInf)));
  EXPECT_TRUE(std::isnan(lane0(kiln_cpu::vlog, nan)));
  EXPECT_EQ(lane0(kiln_cpu::vlog, kInf), kInf);
  EXPECT_EQ(lane0(kiln_cpu::vlog, 1.0f), 0.0f);
  EXPECT_NEAR(lane0(kiln_cpu::vlog, 1e-45f), std::log(double(1e-45f)), 1e-5);
  EXPECT_EQ(lane0(kiln_cpu::vtanh, kInf), 1.0f);
  EXPECT_EQ(lane0(kiln_cpu::vtanh, -kInf), -1.0f);
  EXPECT_TRUE(std::signbit(lane0(kiln_cpu::vtanh, -0.0f)));
  EXPECT_TRUE(std::isnan(lane0(kiln_cpu::vtanh, nan)));
  EXPECT_EQ(lane0(kiln_cpu::vexpm1, kInf), kInf);
  EXPECT_EQ(lane0(kiln_cpu::vexpm1, -kInf), -1.0f);
  EXPECT_TRUE(std::isnan(lane0(kiln_cpu::vexpm1, nan)));
  EXPECT_EQ(lane0(kiln_cpu::vsoftplus, kInf), kInf);
  EXPECT_EQ(lane0(kiln_cpu::vsoftplus, -kInf), 0.0f);
  EXPECT_EQ(lane0(kiln_cpu::vsoftplus, -100.0f), 0.0f);
  EXPECT_TRUE(std::isnan(lane0(kiln_cpu::vsoftplus, nan)));
}

// Activations whose vector form approximates the scalar functor (vmath.h) are applied in
// registers: the GEMM with one gives exactly the vector form applied to what the GEMM without
// it stores, with every driver, bias and residual, at 1 and 2 threads.
TEST(CpuKernels, GemmEpilogueVectorForms) {
  KILN_REQUIRE_ISA();
  Rng rng{21};
  const int64_t M = kiln_cpu::kMR + 1, N = kiln_cpu::kNR + 5, K = 37;
  const Vec a = filled(M * K, Data::kRandom, rng), b = filled(K * N, Data::kRandom, rng);
  Vec cb = filled(N, Data::kRandom, rng), res = filled(M * N, Data::kRandom, rng);
  for (float& x : cb) x *= 4.0f;  // spread the sums over the activations' ranges
  Vec panels(size_t(kiln_cpu::packed_b_floats(K, N)));
  kiln_cpu::pack_b_panels(b.data(), K, N, panels.data());
  auto run = [&](auto act, int driver, kiln_cpu::ThreadPool* p) {
    const auto e = kiln_cpu::make_epilogue(act, nullptr, cb.data(), res.data(), N);
    Vec c(size_t(M * N));
    Vec scratch(size_t(std::max(kiln_cpu::gemm_f32_scratch_floats(M, N, K, 2),
                                kiln_cpu::gemm_f32_packed_b_scratch_floats(M, K))));
    if (driver == 0)
      kiln_cpu::gemm_f32(M, N, K, a.data(), K, b.data(), N, c.data(), N, e, scratch.data(), p);
    else if (driver == 1)
      kiln_cpu::gemm_f32_packed_b(M, N, K, a.data(), K, panels.data(), c.data(), N, e,
                                  scratch.data(), p);
    else
      kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, a.data(), K, panels.data(), c.data(), N, e, p);
    return c;
  };
  auto check = [&](auto act, const char* what) {
    for (int driver : {0, 1, 2})
      for (kiln_cpu::ThreadPool* p : {static_cast<kiln_cpu::ThreadPool*>(nullptr), threadPool(2)})
        EXPECT_TRUE(identical(vectorApplied(act, run(kiln_ref::NoActivation{}, driver, p)),
                              run(act, driver, p)))
            << what << ", driver " << driver;
  };
  check(kiln_ref::Sigmoid{}, "Sigmoid");
  check(kiln_ref::Tanh{}, "Tanh");
  check(kiln_ref::Gelu{false}, "Gelu");
  check(kiln_ref::Gelu{true}, "Gelu tanh");
  check(kiln_ref::Swish{1.0f}, "Swish");
  check(kiln_ref::Elu{0.5f}, "Elu");
  check(kiln_ref::Softplus{}, "Softplus");
  check(kiln_ref::Mish{}, "Mish");
}

}  // namespace

namespace kiln_cpu_test {

/// map_n_f32 over Dense, Splat and Dense operands (y also in place over an operand) of length n
/// (the manifest's: around the vector width and the thread chunk), identical to the vector form
/// applied lane by lane, at 1, 2 and 3 threads.
void check_map_n_f32(const SweepCase& k) {
  const auto f = [](V::R a, V::R s, V::R b) {
    return kiln_cpu::vapply(kiln_ref::Tanh{}, V::add(V::mul(a, s), b));
  };
  Rng rng{9};
  {
    const int64_t n = k["n"];
    const Vec a = filled(n, Data::kRandom, rng), b = filled(n, Data::kRandom, rng);
    Vec want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[size_t(i)] = lane0(f, a[size_t(i)], 1.5f, b[size_t(i)]);
    for (int threads : {1, 2, 3}) {
      Vec y(size_t(n + kGuard), kSentinel);
      kiln_cpu::map_n_f32(n, y.data(), f, threads == 1 ? nullptr : threadPool(threads),
                          kiln_cpu::Dense{a.data()}, kiln_cpu::Splat{1.5f},
                          kiln_cpu::Dense{b.data()});
      EXPECT_TRUE(untouched(y, 0, 0, 0, n)) << n;
      y.resize(size_t(n));
      EXPECT_TRUE(identical(want, y)) << n << " at " << threads << " threads";
    }
    Vec inplace = a;
    kiln_cpu::map_n_f32(n, inplace.data(), f, threadPool(2), kiln_cpu::Dense{inplace.data()},
                        kiln_cpu::Splat{1.5f}, kiln_cpu::Dense{b.data()});
    EXPECT_TRUE(identical(want, inplace)) << n << " in place";
  }
}

/// map_nest_f32 over d0 x d1 x d2: operands contiguous in every level (the output's strides),
/// broadcast along the outermost level, one value per innermost row, and a scalar.
void check_map_nest_f32(const SweepCase& k) {
  const auto f = [](V::R x, V::R row, V::R col, V::R s) {
    return kiln_cpu::vapply(kiln_ref::Sigmoid{}, V::add(V::mul(x, row), V::mul(col, s)));
  };
  struct Dims {
    int64_t d0, d1, d2;
  };
  Rng rng{10};
  {
    const Dims d{k["d0"], k["d1"], k["d2"]};
    const int64_t n = d.d0 * d.d1 * d.d2;
    const Vec x = filled(n, Data::kRandom, rng);
    const Vec rows = filled(d.d0 * d.d1, Data::kRandom, rng);  // one per (i0, i1)
    const Vec cols = filled(d.d1 * d.d2, Data::kRandom, rng);  // [d1, d2], broadcast over i0
    Vec want(static_cast<size_t>(n));
    for (int64_t i0 = 0; i0 < d.d0; ++i0)
      for (int64_t i1 = 0; i1 < d.d1; ++i1)
        for (int64_t i2 = 0; i2 < d.d2; ++i2) {
          const int64_t e = (i0 * d.d1 + i1) * d.d2 + i2;
          want[size_t(e)] = lane0(f, x[size_t(e)], rows[size_t(i0 * d.d1 + i1)],
                                  cols[size_t(i1 * d.d2 + i2)], -0.75f);
        }
    for (int threads : {1, 2, 3}) {
      Vec y(size_t(n + kGuard), kSentinel);
      kiln_cpu::map_nest_f32(d.d0, d.d1, d.d2, y.data(), f,
                             threads == 1 ? nullptr : threadPool(threads),
                             kiln_cpu::Nested<1>{x.data(), d.d1 * d.d2, d.d2},
                             kiln_cpu::Nested<0>{rows.data(), d.d1, 1},
                             kiln_cpu::Nested<1>{cols.data(), 0, d.d2}, kiln_cpu::Splat{-0.75f});
      EXPECT_TRUE(untouched(y, 0, 0, 0, n));
      y.resize(size_t(n));
      EXPECT_TRUE(identical(want, y))
          << d.d0 << "x" << d.d1 << "x" << d.d2 << " at " << threads << " threads";
    }
  }
}

}  // namespace kiln_cpu_test
