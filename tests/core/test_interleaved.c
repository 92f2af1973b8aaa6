/* Pixel-interleaved 8- and 16-bit samples reduced where they lie
 * (src/core/interleaved.c: ist_ilv_*), by vectors and one sample at a time,
 * against a plain loop over each band in raster order written here: count,
 * nodata count, sum, sum of squares, min and max with the raster position
 * of the first of each. The image is cut into tiles (partial ones at the
 * right and bottom, their rows padded as a TIFF tile's: one run a row, or
 * one run a tile when it is as wide as the tile), taken in reverse order by
 * two accumulators in turn (two threads), so that equal extremes meet out
 * of raster order. Bands 1, 2, 3, 4, 5, 13, 16, 17 and 200; u8, u16 and
 * int16 (the top bit flipped); nodata in some bands; few distinct values
 * (ties everywhere), extremes in the last pixel, a band all nodata, a band
 * of 0 and 65535 alone; every band with a nodata value (bottom, middle and
 * top values), and the top value everywhere (the lanes' sums at their
 * largest over a piece's longest stretch of vectors, one band). */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

typedef struct want {
  uint64_t count, nd, sum, sq, lo_at, hi_at;
  uint32_t lo, hi;
} want;

static uint32_t rnd(uint32_t *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return *seed >> 8;
}

/* Sample (x, y, b) of the image as the planes hold it. */
static uint32_t held(const uint16_t *img, uint32_t w, int ch, uint32_t x,
                     uint32_t y, int b) {
  return img[((size_t)y * w + x) * (size_t)ch + (size_t)b];
}

/* kind: 0 random over the type, 1 few values (ties), 2 extremes in the last
 * pixel, 3 0 and the top only, 4 0, the middle and the top, every band with
 * a nodata value, 5 the top only */
