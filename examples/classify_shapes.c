/* Classifies a 28x28 image with the kiln-compiled shapes model through its plain C API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Reads a little-endian float32 .npy file of exactly `count` elements into dst. */
static int read_npy_f32(const char* path, float* dst, size_t count) {
  FILE* f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "classify: cannot open %s\n", path), 1;
  unsigned char magic[10];
  if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return fprintf(stderr, "classify: %s is not a .npy file\n", path), 1;
  }
  size_t header_len = magic[8] | (size_t)magic[9] << 8;
  if (magic[6] != 1) { /* versions 2 and 3 have a 4-byte length */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) return fclose(f), 1;
    header_len |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  char* header = malloc(header_len + 1);
  if (!header || fread(header, 1, header_len, f) != header_len) return free(header), fclose(f), 1;
  header[header_len] = '\0';
  int ok = strstr(header, "'<f4'") != NULL && strstr(header, "True") == NULL;
  free(header);
  if (!ok || fread(dst, sizeof(float), count, f) != count) {
    fclose(f);
    return fprintf(stderr, "classify: %s must hold %zu float32 values\n", path, count), 1;
  }
  fclose(f);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) return fprintf(stderr, "usage: classify IMAGE.npy LABELS.txt\n"), 1;
  float image[28 * 28];
  if (read_npy_f32(argv[1], image, 28 * 28)) return 1;
  shapes_context* ctx = NULL;
  int rc = shapes_create(&ctx, NULL, 0);
  if (rc == KILN_OK) rc = shapes_set_input_by_name(ctx, "image", image, sizeof image);
  if (rc == KILN_OK) rc = shapes_run(ctx);
  float logits[16];
  size_t n = shapes_output_bytes(0) / sizeof(float);
  if (rc == KILN_OK && n > 16) rc = KILN_ERR_SIZE;
  if (rc == KILN_OK) rc = shapes_get_output(ctx, 0, logits, n * sizeof(float));
  shapes_destroy(ctx);
  if (rc != KILN_OK) return fprintf(stderr, "classify: %s\n", shapes_status_string(rc)), 1;

  char labels[16][64];
  FILE* lf = fopen(argv[2], "r");
  for (size_t i = 0; i < n; ++i) {
    if (!lf || !fgets(labels[i], sizeof labels[i], lf)) snprintf(labels[i], 64, "class %zu", i);
    labels[i][strcspn(labels[i], "\r\n")] = '\0';
  }
  if (lf) fclose(lf);
  float max = logits[0], sum = 0;
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (logits[i] > max) max = logits[i], best = i;
  for (size_t i = 0; i < n; ++i) sum += expf(logits[i] - max);
  printf("%s: %s (p = %.4f)\n", argv[1], labels[best], 1.0f / sum);
  for (size_t i = 0; i < n; ++i) printf("  %-10s logit %9.4f\n", labels[i], logits[i]);
  return 0;
}
