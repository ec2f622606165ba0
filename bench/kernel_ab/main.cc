// The driver of bench/kernel_ab.py: two versions of kiln's GEMM drivers and NHWC depthwise conv
// (variant.cc compiled as kab_A and kab_B), timed in alternation on the same shapes in one
// process.
//
//   kernel_ab ROUNDS THREADS COLD_MB SHAPE...    SHAPE: M,N,K,act,driver (act 0 | 1 = Clip(0, 6),
//                                                driver r = A read in place, p = A packed), or
//                                                dw:C,H,W,S (depthwise 3x3, pad 1, stride S,
//                                                bias, Clip(0, 6), on [1, H, W, C])
//
// Per shape and round: A's time and B's, A first in even rounds and B in odd ones (each a batch of
// about 1 ms of calls at 1 thread). Prints per shape both medians and the median of the rounds'
// ratios B/A, and whether the two outputs are bit-identical. COLD_MB > 0: each version rotates over
// its own copies of the packed weights, COLD_MB MB of them, so neither reads the copy the other
// just brought into cache.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#define KAB_DECLARE(NS)                                                                          \
  namespace NS {                                                                                 \
  void start_pool(int threads);                                                                  \
  void* setup(int64_t M, int64_t N, int64_t K, const float* b, int copies);                      \
  void release(void* h);                                                                         \
  double run(void* h, bool rowa, const float* a, float* c, const float* bias, int act, int reps, \
             int threads);                                                                       \
  void* setup_dw(int64_t C, int64_t H, int64_t W, int64_t S, const float* w_oihw);               \
  void release_dw(void* h);                                                                      \
  double run_dw(void* h, const float* x, float* y, const float* bias, int reps, int threads);    \
  }
KAB_DECLARE(kab_A)
KAB_DECLARE(kab_B)

namespace {

struct Shape {
  int64_t M, N, K;
  int act;
  bool rowa;
};

/// A depthwise conv's shape (dw:C,H,W,S).
struct DwShape {
  int64_t C, H, W, S;
};

/// With threads: both versions' workers on CPUs 1.. (they inherit the affinity of the thread
/// that starts them), the timing thread alone on CPU 0. Left to the scheduler, a worker now
/// and then shared the timing thread's CPU for a while, and a whole shape ran at half speed.
void start_pools(int threads) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 2 || cpus < 2) return;
  cpu_set_t workers, caller;
  CPU_ZERO(&workers);
  CPU_ZERO(&caller);
  for (long c = 1; c < cpus && c < CPU_SETSIZE; ++c) CPU_SET(int(c), &workers);
  CPU_SET(0, &caller);
  sched_setaffinity(0, sizeof workers, &workers);
  kab_A::start_pool(threads);
  kab_B::start_pool(threads);
  sched_setaffinity(0, sizeof caller, &caller);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Medians of A's and B's batch times and of the rounds' ratios B/A.
struct Timing {
  double a, b, ratio;
};

