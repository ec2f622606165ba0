/* The generated C API under misuse (model prefix m): every call with a NULL pointer, a wrong
   index, name, byte size or arena, or out of order returns its documented status and never
   crashes; a run that follows the errors still gives the right answer. Exits 1 on a deviation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int failures = 0;
#define EXPECT_EQ(got, want)                                                          \
  do {                                                                                \
    long long g_ = (long long)(got), w_ = (long long)(want);                          \
    if (g_ != w_) {                                                                   \
      fprintf(stderr, "line %d: %s gave %lld, expected %lld\n", __LINE__, #got, g_, w_); \
      ++failures;                                                                     \
    }                                                                                 \
  } while (0)

int main(void) {
  float image[28 * 28] = {0};
  float logits[5];
  const size_t in_bytes = sizeof image, out_bytes = sizeof logits;

  /* Signature queries with bad indices and names. */
  EXPECT_EQ(m_num_inputs(), 1);
  EXPECT_EQ(m_input_name(-1) == NULL, 1);
  EXPECT_EQ(m_input_name(1) == NULL, 1);
  EXPECT_EQ(m_output_shape(7) == NULL, 1);
  EXPECT_EQ(m_input_bytes(-3), 0);
  EXPECT_EQ(m_input_rank(9), -1);
  EXPECT_EQ(m_input_dtype(9), 0);
  EXPECT_EQ(m_input_index(NULL), -1);
  EXPECT_EQ(m_input_index("no such input"), -1);
  EXPECT_EQ(m_output_index("image"), -1);

  /* create: NULL out, too small or misaligned arena. */
  EXPECT_EQ(m_create(NULL, NULL, 0), KILN_ERR_NULL);
  m_context* ctx = (m_context*)0x1;
  size_t arena_bytes = m_arena_bytes();
  unsigned char* raw = malloc(arena_bytes + 128);
  unsigned char* aligned = raw + (64 - ((uintptr_t)raw % 64)) % 64;
  EXPECT_EQ(m_create(&ctx, aligned, arena_bytes - 1), KILN_ERR_ARENA);
  EXPECT_EQ(ctx == NULL, 1); /* a failed create leaves NULL behind */
  EXPECT_EQ(m_create(&ctx, aligned + 1, arena_bytes), KILN_ERR_ARENA);
  m_destroy(NULL); /* no-op */

  /* Calls on a NULL context. */
  EXPECT_EQ(m_run(NULL), KILN_ERR_NULL);
  EXPECT_EQ(m_set_input(NULL, 0, image, in_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_get_output(NULL, 0, logits, out_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_bind_input(NULL, 0, image, in_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_output_buffer(NULL, 0) == NULL, 1);

  EXPECT_EQ(m_create(&ctx, aligned, arena_bytes), KILN_OK);
  /* Run before the input is set. */
  EXPECT_EQ(m_run(ctx), KILN_ERR_UNBOUND);
  /* Wrong index, size, name, NULL data. */
  EXPECT_EQ(m_set_input(ctx, 1, image, in_bytes), KILN_ERR_INDEX);
  EXPECT_EQ(m_set_input(ctx, -1, image, in_bytes), KILN_ERR_INDEX);
  EXPECT_EQ(m_set_input(ctx, 0, image, in_bytes - 4), KILN_ERR_SIZE);
  EXPECT_EQ(m_set_input(ctx, 0, NULL, in_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_set_input_by_name(ctx, "imagex", image, in_bytes), KILN_ERR_NAME);
  EXPECT_EQ(m_set_input_by_name(ctx, NULL, image, in_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_bind_input(ctx, 0, NULL, in_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_bind_input(ctx, 0, image, 1), KILN_ERR_SIZE);
  EXPECT_EQ(m_run(ctx), KILN_ERR_UNBOUND); /* none of that bound the input */
  EXPECT_EQ(m_get_output(ctx, 0, logits, out_bytes + 4), KILN_ERR_SIZE);
  EXPECT_EQ(m_get_output(ctx, 2, logits, out_bytes), KILN_ERR_INDEX);
  EXPECT_EQ(m_get_output(ctx, 0, NULL, out_bytes), KILN_ERR_NULL);
  EXPECT_EQ(m_get_output_by_name(ctx, "nope", logits, out_bytes), KILN_ERR_NAME);
  EXPECT_EQ(m_bind_output(ctx, 0, logits, 3), KILN_ERR_SIZE);
  EXPECT_EQ(m_bind_output(ctx, 5, logits, out_bytes), KILN_ERR_INDEX);

  /* After all that, a proper run works and matches a fresh context. */
  for (int i = 0; i < 28 * 28; ++i) image[i] = (float)(i % 7) / 7.0f;
  EXPECT_EQ(m_set_input(ctx, 0, image, in_bytes), KILN_OK);
  EXPECT_EQ(m_run(ctx), KILN_OK);
  EXPECT_EQ(m_get_output(ctx, 0, logits, out_bytes), KILN_OK);
  m_context* fresh = NULL;
  float again[5];
  EXPECT_EQ(m_create(&fresh, NULL, 0), KILN_OK);
  EXPECT_EQ(m_set_input_by_name(fresh, "image", image, in_bytes), KILN_OK);
  EXPECT_EQ(m_bind_output(fresh, 0, again, out_bytes), KILN_OK);
  EXPECT_EQ(m_run(fresh), KILN_OK);
  EXPECT_EQ(memcmp(logits, again, out_bytes), 0);
  m_destroy(fresh);
  m_destroy(ctx);
  free(raw);

  /* Every status has a description, unknown ones too. */
  for (int s = 0; s <= 11; ++s) EXPECT_EQ(m_status_string(s) != NULL, 1);
  EXPECT_EQ(strcmp(m_status_string(12345), "unknown status"), 0);
  if (failures) return fprintf(stderr, "FAIL: %d API misuse checks\n", failures), 1;
  printf("ok: API misuse gives the documented status codes\n");
  return 0;
}