static void run_case(int ch, imgstat_sample sample, int int16, uint32_t w,
                     uint32_t h, uint32_t tw, uint32_t th, int kind,
                     uint32_t seed) {
  uint32_t top = sample == IMGSTAT_U8 ? 255u : 65535u;
  size_t n = (size_t)w * h * (size_t)ch;
  uint16_t *img = malloc(n * sizeof *img); /* the planes' values */
  imgstat_valid *v = calloc(1, sizeof *v);
  CU_ASSERT_PTR_NOT_NULL_FATAL(img);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v);
  for (size_t i = 0; i < n; i++) {
    uint32_t r = rnd(&seed);
    uint32_t s = kind == 1   ? r % 4 * (top / 3)
                 : kind == 3 ? (r & 1 ? top : 0)
                 : kind == 4 ? r % 3 * ((top + 1) / 2) - (r % 3 == 2)
                 : kind == 5 ? top
                             : r % (top + 1);
    img[i] = (uint16_t)s;
  }
  if (kind == 2) /* the last pixel holds each band's extremes, once */
    for (size_t i = 0; i + (size_t)ch < n; i++)
      img[i] = (uint16_t)(1 + img[i] % (top - 1));
  for (int b = 0; b < ch; b++)
    if (b % 3 == 1 || kind == 4) { /* nodata: a value that is there */
      v->has_nodata[b] = 1;
      v->nodata[b] = kind == 3 ? 0.0 : (double)img[b];
    }
  if (ch > 2) { /* band 2 all nodata */
    v->has_nodata[2] = 1;
    v->nodata[2] = 7;
    for (size_t i = 2; i < n; i += (size_t)ch)
      img[i] = 7;
  }
  /* the reference */
  want *ref = calloc((size_t)ch, sizeof *ref);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
  for (int b = 0; b < ch; b++) {
    want *r = &ref[b];
    r->lo_at = r->hi_at = UINT64_MAX;
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
        uint32_t s = held(img, w, ch, x, y, b);
        if (v->has_nodata[b] && s == (uint32_t)v->nodata[b]) {
          r->nd++;
          continue;
        }
        uint64_t at = (uint64_t)y * w + x;
        r->count++;
        r->sum += s;
        r->sq += (uint64_t)s * s;
        if (r->lo_at == UINT64_MAX || s < r->lo) {
          r->lo = s;
          r->lo_at = at;
        }
        if (r->hi_at == UINT64_MAX || s > r->hi) {
          r->hi = s;
          r->hi_at = at;
        }
      }
  }
  /* the tiles, as stored: u8 bytes, or u16 (int16: top bit back) */
  size_t size = sample == IMGSTAT_U8 ? 1 : 2;
  size_t tile = (size_t)tw * th * (size_t)ch;
  unsigned char *buf = malloc(tile * size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  uint32_t across = (w + tw - 1) / tw, down = (h + th - 1) / th;
  for (int simd = 0; simd < 2; simd++) {
    ist_ilv *acc[2] = {ist_ilv_create(ch, sample, int16, v, simd),
                       ist_ilv_create(ch, sample, int16, v, simd)};
    CU_ASSERT_PTR_NOT_NULL_FATAL(acc[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(acc[1]);
    for (int64_t g = (int64_t)across * down - 1; g >= 0; g--) {
      uint32_t x0 = (uint32_t)(g % across) * tw,
               y0 = (uint32_t)(g / across) * th;
      uint32_t cols = w - x0 < tw ? w - x0 : tw,
               rows = h - y0 < th ? h - y0 : th;
      memset(buf, 0xa5, tile * size);
      for (uint32_t r = 0; r < rows; r++)
        for (uint32_t x = 0; x < cols; x++)
          for (int b = 0; b < ch; b++) {
            size_t o = ((size_t)r * tw + x) * (size_t)ch + (size_t)b;
            uint32_t s = held(img, w, ch, x0 + x, y0 + r, b);
            if (size == 1)
              buf[o] = (unsigned char)s;
            else {
              uint16_t u = (uint16_t)(int16 ? s ^ 0x8000u : s);
              memcpy(buf + 2 * o, &u, 2);
            }
          }
      ist_ilv *a = acc[g & 1];
      uint64_t first = (uint64_t)y0 * w + x0;
      if (cols == tw)
        ist_ilv_scan(a, buf, (uint64_t)rows * cols, first, cols, w);
      else
        for (uint32_t r = 0; r < rows; r++)
          ist_ilv_scan(a, buf + (size_t)r * tw * (size_t)ch * size, cols,
                       first + (uint64_t)r * w, cols, w);
    }
    imgstat_partial *p = malloc((size_t)ch * sizeof *p);
    uint64_t *nd = calloc((size_t)ch, sizeof *nd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(nd);
    for (int b = 0; b < ch; b++)
      imgstat_partial_init(&p[b]);
    ist_ilv_finish(acc[0], p, nd);
    ist_ilv_finish(acc[1], p, nd);
    int bad = 0;
    for (int b = 0; b < ch; b++) {
      want *r = &ref[b];
      int ok = p[b].count == r->count && nd[b] == r->nd && p[b].sum == r->sum &&
               p[b].sumsq == r->sq;
      if (r->count)
        ok = ok && p[b].min == (double)r->lo && p[b].max == (double)r->hi &&
             p[b].min_index == r->lo_at && p[b].max_index == r->hi_at;
      if (!ok && bad++ < 3)
        fprintf(stderr,
                "\n%d bands %s%s %ux%u tiles %ux%u kind %d simd %d band %d: "
                "count %llu/%llu nd %llu/%llu sum %llu/%llu sq %llu/%llu "
                "min %g@%llu/%u@%llu max %g@%llu/%u@%llu\n",
                ch, sample == IMGSTAT_U8 ? "u8" : "u16", int16 ? " int16" : "",
                w, h, tw, th, kind, simd, b, (unsigned long long)p[b].count,
                (unsigned long long)r->count, (unsigned long long)nd[b],
                (unsigned long long)r->nd, (unsigned long long)p[b].sum,
                (unsigned long long)r->sum, (unsigned long long)p[b].sumsq,
                (unsigned long long)r->sq, p[b].min,
                (unsigned long long)p[b].min_index, r->lo,
                (unsigned long long)r->lo_at, p[b].max,
                (unsigned long long)p[b].max_index, r->hi,
                (unsigned long long)r->hi_at);
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(p);
    free(nd);
    ist_ilv_free(acc[0]);
    ist_ilv_free(acc[1]);
  }
  free(buf);
  free(ref);
  free(img);
  free(v);
}

static void test_bands(void) {
  static const int bands[] = {1, 2, 3, 4, 5, 13, 16, 17, 200};
  uint32_t seed = 3;
  for (size_t i = 0; i < sizeof bands / sizeof bands[0]; i++) {
    int ch = bands[i];
    /* sizes: tiles crossing the edges, a width under a period, tiles as
     * wide as the image (strips) */
    uint32_t w = ch > 16 ? 45 : 131, h = ch > 16 ? 23 : 37;
    for (int kind = 0; kind < 6; kind++) {
      run_case(ch, IMGSTAT_U16, 0, w, h, 32, 16, kind, seed++);
      run_case(ch, IMGSTAT_U16, 1, w, h, 48, 8, kind, seed++);
      run_case(ch, IMGSTAT_U8, 0, w, h, 16, 16, kind, seed++);
      run_case(ch, IMGSTAT_U16, 0, w, h, w, 5, kind, seed++);
      run_case(ch, IMGSTAT_U8, 0, w, h, w, 3, kind, seed++);
      run_case(ch, IMGSTAT_U16, 0, 3, h, 3, 4, kind, seed++);
    }
  }
}

/* Sums of squares past 32 bits in one lane: a long run of the top value
 * (a piece's whole 32-bit sums and 64-bit squares). */
static void test_large_run(void) {
  run_case(13, IMGSTAT_U16, 0, 1024, 64, 1024, 64, 3, 99);
  run_case(3, IMGSTAT_U16, 1, 2048, 32, 2048, 32, 0, 98);
  run_case(4, IMGSTAT_U8, 0, 4096, 16, 4096, 16, 3, 97);
  /* one band: a position's vectors the most a piece has */
  run_case(1, IMGSTAT_U16, 0, 4096, 20, 4096, 20, 5, 96);
  run_case(1, IMGSTAT_U16, 1, 4096, 20, 4096, 20, 5, 95);
  run_case(1, IMGSTAT_U8, 0, 4096, 20, 4096, 20, 5, 94);
  run_case(1, IMGSTAT_U16, 1, 4096, 20, 4096, 20, 4, 93);
  run_case(13, IMGSTAT_U16, 0, 1024, 64, 1024, 64, 4, 92);
  run_case(13, IMGSTAT_U16, 1, 1024, 64, 1024, 64, 5, 91);
  run_case(3, IMGSTAT_U8, 0, 2048, 32, 2048, 32, 4, 90);
}

static const test_case tests[] = {
    {"interleaved samples reduced where they lie", NULL},
    {"1 to 200 bands, u8, u16, int16, nodata, ties, edge tiles", test_bands},
    {"long runs of extreme values", test_large_run},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