/// Rounds of A and B, each first in turn: run_a(reps) and run_b(reps) time reps calls of their
/// version. Before each timed batch an untimed one of the same version: its code and pages, and
/// with threads its pool, are then warm (an idle worker sleeps, and on a VM a sleeping vCPU can
/// take milliseconds to wake; a job does not wait for a worker that has not joined, so one untimed
/// call can end before the worker is up). With threads, a pause after each batch as well, long
/// enough for that version's worker to stop spinning and sleep: two pools spinning on one vCPU
/// share it by time slices.
template <class RunA, class RunB>
Timing alternate(int rounds, int threads, int reps, RunA run_a, RunB run_b) {
  const int warm = threads > 1 ? reps : 1;
  auto settle = [&] {
    if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  std::vector<double> ta, tb, ratio;
  auto time_a = [&] {
    run_a(warm);
    const double t = run_a(reps);
    settle();
    return t;
  };
  auto time_b = [&] {
    run_b(warm);
    const double t = run_b(reps);
    settle();
    return t;
  };
  for (int r = 0; r < rounds; ++r) {
    // Odd rounds run B first, so neither version always follows the other.
    double x, y;
    if (r % 2 == 0) {
      x = time_a();
      y = time_b();
    } else {
      y = time_b();
      x = time_a();
    }
    ta.push_back(x);
    tb.push_back(y);
    ratio.push_back(y / x);
  }
  return Timing{median(ta), median(tb), median(ratio)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: kernel_ab ROUNDS THREADS COLD_MB M,N,K,act,r|p ...\n");
    return 1;
  }
  const int rounds = std::max(1, std::atoi(argv[1]));
  const int threads = std::max(1, std::atoi(argv[2]));
  const int64_t cold_mb = std::atoll(argv[3]);
  start_pools(threads);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  double total_a = 0, total_b = 0;
  bool all_same = true;
  std::printf("%-22s %10s %8s %10s %8s %7s\n", "M x N x K (act, A)", "A us", "GFLOP/s", "B us",
              "GFLOP/s", "B/A");
  auto report = [&](const std::string& name, double flops, const Timing& t, bool same) {
    all_same = all_same && same;
    total_a += t.a;
    total_b += t.b;
    std::printf("%-22s %10.1f %8.1f %10.1f %8.1f %7.3f%s\n", name.c_str(), t.a * 1e6,
                flops / t.a * 1e-9, t.b * 1e6, flops / t.b * 1e-9, t.ratio,
                same ? "" : "  outputs differ");
  };
  auto randoms = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
  };
  for (int i = 4; i < argc; ++i) {
    DwShape dw{};
    if (std::strncmp(argv[i], "dw:", 3) == 0) {
      if (std::sscanf(argv[i] + 3, "%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64, &dw.C, &dw.H,
                      &dw.W, &dw.S) != 4 ||
          dw.C < 1 || dw.H < 1 || dw.W < 1 || dw.S < 1 || dw.S > 2) {
        std::fprintf(stderr, "kernel_ab: bad shape '%s' (want dw:C,H,W,S with S 1 or 2)\n",
                     argv[i]);
        return 1;
      }
      const std::vector<float> x = randoms(dw.H * dw.W * dw.C), w = randoms(9 * dw.C),
                               bias = randoms(dw.C);
      const int64_t out = ((dw.H - 1) / dw.S + 1) * ((dw.W - 1) / dw.S + 1) * dw.C;
      std::vector<float> ya(static_cast<size_t>(out)), yb(ya.size());
      void* ha = kab_A::setup_dw(dw.C, dw.H, dw.W, dw.S, w.data());
      void* hb = kab_B::setup_dw(dw.C, dw.H, dw.W, dw.S, w.data());
      const double flops = 18.0 * double(out);
      const int reps = std::max(2, int(5e7 / flops));  // about 1 ms a batch at 1 thread
      const Timing t = alternate(
          rounds, threads, reps,
          [&](int n) { return kab_A::run_dw(ha, x.data(), ya.data(), bias.data(), n, threads); },
          [&](int n) { return kab_B::run_dw(hb, x.data(), yb.data(), bias.data(), n, threads); });
      kab_A::release_dw(ha);
      kab_B::release_dw(hb);
      report("dw " + std::to_string(dw.C) + "x" + std::to_string(dw.H) + "x" +
                 std::to_string(dw.W) + " s" + std::to_string(dw.S),
             flops, t, std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)) == 0);
      continue;
    }
    Shape s{};
    char d = 'r';
    if (std::sscanf(argv[i], "%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%d,%c", &s.M, &s.N, &s.K, &s.act,
                    &d) != 5 ||
        s.M < 1 || s.N < 1 || s.K < 1 || (d != 'r' && d != 'p')) {
      std::fprintf(stderr, "kernel_ab: bad shape '%s' (want M,N,K,act,r|p)\n", argv[i]);
      return 1;
    }
    s.rowa = d == 'r';
    const std::vector<float> a = randoms(s.M * s.K), b = randoms(s.K * s.N), bias = randoms(s.N);
    std::vector<float> ca(size_t(s.M * s.N)), cb(ca.size());
    const int64_t wbytes = s.K * s.N * 4;
    const int copies = cold_mb > 0 ? int(std::max<int64_t>(2, (cold_mb << 20) / wbytes)) : 1;
    void* ha = kab_A::setup(s.M, s.N, s.K, b.data(), copies);
    void* hb = kab_B::setup(s.M, s.N, s.K, b.data(), copies);
    const double flops = 2.0 * double(s.M) * double(s.N) * double(s.K);
    const int reps = std::max(2, int(2e8 / flops));  // about 1 ms a batch at 1 thread
    const Timing t = alternate(
        rounds, threads, reps,
        [&](int n) {
          return kab_A::run(ha, s.rowa, a.data(), ca.data(), bias.data(), s.act, n, threads);
        },
        [&](int n) {
          return kab_B::run(hb, s.rowa, a.data(), cb.data(), bias.data(), s.act, n, threads);
        });
    kab_A::release(ha);
    kab_B::release(hb);
    report(std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) + " (" +
               std::to_string(s.act) + ", " + d + ")",
           flops, t, std::memcmp(ca.data(), cb.data(), ca.size() * sizeof(float)) == 0);
  }
  std::printf("total: A %.1f us, B %.1f us, B/A %.3f; outputs %s\n", total_a * 1e6, total_b * 1e6,
              total_b / total_a, all_same ? "bit-identical" : "DIFFER");
  return 0;
}
