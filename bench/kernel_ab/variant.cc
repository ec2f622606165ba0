// One version of kiln's GEMM drivers and NHWC depthwise conv for bench/kernel_ab.py, compiled
// twice into one binary:
// -DKAB_NS=kab_A -Dkiln_cpu=kiln_cpu_A -Dkiln_ref=kiln_ref_A against one copy of the kernel
// headers, and the same with B against the other, so the two versions never share a symbol.
// Each version packs its own weights (the packed layout may differ between versions).
#include <chrono>
#include <cstdint>
#include <vector>

#include "kiln_cpu/conv_nhwc.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/parallel.h"

namespace KAB_NS {

struct Product {
  int64_t M = 0, N = 0, K = 0;
  std::vector<std::vector<float>> copies;  // the packed weights, one or a rotation of copies
  size_t next = 0;
};

kiln_cpu::ThreadPool* pool(int threads) {
  static kiln_cpu::ThreadPool p;
  static int started = 0;
  if (threads > 1 && started != threads) {
    if (started) p.stop();
    p.start(threads);
    started = threads;
  }
  return threads > 1 ? &p : nullptr;
}

/// Starts this version's pool (its workers take the calling thread's CPU affinity).
void start_pool(int threads) {
  pool(threads);
}

/// b: K x N row-major. copies: how many copies of the packed weights to rotate over.
void* setup(int64_t M, int64_t N, int64_t K, const float* b, int copies) {
  auto* p = new Product;
  p->M = M;
  p->N = N;
  p->K = K;
  std::vector<float> packed(size_t(kiln_cpu::packed_b_floats(K, N)));
  kiln_cpu::pack_b_panels(b, K, N, packed.data());
  p->copies.assign(size_t(copies < 1 ? 1 : copies), packed);
  return p;
}

void release(void* h) {
  delete static_cast<Product*>(h);
}

template <class Act>
void once(Product& p, bool rowa, const float* a, float* c, const float* bias, Act act,
          float* scratch, int threads) {
  const float* w = p.copies[p.next].data();
  p.next = p.next + 1 < p.copies.size() ? p.next + 1 : 0;
  const auto e = kiln_cpu::make_epilogue(act, nullptr, bias, nullptr, 0);
  if (rowa)
    kiln_cpu::gemm_f32_rowa_packed_b(p.M, p.N, p.K, a, p.K, w, c, p.N, e, pool(threads));
  else
    kiln_cpu::gemm_f32_packed_b(p.M, p.N, p.K, a, p.K, w, c, p.N, e, scratch, pool(threads));
}

/// Seconds per call, over reps calls. act: 0 none, 1 Clip(0, 6). rowa: A read in place
/// (gemm_f32_rowa_packed_b), else packed at run time (gemm_f32_packed_b).
double run(void* h, bool rowa, const float* a, float* c, const float* bias, int act, int reps,
           int threads) {
  Product& p = *static_cast<Product*>(h);
  std::vector<float> scratch(rowa ? 0
                                  : size_t(kiln_cpu::gemm_f32_packed_b_scratch_floats(p.M, p.K)));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    if (act == 1)
      once(p, rowa, a, c, bias, kiln_ref::Clip<float>{0.0f, 6.0f}, scratch.data(), threads);
    else
      once(p, rowa, a, c, bias, kiln_ref::NoActivation{}, scratch.data(), threads);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

/// A depthwise 3x3 conv, pad 1, stride S, on NHWC data [1, H, W, C]: its packed filter.
struct Depthwise {
  kiln_cpu::Conv2dShape s{};
  std::vector<float> w;
};

/// w_oihw: ONNX's [C, 1, 3, 3] filter.
void* setup_dw(int64_t C, int64_t H, int64_t W, int64_t S, const float* w_oihw) {
  auto* d = new Depthwise;
  d->s = kiln_cpu::Conv2dShape{1, C, H, W, C, 3, 3, (H - 1) / S + 1, (W - 1) / S + 1,
                               S, S, 1, 1, 1, 1, C};
  d->w.resize(size_t(9 * C));
  kiln_cpu::depthwise_nhwc_pack_weights(d->s, w_oihw, d->w.data());
  return d;
}

void release_dw(void* h) {
  delete static_cast<Depthwise*>(h);
}

/// Seconds per call of the depthwise conv (bias, Clip(0, 6)) over reps calls.
double run_dw(void* h, const float* x, float* y, const float* bias, int reps, int threads) {
  const Depthwise& d = *static_cast<Depthwise*>(h);
  const auto e =
      kiln_cpu::make_epilogue(kiln_ref::Clip<float>{0.0f, 6.0f}, nullptr, nullptr, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i)
    kiln_cpu::depthwise_conv2d_nhwc_f32(d.s, x, d.w.data(), bias, y, e, pool(threads));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

}  // namespace KAB_NS
