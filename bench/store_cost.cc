// What a 512-bit store costs a loop that keeps the FMA pipes busy (session 50): a register-only
// loop of 16 independent vfmadd231ps (one iteration = 16 fma-cycles when the FMA pipes are the
// limit) with 0, 2, 4 or 8 zmm stores added, next to the same with vmulps, with vaddps, and
// with each multiply-add split into a vmulps and a vaddps. On the Zen 4 hosts of sessions 46-50
// a store added ~1.8 cycles to an FMA loop but nothing to a vmulps or vaddps one: a kernel that
// stores one vector per 9 fmas (a 3x3 depthwise conv) or per 16 (a K = 16 GEMM) pays 20% or
// 11% for its stores. Prints cycles per iteration at the clock that the fma-only loop implies
// (16 cycles); figures under "+N st" minus "none" are the stores' cost.
//
// Then a GEMM tile's shape (session 51): 24 accumulators, a first k step, K - 1 fma steps and 24
// stores, the first step an fma into zeroed accumulators (as gemm.h's micro) or a vmulps. On the
// Zen 4 of session 51 the stores cost a K = 16 tile 30-55 cycles after an fma first step and 0-10
// after a vmulps one (the stores overlap the next tile's multiplies): 412-436 -> 383-392 cycles.
// In gemm.h's micro the multiply gained nothing measurable (docs/targets.md, session 51).
//
// Not built by default: ninja -C build kiln_store_cost && build/bench/kiln_store_cost
#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

#define KSC_FMA(i) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #i "\n"
#define KSC_MUL(i) "vmulps %%zmm30, %%zmm31, %%zmm" #i "\n"
#define KSC_ADD(i) "vaddps %%zmm30, %%zmm31, %%zmm" #i "\n"
#define KSC_MAC(i, t) \
  "vmulps %%zmm30, %%zmm31, %%zmm" #t "\nvaddps %%zmm" #t ", %%zmm" #i ", %%zmm" #i "\n"
#define KSC_16(op)                                                                               \
  op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7) op(8) op(9) op(10) op(11) op(12) op(13) op(14) \
      op(15)
// clang-format off
#define KSC_MAC16                                                                                 \
  KSC_MAC(0, 16) KSC_MAC(1, 17) KSC_MAC(2, 18) KSC_MAC(3, 19) KSC_MAC(4, 20) KSC_MAC(5, 21)       \
  KSC_MAC(6, 22) KSC_MAC(7, 23) KSC_MAC(8, 16) KSC_MAC(9, 17) KSC_MAC(10, 18) KSC_MAC(11, 19)     \
  KSC_MAC(12, 20) KSC_MAC(13, 21) KSC_MAC(14, 22) KSC_MAC(15, 23)
// clang-format on
#define KSC_ST(i, o) "vmovups %%zmm" #i ", " #o "(%0)\n"
#define KSC_ST2 KSC_ST(24, 0) KSC_ST(25, 64)
#define KSC_ST4 KSC_ST2 KSC_ST(26, 128) KSC_ST(27, 192)
#define KSC_ST8 KSC_ST4 KSC_ST(28, 256) KSC_ST(29, 320) KSC_ST(24, 384) KSC_ST(25, 448)
#define KSC_CLOBBER                                                                             \
  "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",     \
      "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", \
      "xmm20", "xmm21", "xmm22", "xmm23"

enum Op { kFma, kMul, kAdd, kMulAdd };

/// `n` iterations of 16 operations of kind `op` and `stores` stores.
template <Op op, int stores>
__attribute__((noinline)) void loop(long n, float* buf) {
#define KSC_BODY(ops)                                                            \
  if constexpr (stores == 0) asm volatile(ops ::"r"(buf) : KSC_CLOBBER);         \
  if constexpr (stores == 2) asm volatile(ops KSC_ST2 ::"r"(buf) : KSC_CLOBBER); \
  if constexpr (stores == 4) asm volatile(ops KSC_ST4 ::"r"(buf) : KSC_CLOBBER); \
  if constexpr (stores == 8) asm volatile(ops KSC_ST8 ::"r"(buf) : KSC_CLOBBER);
  for (long i = 0; i < n; ++i) {
    if constexpr (op == kFma) {
      KSC_BODY(KSC_16(KSC_FMA))
    } else if constexpr (op == kMul) {
      KSC_BODY(KSC_16(KSC_MUL))
    } else if constexpr (op == kAdd) {
      KSC_BODY(KSC_16(KSC_ADD))
    } else {
      KSC_BODY(KSC_MAC16)
    }
  }
#undef KSC_BODY
}

