/* Runs a compiled model (prefix m) on a caller arena of exactly m_arena_bytes() that ends at an
   inaccessible page, so any write or read past the planned arena faults; built with
   AddressSanitizer by tests/memory/check_arena_bound.sh. The outputs must equal, bit for bit,
   those of a context that allocates its own arena. Exits 1 with a message on any failure. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model.h"

static int run_once(m_context* ctx, unsigned char** outputs) {
  for (int i = 0; i < m_num_inputs(); ++i) {
    size_t bytes = m_input_bytes(i);
    unsigned char* data = malloc(bytes ? bytes : 1);
    if (!data) return KILN_ERR_ALLOC;
    /* Small non-zero floats for f32 inputs, a byte pattern otherwise: deterministic. */
    if (m_input_dtype(i) == KILN_DTYPE_F32)
      for (size_t k = 0; k < bytes / 4; ++k) ((float*)data)[k] = (float)((k * 37) % 101) / 101.0f - 0.5f;
    else
      for (size_t k = 0; k < bytes; ++k) data[k] = (unsigned char)(k % 3 == 0);
    int rc = m_set_input(ctx, i, data, bytes);
    free(data);
    if (rc != KILN_OK) return rc;
  }
  int rc = m_run(ctx);
  for (int i = 0; rc == KILN_OK && i < m_num_outputs(); ++i) {
    outputs[i] = malloc(m_output_bytes(i) ? m_output_bytes(i) : 1);
    rc = outputs[i] ? m_get_output(ctx, i, outputs[i], m_output_bytes(i)) : KILN_ERR_ALLOC;
  }
  return rc;
}

int main(void) {
  size_t arena_bytes = m_arena_bytes();
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (arena_bytes + page - 1) / page * page;
  unsigned char* region = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED || mprotect(region + span, page, PROT_NONE) != 0)
    return fprintf(stderr, "guard_page: mmap/mprotect failed\n"), 1;
  /* The arena ends exactly at the guard page (arena sizes are multiples of 64). */
  unsigned char* arena = region + span - arena_bytes;
  m_context* guarded = NULL;
  m_context* plain = NULL;
  int rc = m_create(&guarded, arena, arena_bytes);
  if (rc == KILN_OK) rc = m_create(&plain, NULL, 0);
  if (rc != KILN_OK) return fprintf(stderr, "guard_page: create: %s\n", m_status_string(rc)), 1;
  unsigned char* a[64] = {0};
  unsigned char* b[64] = {0};
  if (m_num_outputs() > 64) return fprintf(stderr, "guard_page: too many outputs\n"), 1;
  rc = run_once(guarded, a);
  if (rc == KILN_OK) rc = run_once(plain, b);
  if (rc != KILN_OK) return fprintf(stderr, "guard_page: run: %s\n", m_status_string(rc)), 1;
  for (int i = 0; i < m_num_outputs(); ++i)
    if (memcmp(a[i], b[i], m_output_bytes(i)) != 0)
      return fprintf(stderr, "guard_page: output %d differs between the two arenas\n", i), 1;
  for (int i = 0; i < m_num_outputs(); ++i) {
    free(a[i]);
    free(b[i]);
  }
  m_destroy(guarded);
  m_destroy(plain);
  munmap(region, span + page);
  printf("ok: %zu-byte arena ending at a guard page, outputs identical\n", arena_bytes);
  return 0;
}
