/* A model compiled with several memory pools (prefix m), run on caller memory for every pool:
   outputs equal a context that allocates its pools; create zeroes each caller pool (so a run
   never first-touches its pages); a pool one alignment unit too small is refused with
   KILN_ERR_ARENA. Exits 1 on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int run(m_context* ctx, float* logits, size_t bytes) {
  float image[28 * 28];
  for (int i = 0; i < 28 * 28; ++i) image[i] = (float)((i * 13) % 29) / 29.0f;
  int rc = m_set_input(ctx, 0, image, sizeof image);
  if (rc == KILN_OK) rc = m_run(ctx);
  if (rc == KILN_OK) rc = m_get_output(ctx, 0, logits, bytes);
  return rc;
}

int main(void) {
  int n = m_num_pools();
  if (n < 2) return fprintf(stderr, "pools_caller: expected several pools, got %d\n", n), 1;
  void* pools[8] = {0};
  size_t sizes[8] = {0};
  for (int k = 0; k < n && k < 8; ++k) {
    sizes[k] = (m_pool_bytes(k) + KILN_ALIGNMENT - 1) / KILN_ALIGNMENT * KILN_ALIGNMENT;
    pools[k] = aligned_alloc(KILN_ALIGNMENT, sizes[k] ? sizes[k] : KILN_ALIGNMENT);
    if (pools[k]) memset(pools[k], 0xA5, sizes[k]);
    printf("pool %d '%s': %zu bytes\n", k, m_pool_name(k), m_pool_bytes(k));
  }
  m_context* mine = NULL;
  m_context* own = NULL;
  float a[5], b[5];
  int rc = m_create_pools(&mine, pools, sizes, NULL);
  for (int k = 0; rc == KILN_OK && k < n && k < 8; ++k)
    for (size_t i = 0; i < m_pool_bytes(k); ++i)
      if (((const unsigned char*)pools[k])[i] != 0)
        return fprintf(stderr, "pools_caller: pool %d byte %zu not zeroed by create\n", k, i), 1;
  if (rc == KILN_OK) rc = m_create(&own, NULL, 0);
  if (rc == KILN_OK) rc = run(mine, a, sizeof a);
  if (rc == KILN_OK) rc = run(own, b, sizeof b);
  if (rc != KILN_OK) return fprintf(stderr, "pools_caller: %s\n", m_status_string(rc)), 1;
  if (memcmp(a, b, sizeof a) != 0) return fprintf(stderr, "pools_caller: outputs differ\n"), 1;
  m_destroy(mine);
  m_destroy(own);
  size_t small[8];
  memcpy(small, sizes, sizeof small);
  small[n - 1] = m_pool_bytes(n - 1) - 1;
  m_context* bad = NULL;
  if (m_pool_bytes(n - 1) > 0 && m_create_pools(&bad, pools, small, NULL) != KILN_ERR_ARENA)
    return fprintf(stderr, "pools_caller: a too-small pool was accepted\n"), 1;
  for (int k = 0; k < n && k < 8; ++k) free(pools[k]);
  printf("ok: %d pools on caller memory, outputs identical\n", n);
  return 0;
}