/// Median seconds per iteration over 7 timings.
template <Op op, int stores>
double seconds(float* buf) {
  constexpr long kIters = 10'000'000;
  double t[7];
  loop<op, stores>(kIters / 10, buf);
  for (double& s : t) {
    const auto t0 = std::chrono::steady_clock::now();
    loop<op, stores>(kIters, buf);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kIters;
  }
  std::sort(t, t + 7);
  return t[3];
}

template <Op op>
void row(const char* name, float* buf, double cycle) {
  std::printf("%-22s %6.1f %6.1f %6.1f %6.1f\n", name, seconds<op, 0>(buf) / cycle,
              seconds<op, 2>(buf) / cycle, seconds<op, 4>(buf) / cycle,
              seconds<op, 8>(buf) / cycle);
}

#define KSC_R24(m)                                                                            \
  m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15) m(16) \
      m(17) m(18) m(19) m(20) m(21) m(22) m(23)
#define KSC_ZFMA(i) "vxorps %%xmm" #i ", %%xmm" #i ", %%xmm" #i "\n" KSC_FMA(i)
#define KSC_TST(i) "vmovups %%zmm" #i ", " #i "*64(%0)\n"
#define KSC_CLOBBER24 KSC_CLOBBER, "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29"

/// `n` tiles of 24 accumulators: a first step (zeroed fma, or vmulps), K - 1 fma steps, and 24
/// stores when `store`.
template <bool mul_first, int K, bool store>
__attribute__((noinline)) void tiles(long n, float* buf) {
  for (long i = 0; i < n; ++i) {
    if constexpr (mul_first)
      asm volatile(KSC_R24(KSC_MUL)::"r"(buf) : KSC_CLOBBER24);
    else
      asm volatile(KSC_R24(KSC_ZFMA)::"r"(buf) : KSC_CLOBBER24);
    for (int k = 1; k < K; ++k) asm volatile(KSC_R24(KSC_FMA)::"r"(buf) : KSC_CLOBBER24);
    if constexpr (store) asm volatile(KSC_R24(KSC_TST)::"r"(buf) : KSC_CLOBBER24);
  }
}

/// Median seconds per tile over 7 timings.
template <bool mul_first, int K, bool store>
double tile_seconds(float* buf) {
  constexpr long kTiles = 200'000;
  double t[7];
  tiles<mul_first, K, store>(kTiles / 10, buf);
  for (double& s : t) {
    const auto t0 = std::chrono::steady_clock::now();
    tiles<mul_first, K, store>(kTiles, buf);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kTiles;
  }
  std::sort(t, t + 7);
  return t[3];
}

template <int K>
void tile_row(float* buf, double cycle) {
  std::printf("K = %2d (%4d fmas)     %6.1f %6.1f %6.1f %6.1f\n", K, 24 * K,
              tile_seconds<false, K, false>(buf) / cycle, tile_seconds<false, K, true>(buf) / cycle,
              tile_seconds<true, K, false>(buf) / cycle, tile_seconds<true, K, true>(buf) / cycle);
}

}  // namespace

int main() {
  alignas(64) static float buf[128];
  // One cycle: a 16-fma iteration is 16 of them where a 512-bit fma issues once a cycle.
  const double cycle = seconds<kFma, 0>(buf) / 16;
  std::printf("cycles per iteration (%.2f GHz from the fma-only loop)\n", 1e-9 / cycle);
  std::printf("%-22s %6s %6s %6s %6s\n", "16 ops of", "none", "+2 st", "+4 st", "+8 st");
  row<kFma>("vfmadd231ps", buf, cycle);
  row<kMul>("vmulps", buf, cycle);
  row<kAdd>("vaddps", buf, cycle);
  row<kMulAdd>("vmulps + vaddps", buf, cycle);
  alignas(64) static float tile_buf[24 * 16];
  std::printf(
      "\ncycles per 24-accumulator tile: first step fma / vmulps, without and with stores\n");
  std::printf("%-22s %6s %6s %6s %6s\n", "", "fma", "+24 st", "vmulps", "+24 st");
  tile_row<4>(tile_buf, cycle);
  tile_row<8>(tile_buf, cycle);
  tile_row<16>(tile_buf, cycle);
  tile_row<27>(tile_buf, cycle);
  tile_row<32>(tile_buf, cycle);
  return 0;
}
