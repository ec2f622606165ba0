// Tests of the reference Gemm/MatMul kernels (kernels/ref/gemm.h): every transpose and
// broadcast, batched MatMul and the integer/quantized variants, against naive loops in double.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels_nn_test_util.h"
#include "ref/gemm.h"

namespace {

using namespace kernels_test;

// ============================== gemm / matmul ==============================

TEST(KernelsNnGemm, AllTransposesAndBroadcasts) {
  std::mt19937 g(17);
  struct Shape {
    int64_t M, N, K;
  };
  for (Shape sh :
       {Shape{3, 5, 4}, Shape{1, 1, 1}, Shape{7, 2, 13}, Shape{4, 6, 1}, Shape{2, 3, 0}}) {
    const int64_t M = sh.M, N = sh.N, K = sh.K;
    auto a = randomVec(g, M * K), b = randomVec(g, K * N), cFull = randomVec(g, M * N);
    struct CForm {
      int64_t sm, sn;
    };
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (CForm cf : {CForm{N, 1}, CForm{0, 1}, CForm{1, 0}, CForm{0, 0}}) {
          for (float alpha : {1.f, 0.5f}) {
            for (float beta : {1.f, -2.f, 0.f}) {
              std::vector<float> y(size_t(M * N));
              kiln_ref::gemm(M, N, K, ta, tb, alpha, a.data(), b.data(), beta, cFull.data(), cf.sm,
                             cf.sn, y.data());
              std::vector<double> want;
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                  double acc = 0;
                  for (int64_t k = 0; k < K; ++k)
                    acc += double(ta ? a[size_t(k * M + i)] : a[size_t(i * K + k)]) *
                           (tb ? b[size_t(j * K + k)] : b[size_t(k * N + j)]);
                  want.push_back(alpha * acc + beta * cFull[size_t(i * cf.sm + j * cf.sn)]);
                }
              expectClose(y, want, 1e-6, "gemm");
            }
          }
        }
    std::vector<float> y(size_t(M * N));  // no C
    kiln_ref::gemm(M, N, K, false, false, 2.f, a.data(), b.data(), 1.f,
                   static_cast<const float*>(nullptr), 0, 0, y.data());
    std::vector<double> want;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(a[size_t(i * K + k)]) * b[size_t(k * N + j)];
        want.push_back(2 * acc);
      }
    expectClose(y, want, 1e-6, "gemm without C");
  }
  // Integer Gemm: exact with alpha = beta = 1, wraps on overflow.
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c = {100, 200}, y(4);
  kiln_ref::gemm(2, 2, 2, false, false, 1.f, a.data(), b.data(), 1.f, c.data(), 0, 1, y.data());
  EXPECT_EQ(y, (std::vector<int32_t>{119, 222, 143, 250}));
  std::vector<int32_t> big = {std::numeric_limits<int32_t>::max()}, two = {2}, yb(1);
  kiln_ref::gemm(1, 1, 1, false, false, 1.f, big.data(), two.data(), 0.f,
                 static_cast<const int32_t*>(nullptr), 0, 0, yb.data());
  EXPECT_EQ(yb[0], -2);
}

TEST(KernelsNnGemm, BatchedMatMulBroadcasting) {
  std::mt19937 g(18);
  // a [2, 1, 3, 4] @ b [3, 4, 5] -> [2, 3, 3, 5]; a broadcasts over dim 1, b over dim 0.
  const int64_t M = 3, K = 4, N = 5;
  auto a = randomVec(g, 2 * M * K), b = randomVec(g, 3 * K * N);
  const Dims batch = {2, 3}, as = {M * K, 0}, bs = {0, K * N};
  std::vector<float> y(size_t(6 * M * N));
  kiln_ref::matmul(2, batch.data(), as.data(), bs.data(), M, N, K, a.data(), b.data(), y.data());
  std::vector<double> want;
  for (int64_t b0 = 0; b0 < 2; ++b0)
    for (int64_t b1 = 0; b1 < 3; ++b1)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += double(a[size_t(b0 * M * K + i * K + k)]) * b[size_t(b1 * K * N + k * N + j)];
          want.push_back(acc);
        }
  expectClose(y, want, 1e-6, "batched");
  // Plain 2-D and 1-D operands (vector @ matrix: M = 1; matrix @ vector: N = 1).
  std::vector<float> v = {1, 2, 3, 4}, m = {1, 0, 0, 1, 1, 1, 2, 2}, out(2);
  kiln_ref::matmul(0, nullptr, nullptr, nullptr, 1, 2, 4, v.data(), m.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{1 + 3 + 8, 2 + 3 + 8}));
  std::vector<float> mt = {1, 0, 1, 2, 0, 1, 1, 2}, out2(2);
  kiln_ref::matmul(0, nullptr, nullptr, nullptr, 2, 1, 4, mt.data(), v.data(), out2.data());
  EXPECT_EQ(out2, (std::vector<float>{1 + 3 + 8, 2 + 3 + 8}));
  // Integer MatMul.
  std::vector<int64_t> ai = {1, -2, 3, 4}, bi = {5, 6, 7, 8}, yi(4);
  kiln_ref::matmul(0, nullptr, nullptr, nullptr, 2, 2, 2, ai.data(), bi.data(), yi.data());
  EXPECT_EQ(yi, (std::vector<int64_t>{-9, -10, 43, 50}));
}

