/*
 * The two PNG decoders side by side: every PNG named (files, or the .png
 * files of folders) is decoded by the libdeflate decoder (src/io/png_fast.c,
 * with libpng for what it declines) and by libpng alone, and the verdicts
 * (status and message), the headers and every sample of every plane must be
 * the same. The first decode writes into planes with padded rows, so that the
 * stride is honoured too.
 *
 *   png_paths [--max-memory BYTES] [--dump FILE.raw] PATH...
 *
 * Prints one line a file: "fast", "libpng" (the fast decoder declined it) or
 * "refused: why", then the file; a difference is "DIFFER: ..." and counts as
 * a failure. --dump writes the first file's planes (channel after channel,
 * row after row, host-endian samples) for a check against its source.
 * Ends with "N passed, N failed"; exit status 1 when a file failed.
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct decoded {
  imgstat_status status;
  imgstat_error err;
  imgstat_header header;
  imgstat_image img;
  int fast;
} decoded;

static void decode(const char *path, const imgstat_load_options *opts,
                   size_t pad, decoded *out) {
  memset(out, 0, sizeof *out);
  imgstat_decoder *d = NULL;
  out->status = imgstat_decoder_open(path, opts, &d, &out->err);
  if (out->status != IMGSTAT_OK)
    return;
  out->header = *imgstat_decoder_header(d);
  const imgstat_header *h = &out->header;
  size_t stride = (size_t)h->width * (size_t)h->sample + pad;
  void *planes[IMGSTAT_MAX_CHANNELS] = {0};
  for (int c = 0; c < h->channels; c++) {
    planes[c] = malloc(stride * h->height);
    if (!planes[c]) {
      fprintf(stderr, "png_paths: out of memory\n");
      exit(2);
    }
    memset(planes[c], 0xA5, stride * h->height);
  }
  out->status = imgstat_image_wrap(&out->img, h->width, h->height, h->channels,
                                   h->sample, planes, stride, &out->err);
  if (out->status == IMGSTAT_OK)
    out->status = imgstat_decoder_read(d, &out->img, &out->err);
  out->fast = ist_png_decoded_fast(d);
  imgstat_decoder_close(d);
  if (out->status != IMGSTAT_OK) {
    for (int c = 0; c < h->channels; c++)
      free(planes[c]);
    memset(&out->img, 0, sizeof out->img);
  }
}

static void release(decoded *r) {
  if (r->status == IMGSTAT_OK)
    for (int c = 0; c < r->img.channels; c++)
      free(r->img.planes[c]);
}

/* The first difference between a and b, in words, or NULL. */
static const char *differ(const decoded *a, const decoded *b, char *buf,
                          size_t size) {
  if (a->status != b->status || strcmp(a->err.message, b->err.message) != 0) {
    snprintf(buf, size, "verdicts '%s' (%d) and '%s' (%d)", a->err.message,
             (int)a->status, b->err.message, (int)b->status);
    return buf;
  }
  if (a->status != IMGSTAT_OK)
    return NULL;
  const imgstat_image *x = &a->img, *y = &b->img;
  if (x->width != y->width || x->height != y->height ||
      x->channels != y->channels || x->sample != y->sample) {
    snprintf(buf, size, "layouts %ux%ux%d/%d and %ux%ux%d/%d", x->width,
             x->height, x->channels, (int)x->sample, y->width, y->height,
             y->channels, (int)y->sample);
    return buf;
  }
  size_t row = (size_t)x->width * (size_t)x->sample;
  for (int c = 0; c < x->channels; c++)
    for (uint32_t r = 0; r < x->height; r++) {
      const unsigned char *p =
          (const unsigned char *)x->planes[c] + (size_t)r * x->stride;
      const unsigned char *q =
          (const unsigned char *)y->planes[c] + (size_t)r * y->stride;
      if (memcmp(p, q, row) != 0) {
        size_t i = 0;
        while (p[i] == q[i])
          i++;
        snprintf(buf, size, "channel %d row %u byte %zu: %u and %u", c, r, i,
                 p[i], q[i]);
        return buf;
      }
    }
  return NULL;
}

static int passed, failed;

static void check(const char *path, const imgstat_load_options *opts,
                  const char *dump) {
  decoded a, b;
  ist_png_reader_libpng = 0;
  /* 8 bytes of padding: rows off the dense grid, still a whole number of
   * samples of every type (a 16-bit row must start at an even address). */
  decode(path, opts, 8, &a);
  ist_png_reader_libpng = 1;
  decode(path, opts, 0, &b);
  ist_png_reader_libpng = 0;
  char why[1200];
  const char *d = differ(&a, &b, why, sizeof why);
  if (d) {
    printf("DIFFER: %s: %s\n", path, d);
    failed++;
  } else {
    if (a.status != IMGSTAT_OK)
      printf("refused: %s: %s\n", a.err.message, path);
    else
      printf("%s %s\n", a.fast ? "fast" : "libpng", path);
    passed++;
  }
  if (dump && a.status == IMGSTAT_OK) {
    FILE *f = fopen(dump, "wb");
    size_t row = (size_t)a.img.width * (size_t)a.img.sample;
    for (int c = 0; f && c < a.img.channels; c++)
      for (uint32_t r = 0; r < a.img.height; r++)
        fwrite((const unsigned char *)a.img.planes[c] +
                   (size_t)r * a.img.stride,
               1, row, f);
    if (!f || fclose(f) != 0) {
      fprintf(stderr, "png_paths: cannot write %s\n", dump);
      exit(2);
    }
  }
  release(&a);
  release(&b);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk(const char *dir, const imgstat_load_options *opts) {
  DIR *d = opendir(dir);
  if (!d) {
    check(dir, opts, NULL);
    return;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".png") != 0)
      continue;
    names = realloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    check(path, opts, NULL);
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  imgstat_load_options opts;
  memset(&opts, 0, sizeof opts);
  const char *dump = NULL;
  int i = 1;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (strcmp(argv[i], "--max-memory") == 0)
      opts.max_memory = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--dump") == 0)
      dump = argv[i + 1];
    else
      break;
  }
  if (i >= argc) {
    fprintf(
        stderr,
        "usage: png_paths [--max-memory BYTES] [--dump FILE.raw] PATH...\n");
    return 2;
  }
  if (!ist_png_have_libdeflate())
    printf("png_paths: this build has no libdeflate: libpng decodes every "
           "PNG on both paths\n");
  if (dump) {
    check(argv[i], &opts, dump);
    i++;
  }
  for (; i < argc; i++)
    walk(argv[i], &opts);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
