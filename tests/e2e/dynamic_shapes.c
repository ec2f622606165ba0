/* Data-dependent output sizes through the C API (docs/dynamic-shapes.md): a model with NonZero
   and Unique (made by artifact_test.sh, prefix "dyn") reports each output's bound through
   output_shape/output_bytes and its run-time shape after each run. Exits non-zero on failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

static int failures = 0;
#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

static int same(const int64_t* a, const int64_t* b, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != b[i]) return 0;
  return 1;
}

int main(void) {
  const int nz = dyn_output_index("nz"), y = dyn_output_index("y"),
            counts = dyn_output_index("counts"), inv = dyn_output_index("inv");
  CHECK(nz >= 0 && y >= 0 && counts >= 0 && inv >= 0);
  /* The static signature gives the bound: NonZero of 6 elements, at most 6 unique values. */
  const int64_t nz_bound[2] = {1, 6};
  CHECK(dyn_output_rank(nz) == 2 && same(dyn_output_shape(nz), nz_bound, 2));
  CHECK(dyn_output_bytes(nz) == 48 && dyn_output_bytes(y) == 24);
  dyn_context* ctx = NULL;
  CHECK(dyn_create(&ctx, NULL, 0) == KILN_OK);
  if (!ctx) return 1;
  /* Before any run: the bound. */
  CHECK(same(dyn_output_runtime_shape(ctx, nz), nz_bound, 2));
  CHECK(dyn_output_runtime_bytes(ctx, nz) == 48);
  CHECK(dyn_output_runtime_shape(ctx, -1) == NULL && dyn_output_runtime_shape(NULL, 0) == NULL);
  CHECK(dyn_output_runtime_bytes(ctx, 99) == 0);

  const float x1[6] = {0, 3, 0, 3, 1, 0};
  CHECK(dyn_set_input(ctx, 0, x1, sizeof x1) == KILN_OK);
  CHECK(dyn_run(ctx) == KILN_OK);
  const int64_t nz1[2] = {1, 3}, y1[1] = {3}, inv1[1] = {6};
  CHECK(same(dyn_output_runtime_shape(ctx, nz), nz1, 2));
  CHECK(dyn_output_runtime_bytes(ctx, nz) == 24);
  CHECK(same(dyn_output_runtime_shape(ctx, y), y1, 1));
  CHECK(same(dyn_output_runtime_shape(ctx, inv), inv1, 1));  /* static: always its shape */
  CHECK(dyn_output_runtime_bytes(ctx, inv) == 48);
  const int64_t* nzv = (const int64_t*)dyn_output_buffer(ctx, nz);
  const float* yv = (const float*)dyn_output_buffer(ctx, y);
  const int64_t* cv = (const int64_t*)dyn_output_buffer(ctx, counts);
  const int64_t nz1v[6] = {1, 3, 4, 0, 0, 0}, c1v[6] = {3, 1, 2, 0, 0, 0};
  CHECK(same(nzv, nz1v, 6)); /* packed, the rest of the bound zeroed */
  CHECK(yv[0] == 0.0f && yv[1] == 1.0f && yv[2] == 3.0f && yv[3] == 0.0f);
  CHECK(same(cv, c1v, 6));

  /* Another input: the run-time shapes follow the data. */
  const float x2[6] = {6, 5, 4, 3, 2, 1};
  CHECK(dyn_set_input(ctx, 0, x2, sizeof x2) == KILN_OK);
  CHECK(dyn_run(ctx) == KILN_OK);
  const int64_t y2[1] = {6};
  CHECK(same(dyn_output_runtime_shape(ctx, nz), nz_bound, 2));
  CHECK(same(dyn_output_runtime_shape(ctx, y), y2, 1));
  CHECK(dyn_output_runtime_bytes(ctx, y) == 24);
  dyn_destroy(ctx);
  if (failures) return 1;
  printf("ok: data-dependent output sizes through the C API\n");
  return 0;
}