TEST(KernelsNnGemm, MatMulIntegerAndQLinearMatMul) {
  // test_matmulinteger.
  std::vector<uint8_t> A = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, B = {1, 4, 2, 5, 3, 6};
  const uint8_t az = 12, bz = 0;
  std::vector<int32_t> Y(8);
  kiln_ref::matmul_integer(0, nullptr, nullptr, nullptr, 4, 2, 3, A.data(), &az, 0, B.data(), &bz,
                           0, Y.data());
  EXPECT_EQ(Y, (std::vector<int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
  // Per-row a / per-column b zero points, int8 x uint8, batched, vs naive.
  std::mt19937 g(19);
  const int64_t M = 3, N = 4, K = 5;
  auto ai = randomInts(g, 2 * M * K, -128, 127), bi = randomInts(g, K * N, 0, 255);
  auto azi = randomInts(g, M, -128, 127), bzi = randomInts(g, N, 0, 255);
  std::vector<int8_t> a8(ai.begin(), ai.end()), az8(azi.begin(), azi.end());
  std::vector<uint8_t> b8(bi.begin(), bi.end()), bz8(bzi.begin(), bzi.end());
  const Dims batch = {2}, as = {M * K}, bs = {0};
  std::vector<int32_t> y(size_t(2 * M * N)), want;
  kiln_ref::matmul_integer(1, batch.data(), as.data(), bs.data(), M, N, K, a8.data(), az8.data(), 1,
                           b8.data(), bz8.data(), 1, y.data());
  for (int64_t bt = 0; bt < 2; ++bt)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += int64_t(ai[size_t(bt * M * K + i * K + k)] - azi[size_t(i)]) *
                 (bi[size_t(k * N + j)] - bzi[size_t(j)]);
        want.push_back(int32_t(acc));
      }
  EXPECT_EQ(y, want);
  // test_qlinearmatmul_2D and _3D.
  std::vector<uint8_t> qa = {208, 236, 0, 238, 3, 214, 255, 29},
                       qb = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
  const float bScale = 0.00705f;
  const uint8_t bZero = 114;
  std::vector<uint8_t> qy(6);
  kiln_ref::qlinear_matmul(0, nullptr, nullptr, nullptr, 2, 3, 4, qa.data(), 0.0066f, uint8_t(113),
                           qb.data(), &bScale, &bZero, 0, 0.0107f, uint8_t(118), qy.data());
  EXPECT_EQ(qy, (std::vector<uint8_t>{168, 115, 255, 1, 66, 151}));
  std::vector<uint8_t> qa3(qa), qb3(qb), qy3(12);
  qa3.insert(qa3.end(), qa.begin(), qa.end());
  qb3.insert(qb3.end(), qb.begin(), qb.end());
  const Dims b3 = {2}, as3 = {8}, bs3 = {12};
  kiln_ref::qlinear_matmul(1, b3.data(), as3.data(), bs3.data(), 2, 3, 4, qa3.data(), 0.0066f,
                           uint8_t(113), qb3.data(), &bScale, &bZero, 0, 0.0107f, uint8_t(118),
                           qy3.data());
  EXPECT_EQ(qy3, (std::vector<uint8_t>{168, 115, 255, 1, 66, 151, 168, 115, 255, 1, 66, 151}));
  // Requantization rounds half to even and saturates.
  EXPECT_EQ(kiln_ref::requantize<int8_t>(5, 0.5f, int8_t(0)), 2);
  EXPECT_EQ(kiln_ref::requantize<int8_t>(7, 0.5f, int8_t(0)), 4);
  EXPECT_EQ(kiln_ref::requantize<int8_t>(-1000, 1.f, int8_t(3)), -128);
  EXPECT_EQ(kiln_ref::requantize<uint8_t>(1000, 1.f, uint8_t(3)), 255);
}

}  // namespace
