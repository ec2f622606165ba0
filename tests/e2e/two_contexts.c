/* Two models in one program (prefixes m1_ and m2_, same network) and two contexts of m1 running
   concurrently on two threads, one on a caller-supplied arena: every run must give the bytes a
   lone single-threaded run gives for the same input. Exits 1 with a message on any mismatch. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m1/model.h"
#include "m2/model.h"

enum { kPixels = 28 * 28, kClasses = 5, kRuns = 200 };

static float g_images[2][kPixels];
static float g_expected[2][kClasses];

typedef struct {
  m1_context* ctx;
  int which;   /* which image this thread classifies */
  int failed;  /* set on a mismatch or an error */
} worker;

static void* work(void* arg) {
  worker* w = (worker*)arg;
  float logits[kClasses];
  for (int i = 0; i < kRuns && !w->failed; ++i) {
    int rc = m1_set_input(w->ctx, 0, g_images[w->which], sizeof g_images[0]);
    if (rc == KILN_OK) rc = m1_run(w->ctx);
    if (rc == KILN_OK) rc = m1_get_output(w->ctx, 0, logits, sizeof logits);
    if (rc != KILN_OK || memcmp(logits, g_expected[w->which], sizeof logits) != 0) w->failed = 1;
  }
  return NULL;
}

int main(void) {
  for (int k = 0; k < 2; ++k)
    for (int p = 0; p < kPixels; ++p) g_images[k][p] = (float)((p * (k + 3)) % 17) / 17.0f;

  /* References from model 2 (a separate copy of the code and weights). */
  m2_context* ref = NULL;
  if (m2_create(&ref, NULL, 0) != KILN_OK) return fprintf(stderr, "m2_create failed\n"), 1;
  for (int k = 0; k < 2; ++k) {
    if (m2_set_input(ref, 0, g_images[k], sizeof g_images[k]) != KILN_OK || m2_run(ref) != KILN_OK ||
        m2_get_output(ref, 0, g_expected[k], sizeof g_expected[k]) != KILN_OK)
      return fprintf(stderr, "m2 run failed\n"), 1;
  }
  m2_destroy(ref);
  if (memcmp(g_expected[0], g_expected[1], sizeof g_expected[0]) == 0)
    return fprintf(stderr, "the two test images give the same logits; the test cannot tell\n"), 1;

  /* Context 1 allocates its arena; context 2 runs on caller memory. */
  size_t bytes = m1_arena_bytes();
  void* arena = aligned_alloc(KILN_ALIGNMENT, (bytes + KILN_ALIGNMENT - 1) / KILN_ALIGNMENT * KILN_ALIGNMENT);
  if (!arena) return fprintf(stderr, "out of memory\n"), 1;
  if (bytes > 0 && m1_create(&(m1_context*){NULL}, arena, bytes - 1) != KILN_ERR_ARENA)
    return fprintf(stderr, "create accepted an arena one byte too small\n"), 1;
  worker w[2] = {{NULL, 0, 0}, {NULL, 1, 0}};
  if (m1_create(&w[0].ctx, NULL, 0) != KILN_OK || m1_create(&w[1].ctx, arena, bytes) != KILN_OK)
    return fprintf(stderr, "m1_create failed\n"), 1;
  pthread_t threads[2];
  for (int t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, work, &w[t]);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
  m1_destroy(w[0].ctx);
  m1_destroy(w[1].ctx);
  free(arena);
  if (w[0].failed || w[1].failed)
    return fprintf(stderr, "FAIL: concurrent runs differ from the lone run\n"), 1;
  printf("ok: two models linked together; 2 contexts x %d concurrent runs bit-identical\n", kRuns);
  return 0;
}
