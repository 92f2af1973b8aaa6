/*
 * Pooled partials (imgstat_pool.h): figures against a reference computed
 * pixel by pixel in the test, the same bits for every grouping and order of
 * adds and merges, exact 128-bit sums past 2^32 samples a channel, the
 * serialized form, the keys of the extrema and the argument checks.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgstat/imgstat.h"
#include "imgstat/pool.h"
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() RUNNING_ON_VALGRIND
#endif
#endif
#ifndef UNDER_VALGRIND
#define UNDER_VALGRIND() 0
#endif
#include "test_util.h"

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

static u128 u128_of(imgstat_u128 v) { return (u128)v.hi << 64 | v.lo; }

static int same_bits(double a, double b) { return memcmp(&a, &b, 8) == 0; }

/* Whether m is the double nearest to num / den (ties to even), checked with
 * integers: |num - m * den| <= den * ulp / 2. */
static int is_nearest(double m, u128 num, uint64_t den) {
  int ex;
  double f = frexp(m, &ex);
  int64_t M = (int64_t)ldexp(f, 53);
  int e = ex - 53; /* m = M * 2^e */
  if (e > 0 || -e > 60)
    return 0; /* outside what the tests use */
  i128 diff = (i128)(num << -e) - (i128)M * (i128)den;
  i128 mag = diff < 0 ? -diff : diff;
  /* Below a power of two the gap to the next smaller double is half. */
  if (M == (INT64_C(1) << 52) && diff < 0)
    return 4 * mag < (i128)den || (4 * mag == (i128)den);
  if (2 * mag < (i128)den)
    return 1;
  return 2 * mag == (i128)den && (M % 2) == 0;
}

/* ---- synthetic images and a pixel-by-pixel reference ----------------------
 */

typedef struct ref_channel {
  uint64_t count, nan_count, inf_count;
  double min, max;
  imgstat_pool_key min_key, max_key;
  u128 sum, sumsq;  /* integers */
  long double fsum; /* floats: first pass */
  long double dev2; /* floats and integers: second pass */
} ref_channel;

/* Images in ordinal order; first occurrence = strictly better in scan order
 * (ordinal, y, x). */
static void ref_pass1(ref_channel *r, const imgstat_image *img, int c,
                      uint64_t ordinal) {
  uint64_t n = (uint64_t)img->width * img->height;
  for (uint64_t i = 0; i < n; i++) {
    double v = test_sample_at(img, c, i);
    if (isnan(v)) {
      r->nan_count++;
      continue;
    }
    if (isinf(v)) {
      r->inf_count++;
      continue;
    }
    imgstat_pool_key k = {ordinal, (uint32_t)(i % img->width),
                          (uint32_t)(i / img->width)};
    if (r->count == 0 || v < r->min) {
      r->min = v;
      r->min_key = k;
    }
    if (r->count == 0 || v > r->max) {
      r->max = v;
      r->max_key = k;
    }
    r->count++;
    if (img->sample == IMGSTAT_F32) {
      r->fsum += v;
    } else {
      r->sum += (u128)v;
      r->sumsq += (u128)v * (u128)v;
    }
  }
}

static long double ref_mean(const ref_channel *r, int is_float) {
  return is_float ? r->fsum / r->count : (long double)r->sum / r->count;
}

static void ref_pass2(ref_channel *r, const imgstat_image *img, int c) {
  long double mean = ref_mean(r, img->sample == IMGSTAT_F32);
  uint64_t n = (uint64_t)img->width * img->height;
  for (uint64_t i = 0; i < n; i++) {
    double v = test_sample_at(img, c, i);
    if (isfinite(v))
      r->dev2 += (v - mean) * (v - mean);
  }
}

static void fill_random(imgstat_image *img, uint64_t *seed, double scale) {
  uint64_t n = (uint64_t)img->width * img->height;
  for (int c = 0; c < img->channels; c++)
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = test_rand(seed);
      switch (img->sample) {
      case IMGSTAT_U8:
        ((uint8_t *)img->planes[c])[i] = (uint8_t)(10 + r % 200);
        break;
      case IMGSTAT_U16:
        ((uint16_t *)img->planes[c])[i] = (uint16_t)(100 + r % 60000);
        break;
      default:
        ((float *)img->planes[c])[i] =
            (float)(scale * (1.0 + (double)(r >> 11) * 0x1p-53));
      }
    }
}

static void set_sample(imgstat_image *img, int c, uint32_t x, uint32_t y,
                       double v) {
  uint64_t i = (uint64_t)y * img->width + x;
  switch (img->sample) {
  case IMGSTAT_U8:
    ((uint8_t *)img->planes[c])[i] = (uint8_t)v;
    break;
  case IMGSTAT_U16:
    ((uint16_t *)img->planes[c])[i] = (uint16_t)v;
    break;
  default:
    ((float *)img->planes[c])[i] = (float)v;
  }
}

#define N_IMAGES 6
static const uint32_t sizes[N_IMAGES][2] = {{1, 1},   {37, 19}, {300, 200},
                                            {257, 3}, {3, 411}, {640, 130}};
/* Ordinals need not be 0, 1, 2, ...: only their order matters. */
static const uint64_t ordinals[N_IMAGES] = {3, 10, 11, 40, 41, 1000};

/* Images of one kind with planted extrema: the min value twice in image 2
 * and once, earlier in its image, in image 4; the max value in image 3 at
 * (1, 1) and (0, 2) and in image 5 at (0, 0). */
static void make_images(imgstat_image *img, imgstat_sample sample, int channels,
                        uint64_t seed) {
  imgstat_error err;
  double lo = sample == IMGSTAT_U8 ? 2 : sample == IMGSTAT_U16 ? 7 : -0.5;
  double hi = sample == IMGSTAT_U8 ? 250 : sample == IMGSTAT_U16 ? 65000 : 100;
  for (int k = 0; k < N_IMAGES; k++) {
    CU_ASSERT_FATAL(imgstat_image_alloc(&img[k], sizes[k][0], sizes[k][1],
                                        channels, sample, 0,
                                        &err) == IMGSTAT_OK);
    fill_random(&img[k], &seed, 1.0 + k);
    for (int c = 0; c < channels; c++) {
      if (k == 2) {
        set_sample(&img[k], c, 5, 3, lo);
        set_sample(&img[k], c, 7, 9, lo);
      }
      if (k == 4)
        set_sample(&img[k], c, 0, 0, lo);
      if (k == 3) {
        set_sample(&img[k], c, 1, 1, hi);
        set_sample(&img[k], c, 0, 2, hi);
      }
      if (k == 5)
        set_sample(&img[k], c, 0, 0, hi);
    }
  }
}

static void free_images(imgstat_image *img) {
  for (int k = 0; k < N_IMAGES; k++)
    imgstat_image_free(&img[k]);
}

static void check_against_reference(imgstat_sample sample, int channels) {
  imgstat_image img[N_IMAGES];
  memset(img, 0, sizeof img);
  make_images(img, sample, channels, 77 + (uint64_t)sample);
  int is_float = sample == IMGSTAT_F32;
  if (is_float) {
    /* Non-finite samples are counted only. */
    ((float *)img[1].planes[0])[4] = NAN;
    ((float *)img[2].planes[0])[9] = INFINITY;
    ((float *)img[2].planes[0])[10] = -INFINITY;
  }

  imgstat_pool pool;
  imgstat_pool_init(&pool);
  imgstat_error err;
  ref_channel ref[IMGSTAT_MAX_CHANNELS];
  memset(ref, 0, sizeof ref);
  for (int k = 0; k < N_IMAGES; k++) {
    imgstat_partial parts[IMGSTAT_MAX_CHANNELS];
    CU_ASSERT_FATAL(imgstat_cpu_stats(&img[k], 2, parts, &err) == IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_pool_add(&pool, ordinals[k], parts, channels,
                                     sample, img[k].width, &err),
                    IMGSTAT_OK);
    for (int c = 0; c < channels; c++)
      ref_pass1(&ref[c], &img[k], c, ordinals[k]);
  }
  for (int k = 0; k < N_IMAGES; k++)
    for (int c = 0; c < channels; c++)
      ref_pass2(&ref[c], &img[k], c);
  CU_ASSERT_EQUAL(pool.images, N_IMAGES);

  for (int c = 0; c < channels; c++) {
    const ref_channel *r = &ref[c];
    for (int ddof = 0; ddof <= 1; ddof++) {
      imgstat_pool_figures f;
      CU_ASSERT_EQUAL_FATAL(
          imgstat_pool_figures_compute(&pool, c, ddof, &f, &err), IMGSTAT_OK);
      CU_ASSERT_EQUAL(f.count, r->count);
      CU_ASSERT_EQUAL(f.nan_count, r->nan_count);
      CU_ASSERT_EQUAL(f.inf_count, r->inf_count);
      CU_ASSERT(f.has_values && f.has_std);
      CU_ASSERT(same_bits(f.min, r->min) && same_bits(f.max, r->max));
      CU_ASSERT(memcmp(&f.min_key, &r->min_key, sizeof f.min_key) == 0);
      CU_ASSERT(memcmp(&f.max_key, &r->max_key, sizeof f.max_key) == 0);
      /* The planted keys, independently of the reference scan. */
      CU_ASSERT(f.min_key.ordinal == ordinals[2] && f.min_key.x == 5 &&
                f.min_key.y == 3);
      CU_ASSERT(f.max_key.ordinal == ordinals[3] && f.max_key.x == 1 &&
                f.max_key.y == 1);
      long double want_std =
          sqrtl(r->dev2 / (long double)(r->count - (uint64_t)ddof));
      if (is_float) {
        long double m = ref_mean(r, 1);
        CU_ASSERT(fabsl(f.mean - m) <= 1e-14L * fabsl(m));
        CU_ASSERT(fabsl(f.std - want_std) <= 1e-12L * want_std);
        CU_ASSERT(fabsl(f.sum - r->fsum) <= 1e-14L * fabsl(r->fsum));
        CU_ASSERT(!f.sum_is_exact);
      } else {
        CU_ASSERT(f.sum_is_exact);
        CU_ASSERT(u128_of(f.exact_sum) == r->sum);
        CU_ASSERT(u128_of(f.exact_sumsq) == r->sumsq);
        CU_ASSERT(is_nearest(f.mean, r->sum, r->count));
        /* valgrind's long double is a double: 1e-14 is then too tight */
        CU_ASSERT(fabsl(f.std - want_std) <=
                  (UNDER_VALGRIND() ? 1e-12L : 1e-14L) * want_std);
        /* The documented formula, exactly: sqrt((N sumsq - sum^2) /
         * (N (N - ddof))) in long double. */
        u128 d = (u128)r->count * r->sumsq - r->sum * r->sum;
        long double den =
            (long double)r->count * (long double)(r->count - (uint64_t)ddof);
        CU_ASSERT(same_bits(f.std, (double)sqrtl((long double)d / den)));
        char text[64];
        snprintf(text, sizeof text, "%llu", (unsigned long long)r->sum);
        CU_ASSERT_STRING_EQUAL(f.exact_sum_text, text);
      }
    }
  }
  free_images(img);
}

static void test_reference_u8(void) { check_against_reference(IMGSTAT_U8, 3); }
static void test_reference_u16(void) {
  check_against_reference(IMGSTAT_U16, 2);
}
static void test_reference_f32(void) {
  check_against_reference(IMGSTAT_F32, 4);
}

/* A pool of one integer image gives the per-image figures' bits. */
static void test_one_image_same_as_figures(void) {
  imgstat_image img[N_IMAGES];
  memset(img, 0, sizeof img);
  make_images(img, IMGSTAT_U16, 3, 5);
  imgstat_error err;
  for (int k = 0; k < N_IMAGES; k++) {
    imgstat_partial parts[IMGSTAT_MAX_CHANNELS];
    CU_ASSERT_FATAL(imgstat_cpu_stats(&img[k], 1, parts, &err) == IMGSTAT_OK);
    imgstat_pool pool;
    imgstat_pool_init(&pool);
    CU_ASSERT_FATAL(imgstat_pool_add(&pool, 9, parts, 3, IMGSTAT_U16,
                                     img[k].width, &err) == IMGSTAT_OK);
    for (int c = 0; c < 3; c++)
      for (int ddof = 0; ddof <= 1; ddof++) {
        imgstat_figures a;
        imgstat_pool_figures b;
        imgstat_figures_compute(&parts[c], IMGSTAT_U16, img[k].width, ddof, &a);
        CU_ASSERT_FATAL(imgstat_pool_figures_compute(&pool, c, ddof, &b,
                                                     &err) == IMGSTAT_OK);
        CU_ASSERT(a.count == b.count && a.has_std == b.has_std);
        CU_ASSERT(a.exact_sum == b.exact_sum.lo && b.exact_sum.hi == 0);
        CU_ASSERT(same_bits(a.mean, b.mean));
        CU_ASSERT(same_bits(a.std, b.std));
        CU_ASSERT(same_bits(a.sum, b.sum));
        CU_ASSERT(a.min_x == b.min_key.x && a.min_y == b.min_key.y &&
                  a.max_x == b.max_key.x && a.max_y == b.max_key.y);
      }
  }
  free_images(img);
}

/* A partial of count samples from min to max, both first at index 0 (the
 * sums are the caller's). */
static imgstat_partial partial_of(uint64_t count, double min, double max) {
  imgstat_partial p;
  imgstat_partial_init(&p);
  p.count = count;
  p.min = min;
  p.max = max;
  p.min_index = p.max_index = 0;
  return p;
}

/* Pools the partial p of a one-channel image, which must be taken. */
static void add_one(imgstat_pool *pool, uint64_t ordinal,
                    const imgstat_partial *p, imgstat_sample sample,
                    uint32_t width) {
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_pool_add(pool, ordinal, p, 1, sample, width, &err) ==
                  IMGSTAT_OK);
}

/* The figures of channel c, which the pool must give. */
static imgstat_pool_figures figures_of(const imgstat_pool *pool, int c,
                                       int ddof) {
  imgstat_pool_figures f;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_pool_figures_compute(pool, c, ddof, &f, &err) ==
                  IMGSTAT_OK);
  return f;
}

/* ---- groupings ------------------------------------------------------------
 */

#define N_PARTS 24

/* Partials of N_PARTS two-channel images of the sample type. f32: means
 * spread over many magnitudes, so that Chan's merges round differently in
 * different groupings, and a NaN each; u16: the largest and the smallest
 * value in every image (ties across images). */
static void make_parts(imgstat_partial parts[N_PARTS][2], uint32_t widths[],
                       imgstat_sample sample) {
  int is_float = sample == IMGSTAT_F32;
  uint64_t seed = is_float ? 1234 : 99;
  imgstat_error err;
  for (int k = 0; k < N_PARTS; k++) {
    imgstat_image img;
    uint32_t w =
        is_float ? 13 + (uint32_t)(k * 7) % 50 : 3 + (uint32_t)(k * 11) % 70;
    uint32_t h = is_float ? 5 + (uint32_t)k % 11 : 1 + (uint32_t)k % 9;
    CU_ASSERT_FATAL(imgstat_image_alloc(&img, w, h, 2, sample, 0, &err) ==
                    IMGSTAT_OK);
    if (is_float) {
      double scale = ldexp(1.0 + k % 3, (k * 37) % 41 - 20);
      fill_random(&img, &seed, (k % 2 ? -1 : 1) * scale);
      ((float *)img.planes[1])[k] = NAN;
    } else {
      fill_random(&img, &seed, 1.0);
      ((uint16_t *)img.planes[0])[0] = 65535; /* ties across images */
      ((uint16_t *)img.planes[1])[w * h - 1] = 0;
    }
    CU_ASSERT_FATAL(imgstat_cpu_stats(&img, 1, parts[k], &err) == IMGSTAT_OK);
    widths[k] = w;
    imgstat_image_free(&img);
  }
}

/* Pools the images order[lo..hi) one by one. */
static void pool_run(imgstat_pool *p, imgstat_partial parts[N_PARTS][2],
                     const uint32_t *widths, const int *order, int lo, int hi,
                     imgstat_sample sample) {
  imgstat_error err;
  imgstat_pool_init(p);
  for (int i = lo; i < hi; i++) {
    int k = order[i];
    CU_ASSERT_FATAL(imgstat_pool_add(p, (uint64_t)k, parts[k], 2, sample,
                                     widths[k], &err) == IMGSTAT_OK);
  }
}

/* Pools order[lo..hi) as a tree: split at a random point, pool both halves,
 * merge (either half into the other). */
static void pool_tree(imgstat_pool *p, imgstat_partial parts[N_PARTS][2],
                      const uint32_t *widths, const int *order, int lo, int hi,
                      imgstat_sample sample, uint64_t *seed) {
  if (hi - lo <= 2) {
    pool_run(p, parts, widths, order, lo, hi, sample);
    return;
  }
  int mid = lo + 1 + (int)(test_rand(seed) % (uint64_t)(hi - lo - 1));
  imgstat_pool *b = malloc(sizeof *b);
  CU_ASSERT_FATAL(b != NULL);
  imgstat_error err;
  if (test_rand(seed) % 2) {
    pool_tree(p, parts, widths, order, lo, mid, sample, seed);
    pool_tree(b, parts, widths, order, mid, hi, sample, seed);
  } else {
    pool_tree(b, parts, widths, order, lo, mid, sample, seed);
    pool_tree(p, parts, widths, order, mid, hi, sample, seed);
  }
  CU_ASSERT_FATAL(imgstat_pool_merge(p, b, &err) == IMGSTAT_OK);
  free(b);
}

/* The serialized form holds every bit of a pool. */
static size_t pool_bytes(const imgstat_pool *p, uint8_t *buf) {
  size_t used = 0;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_pool_serialize(p, buf, IMGSTAT_POOL_SERIALIZED_MAX,
                                         &used, &err) == IMGSTAT_OK);
  return used;
}

static int figures_same(const imgstat_pool *a, const imgstat_pool *b) {
  imgstat_error err;
  for (int c = 0; c < a->channels; c++)
    for (int ddof = 0; ddof <= 1; ddof++) {
      imgstat_pool_figures fa, fb;
      if (imgstat_pool_figures_compute(a, c, ddof, &fa, &err) != IMGSTAT_OK ||
          imgstat_pool_figures_compute(b, c, ddof, &fb, &err) != IMGSTAT_OK)
        return 0;
      if (memcmp(&fa, &fb, sizeof fa) != 0)
        return 0;
    }
  return 1;
}

static void check_groupings(imgstat_sample sample) {
  static imgstat_partial parts[N_PARTS][2];
  uint32_t widths[N_PARTS];
  make_parts(parts, widths, sample);
  int order[N_PARTS];
  for (int k = 0; k < N_PARTS; k++)
    order[k] = k;

  imgstat_pool *ref = malloc(sizeof *ref), *p = malloc(sizeof *p);
  uint8_t *ref_buf = malloc(IMGSTAT_POOL_SERIALIZED_MAX);
  uint8_t *buf = malloc(IMGSTAT_POOL_SERIALIZED_MAX);
  CU_ASSERT_FATAL(ref && p && ref_buf && buf);
  pool_run(ref, parts, widths, order, 0, N_PARTS, sample);
  size_t ref_size = pool_bytes(ref, ref_buf);

  /* Chan's merge of the partials themselves, in two groupings: the data
   * must tell groupings apart, or this test could not fail. */
  int chan_differs = 0;

  uint64_t seed = 4242;
  for (int trial = 0; trial < 40; trial++) {
    /* A random order (the first trials: in order, then reversed). */
    for (int k = 0; k < N_PARTS; k++)
      order[k] = trial == 1 ? N_PARTS - 1 - k : k;
    if (trial >= 2)
      for (int k = N_PARTS - 1; k > 0; k--) {
        int j = (int)(test_rand(&seed) % (uint64_t)(k + 1));
        int t = order[k];
        order[k] = order[j];
        order[j] = t;
      }
    pool_tree(p, parts, widths, order, 0, N_PARTS, sample, &seed);
    CU_ASSERT_EQUAL(p->images, N_PARTS);
    CU_ASSERT(pool_bytes(p, buf) == ref_size &&
              memcmp(buf, ref_buf, ref_size) == 0);
    CU_ASSERT(figures_same(p, ref));

    if (trial >= 2) {
      imgstat_partial left = parts[0][0], pair;
      for (int k = 1; k < N_PARTS; k++)
        imgstat_partial_merge(&left, &parts[k][0], sample);
      int cut = 1 + (int)(test_rand(&seed) % (N_PARTS - 1));
      imgstat_partial a = parts[0][0], b = parts[cut][0];
      for (int k = 1; k < cut; k++)
        imgstat_partial_merge(&a, &parts[k][0], sample);
      for (int k = cut + 1; k < N_PARTS; k++)
        imgstat_partial_merge(&b, &parts[k][0], sample);
      pair = a;
      imgstat_partial_merge(&pair, &b, sample);
      if (!same_bits(left.mean, pair.mean) || !same_bits(left.m2, pair.m2))
        chan_differs = 1;
    }
  }
  if (sample == IMGSTAT_F32)
    CU_ASSERT(chan_differs);
  free(ref);
  free(p);
  free(ref_buf);
  free(buf);
}

static void test_groupings_int(void) { check_groupings(IMGSTAT_U16); }
static void test_groupings_float(void) { check_groupings(IMGSTAT_F32); }

/* ---- exactness ------------------------------------------------------------
 */

/* 2000 partials of 2^22 samples of 65535: 2^32 samples are passed near the
 * 500th; the sum of squares needs 65 bits. */
static void test_past_2_32_samples(void) {
  imgstat_pool pool, half;
  imgstat_pool_init(&pool);
  imgstat_pool_init(&half);
  const uint64_t n = UINT64_C(1) << 22;
  for (int k = 0; k < 2000; k++) {
    imgstat_partial p;
    imgstat_partial_init(&p);
    p.count = n;
    p.sum = n * 65535;
    p.sumsq = n * 65535 * 65535;
    p.min = p.max = 65535;
    p.min_index = (uint64_t)k; /* (k, 0) in a 2048-wide image */
    p.max_index = n - 1;
    add_one(&pool, (uint64_t)(2000 - k), &p, IMGSTAT_U16, 2048);
    /* Half of them all 65535, half all 0. */
    if (k % 2) {
      p.sum = p.sumsq = 0;
      p.min = p.max = 0;
    }
    add_one(&half, (uint64_t)k, &p, IMGSTAT_U16, 2048);
  }
  u128 count = (u128)2000 * n;
  imgstat_pool_figures f = figures_of(&pool, 0, 0);
  CU_ASSERT(f.count == (uint64_t)count && f.count > (UINT64_C(1) << 32));
  CU_ASSERT(u128_of(f.exact_sum) == count * 65535);
  CU_ASSERT(u128_of(f.exact_sumsq) == count * 65535 * 65535);
  CU_ASSERT(f.exact_sumsq.hi == 1); /* past 64 bits */
  /* The same in decimal (Python: 2000 * 2**22 * 65535 [** 2]). */
  CU_ASSERT_STRING_EQUAL(f.exact_sum_text, "549747425280000");
  char text[IMGSTAT_U128_TEXT];
  imgstat_u128_format(f.exact_sumsq, text);
  CU_ASSERT_STRING_EQUAL(text, "36027697515724800000");
  CU_ASSERT(f.mean == 65535.0 && f.std == 0.0 && f.sum == 549747425280000.0);
  /* The lowest ordinal, 1, is k = 1999's. */
  CU_ASSERT(f.min_key.ordinal == 1 && f.min_key.x == 1999 && f.min_key.y == 0);
  CU_ASSERT(f.max_key.ordinal == 1 && f.max_key.x == 2047 &&
            f.max_key.y == 2047);

  /* Half 0, half 65535: mean and population std 32767.5 exactly. */
  f = figures_of(&half, 0, 0);
  CU_ASSERT(u128_of(f.exact_sum) == count / 2 * 65535);
  CU_ASSERT_STRING_EQUAL(f.exact_sum_text, "274873712640000");
  imgstat_u128_format(f.exact_sumsq, text);
  CU_ASSERT_STRING_EQUAL(text, "18013848757862400000");
  CU_ASSERT(f.mean == 32767.5 && f.std == 32767.5);
  CU_ASSERT(f.min == 0 && f.min_key.ordinal == 1 && f.min_key.x == 1);
  CU_ASSERT(f.max == 65535 && f.max_key.ordinal == 0 && f.max_key.x == 2047);
  f = figures_of(&half, 0, 1);
  long double N = (long double)count;
  double want = (double)(32767.5L * sqrtl(N / (N - 1)));
  CU_ASSERT(fabs(f.std - want) <= 1e-15 * want);
}

/* Float partials whose exact pooled figures the test computes with
 * integers: means a / 2^10, m2 b / 2^20; several data sets, so that the
 * exponents of the exact N * M2 come in both parities. */
static void float_exact_set(uint64_t seed, int parts) {
  imgstat_pool pool;
  imgstat_pool_init(&pool);
  i128 s1 = 0, s2 = 0; /* sum n a; sum b + n a^2 */
  uint64_t N = 0;
  for (int k = 0; k < parts; k++) {
    int64_t a = (int64_t)(test_rand(&seed) % (1u << 21)) - (1 << 20);
    int64_t b = (int64_t)(test_rand(&seed) % (UINT64_C(1) << 40));
    double mean = ldexp((double)a, -10);
    imgstat_partial p =
        partial_of(1 + test_rand(&seed) % (1u << 20), mean - 1, mean + 1);
    p.mean = mean;
    p.m2 = ldexp((double)b, -20);
    add_one(&pool, (uint64_t)k, &p, IMGSTAT_F32, 1);
    s1 += (i128)p.count * a;
    s2 += (i128)b + (i128)p.count * a * a;
    N += p.count;
  }
  for (int ddof = 0; ddof <= 1; ddof++) {
    imgstat_pool_figures f = figures_of(&pool, 0, ddof);
    CU_ASSERT(f.count == N);
    /* mean = s1 / (N 2^10), the nearest double. */
    double m = s1 >= 0 ? f.mean : -f.mean;
    CU_ASSERT(is_nearest(m * 1024.0, (u128)(s1 >= 0 ? s1 : -s1), N));
    CU_ASSERT(same_bits(f.sum, ldexp((double)s1, -10)));
    /* std = sqrt((N s2 - s1^2) 2^-20 / (N (N - ddof))). */
    i128 d = (i128)N * s2 - s1 * s1;
    long double den = (long double)N * (long double)(N - (uint64_t)ddof);
    double want = (double)(sqrtl((long double)d / den) / 1024.0L);
    /* valgrind computes long double in double precision: the last bits
     * then differ, in the library as in this reference. */
    if (!UNDER_VALGRIND())
      CU_ASSERT(same_bits(f.std, want));
  }
}

static void test_float_exact(void) {
  for (int k = 0; k < 16; k++)
    float_exact_set(7 + (uint64_t)k, 1 + 7 * k);
}

/* The rounding of the mean and the sum: ties go to even. N = 2^40 and
 * sums 2^54 + 2 and 2^54 + 6: means 2^14 + 2^-39 and 2^14 + 3 * 2^-39 (ulp
 * 2^-38), sums halfway too (ulp 4). */
static void test_ties_to_even(void) {
  for (uint64_t extra = 2; extra <= 6; extra += 4) {
    imgstat_pool pool;
    imgstat_pool_init(&pool);
    for (int k = 0; k < 64; k++) {
      imgstat_partial p =
          partial_of(UINT64_C(1) << 34, 16384, k == 0 ? 16385 : 16384);
      p.sum = (UINT64_C(1) << 48) + (k == 0 ? extra : 0);
      p.sumsq = 0; /* not used here */
      add_one(&pool, (uint64_t)k, &p, IMGSTAT_U16, 1);
    }
    imgstat_pool_figures f = figures_of(&pool, 0, 0);
    CU_ASSERT(u128_of(f.exact_sum) == ((u128)1 << 54) + extra);
    if (extra == 2) {
      CU_ASSERT(f.mean == 16384.0);
      CU_ASSERT(f.sum == 0x1p54);
    } else {
      CU_ASSERT(f.mean == 16384.0 + 0x1p-37);
      CU_ASSERT(f.sum == 0x1p54 + 8);
    }
  }
  /* Just above a tie: N = 2^45 + 1, sum = 16384 N + 65, mean 16384 +
   * 2^-39 + about 2^-45: up to 16384 + 2^-38. */
  imgstat_pool pool;
  imgstat_pool_init(&pool);
  imgstat_partial p = partial_of((UINT64_C(1) << 45) + 1, 16384, 16385);
  p.sum = 16384 * p.count + 65;
  add_one(&pool, 0, &p, IMGSTAT_U16, 1);
  imgstat_pool_figures f = figures_of(&pool, 0, 0);
  CU_ASSERT(f.mean == 16384.0 + 0x1p-38);
  /* f32: 1 + 2^-53 is a tie; 2^-300 (in a word of its own) or 2^-174 (in
   * the word the top 128 bits end in) below the top 128 bits of the exact
   * sum tips it: 1 + 2^-52. */
  for (int tiny = -300; tiny <= -174; tiny += 126) {
    imgstat_pool_init(&pool);
    const double means[3] = {1.0, 0x1p-53, ldexp(1.0, tiny)};
    for (int k = 0; k < 3; k++) {
      p = partial_of(1, means[k], means[k]);
      p.mean = means[k];
      add_one(&pool, (uint64_t)k, &p, IMGSTAT_F32, 1);
    }
    f = figures_of(&pool, 0, 0);
    CU_ASSERT(f.sum == 1.0 + 0x1p-52);
  }
}

/* Means of +-1e30 that cancel: the exact sums give mean 0 and std 1e30
 * exactly, where a rounding merge would leave traces. */
static void test_float_cancellation(void) {
  imgstat_pool pool;
  imgstat_pool_init(&pool);
  for (int k = 0; k < 8; k++) {
    double mean = k % 2 ? -1e30 : 1e30;
    imgstat_partial p = partial_of(UINT64_C(1) << 30, mean, mean);
    p.mean = mean;
    p.m2 = 0;
    add_one(&pool, (uint64_t)k, &p, IMGSTAT_F32, 64);
  }
  imgstat_pool_figures f = figures_of(&pool, 0, 0);
  CU_ASSERT(f.mean == 0.0 && f.sum == 0.0);
  CU_ASSERT(f.std == 1e30);
  CU_ASSERT(f.min == -1e30 && f.min_key.ordinal == 1);
  CU_ASSERT(f.max == 1e30 && f.max_key.ordinal == 0);
}

/* ---- extrema keys ----------------------------------------------------------
 */

static void set_extrema(imgstat_partial *p, double min, uint64_t min_index,
                        double max, uint64_t max_index) {
  p->min = min;
  p->min_index = min_index;
  p->max = max;
  p->max_index = max_index;
}

/* Equal values: the first by (ordinal, y, x), whatever the order of adds;
 * for floats the value kept is that sample's own (+0.0 before -0.0). */
static void test_keys(void) {
  imgstat_partial p[4];
  for (int k = 0; k < 4; k++) {
    imgstat_partial_init(&p[k]);
    p[k].count = 10;
    p[k].mean = 1;
  }
  /* Images 10 wide. Ordinal 5: min -0.0 at (3, 1); ordinal 2: min +0.0 at
   * (9, 4); ordinals 7 and 8: max 3.0 at (0, 2) and (5, 0). */
  set_extrema(&p[0], -0.0, 1 * 10 + 3, 1, 0);
  set_extrema(&p[1], 0.0, 4 * 10 + 9, 1, 0);
  set_extrema(&p[2], 1, 0, 3, 2 * 10 + 0);
  set_extrema(&p[3], 1, 0, 3, 0 * 10 + 5);
  const uint64_t ord[4] = {5, 2, 7, 8};
  const int orders[2][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}};
  imgstat_error err;
  for (int o = 0; o < 2; o++) {
    imgstat_pool pool;
    imgstat_pool_init(&pool);
    for (int i = 0; i < 4; i++) {
      int k = orders[o][i];
      add_one(&pool, ord[k], &p[k], IMGSTAT_F32, 10);
    }
    imgstat_pool_figures f = figures_of(&pool, 0, 0);
    CU_ASSERT(f.min == 0.0 && !signbit(f.min));
    CU_ASSERT(f.min_key.ordinal == 2 && f.min_key.x == 9 && f.min_key.y == 4);
    CU_ASSERT(f.max == 3.0);
    CU_ASSERT(f.max_key.ordinal == 7 && f.max_key.x == 0 && f.max_key.y == 2);
  }
  /* Within one ordinal (two runs of one image pooled separately): y first,
   * then x. */
  imgstat_pool a, b;
  imgstat_pool_init(&a);
  imgstat_pool_init(&b);
  p[2].min = 0;
  p[2].min_index = 1 * 10 + 0; /* (0, 1) */
  p[3].min = 0;
  p[3].min_index = 0 * 10 + 7; /* (7, 0): first */
  CU_ASSERT(imgstat_pool_add(&a, 4, &p[2], 1, IMGSTAT_F32, 10, &err) ==
            IMGSTAT_OK);
  CU_ASSERT(imgstat_pool_add(&b, 4, &p[3], 1, IMGSTAT_F32, 10, &err) ==
            IMGSTAT_OK);
  CU_ASSERT(imgstat_pool_merge(&a, &b, &err) == IMGSTAT_OK);
  CU_ASSERT(a.ch[0].min_key.x == 7 && a.ch[0].min_key.y == 0);
  CU_ASSERT(a.ch[0].max_key.x == 5 && a.ch[0].max_key.y == 0);
}

/* ---- serialized form --------------------------------------------------------
 */

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

static void reseal(uint8_t *buf, size_t size) {
  uint64_t h = fnv1a(buf, size - 8);
  for (int i = 0; i < 8; i++)
    buf[size - 8 + i] = (uint8_t)(h >> (8 * i));
}

static void check_serialized(const imgstat_pool *pool) {
  uint8_t *buf = malloc(IMGSTAT_POOL_SERIALIZED_MAX + 1);
  uint8_t *bad = malloc(IMGSTAT_POOL_SERIALIZED_MAX + 1);
  uint8_t *again = malloc(IMGSTAT_POOL_SERIALIZED_MAX);
  imgstat_pool *q = malloc(sizeof *q), *sentinel = malloc(sizeof *sentinel);
  CU_ASSERT_FATAL(buf && bad && again && q && sentinel);
  imgstat_error err;
  size_t size = pool_bytes(pool, buf);
  CU_ASSERT(size == imgstat_pool_serialized_size(pool));
  CU_ASSERT(size <= IMGSTAT_POOL_SERIALIZED_MAX);
  CU_ASSERT(memcmp(buf, "IMGSPOOL\1\0\0\0", 12) == 0);

  /* Round trip: the same bytes again, the same figures. */
  CU_ASSERT_FATAL(imgstat_pool_deserialize(q, buf, size, &err) == IMGSTAT_OK);
  CU_ASSERT(q->channels == pool->channels && q->images == pool->images);
  CU_ASSERT(pool_bytes(q, again) == size && memcmp(again, buf, size) == 0);
  if (pool->channels)
    CU_ASSERT(figures_same(q, pool));

  /* Too small a buffer: refused, nothing written. */
  memset(bad, 0xA5, size);
  size_t used = 0;
  CU_ASSERT(imgstat_pool_serialize(pool, bad, size - 1, &used, &err) ==
            IMGSTAT_ERR_ARG);
  CU_ASSERT(used == size && bad[0] == 0xA5 && bad[size - 2] == 0xA5);

  /* Every single-bit flip, every shorter size and one byte more: refused
   * with IMGSTAT_ERR_FORMAT, the output pool untouched. */
  imgstat_pool_init(sentinel);
  int all_refused = 1, untouched = 1;
  for (size_t i = 0; i < size; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(bad, buf, size);
      bad[i] ^= (uint8_t)(1u << bit);
      *q = *sentinel;
      all_refused &=
          imgstat_pool_deserialize(q, bad, size, &err) == IMGSTAT_ERR_FORMAT;
      untouched &= memcmp(q, sentinel, sizeof *q) == 0;
    }
  for (size_t n = 0; n < size; n++)
    all_refused &=
        imgstat_pool_deserialize(q, buf, n, &err) == IMGSTAT_ERR_FORMAT;
  memcpy(bad, buf, size);
  bad[size] = 0;
  all_refused &=
      imgstat_pool_deserialize(q, bad, size + 1, &err) == IMGSTAT_ERR_FORMAT;
  CU_ASSERT(all_refused);
  CU_ASSERT(untouched);

  /* Named failures, checksum made right again where it matters. */
  memcpy(bad, buf, size);
  bad[0] = 'X';
  CU_ASSERT(imgstat_pool_deserialize(q, bad, size, &err) == IMGSTAT_ERR_FORMAT);
  CU_ASSERT(strstr(err.message, "not a serialized") != NULL);
  memcpy(bad, buf, size);
  bad[8] = 2; /* version 2 */
  reseal(bad, size);
  CU_ASSERT(imgstat_pool_deserialize(q, bad, size, &err) == IMGSTAT_ERR_FORMAT);
  CU_ASSERT(strstr(err.message, "version 2") != NULL);
  if (pool->channels) {
    /* channel 0's count set to 0 while its min stays finite */
    memcpy(bad, buf, size);
    memset(bad + 32, 0, 8);
    reseal(bad, size);
    CU_ASSERT(imgstat_pool_deserialize(q, bad, size, &err) ==
              IMGSTAT_ERR_FORMAT);
    CU_ASSERT(strstr(err.message, "no pool can have") != NULL);
  }
  free(buf);
  free(bad);
  free(again);
  free(q);
  free(sentinel);
}

static void test_serialize(void) {
  static imgstat_partial parts[N_PARTS][2];
  uint32_t widths[N_PARTS];
  int order[N_PARTS];
  for (int k = 0; k < N_PARTS; k++)
    order[k] = k;
  imgstat_pool *p = malloc(sizeof *p);
  CU_ASSERT_FATAL(p != NULL);
  imgstat_pool_init(p);
  check_serialized(p); /* empty */
  make_parts(parts, widths, IMGSTAT_U16);
  pool_run(p, parts, widths, order, 0, N_PARTS, IMGSTAT_U16);
  check_serialized(p);
  make_parts(parts, widths, IMGSTAT_F32);
  pool_run(p, parts, widths, order, 0, N_PARTS, IMGSTAT_F32);
  check_serialized(p);
  free(p);
}

/* ---- arguments
 * ---------------------------------------------------------------- */

static void test_arguments(void) {
  imgstat_pool a, b, before;
  imgstat_error err;
  imgstat_partial p[4];
  for (int c = 0; c < 4; c++) {
    imgstat_partial_init(&p[c]);
    p[c].count = 4;
    p[c].sum = 8;
    p[c].sumsq = 16;
    p[c].min = p[c].max = 2;
    p[c].min_index = p[c].max_index = 3;
  }
  imgstat_pool_init(&a);
  CU_ASSERT(imgstat_pool_add(&a, 0, p, 3, IMGSTAT_U8, 2, &err) == IMGSTAT_OK);
  before = a;
  /* Another layout or depth. */
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 4, IMGSTAT_U8, 2, &err) ==
            IMGSTAT_ERR_ARG);
  CU_ASSERT(strstr(err.message, "RGBA 8-bit") != NULL);
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 3, IMGSTAT_U16, 2, &err) ==
            IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 0, IMGSTAT_U8, 2, &err) ==
            IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 3, (imgstat_sample)3, 2, &err) ==
            IMGSTAT_ERR_ARG);
  imgstat_pool_init(&b);
  CU_ASSERT(imgstat_pool_add(&b, 5, p, 3, IMGSTAT_U16, 2, &err) == IMGSTAT_OK);
  CU_ASSERT(imgstat_pool_merge(&a, &b, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_pool_merge(&a, &a, &err) == IMGSTAT_ERR_ARG);
  /* Partials no image gives. */
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 3, IMGSTAT_U8, 0, &err) ==
            IMGSTAT_ERR_ARG); /* width 0 */
  p[1].max = 256;
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 3, IMGSTAT_U8, 2, &err) ==
            IMGSTAT_ERR_ARG);
  p[1].max = 2;
  p[2].min_index = UINT64_MAX - 1; /* row past 2^32 - 1 */
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 3, IMGSTAT_U8, 2, &err) ==
            IMGSTAT_ERR_ARG);
  p[2].min_index = 3;
  /* Counts past 64 bits. */
  p[0].count = UINT64_MAX - 1;
  CU_ASSERT(imgstat_pool_add(&a, 1, p, 3, IMGSTAT_U8, 2, &err) ==
            IMGSTAT_ERR_LIMIT);
  p[0].count = 4;
  CU_ASSERT(memcmp(&a, &before, sizeof a) == 0); /* every refusal: unchanged */

  imgstat_pool f;
  imgstat_pool_init(&f);
  p[0].mean = NAN;
  CU_ASSERT(imgstat_pool_add(&f, 0, p, 1, IMGSTAT_F32, 2, &err) ==
            IMGSTAT_ERR_ARG);
  p[0].mean = 1;
  p[0].m2 = -1;
  CU_ASSERT(imgstat_pool_add(&f, 0, p, 1, IMGSTAT_F32, 2, &err) ==
            IMGSTAT_ERR_ARG);
  p[0].m2 = INFINITY;
  CU_ASSERT(imgstat_pool_add(&f, 0, p, 1, IMGSTAT_F32, 2, &err) ==
            IMGSTAT_ERR_ARG);
  CU_ASSERT(f.channels == 0 && f.images == 0);

  /* Figures of a channel the pool does not have. */
  imgstat_pool_figures fig;
  CU_ASSERT(imgstat_pool_figures_compute(&a, 3, 0, &fig, &err) ==
            IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_pool_figures_compute(&f, 0, 0, &fig, &err) ==
            IMGSTAT_ERR_ARG);

  /* Empty pools merge either way; an empty image counts as an image. */
  imgstat_pool e;
  imgstat_pool_init(&e);
  CU_ASSERT(imgstat_pool_merge(&a, &e, &err) == IMGSTAT_OK);
  CU_ASSERT(memcmp(&a, &before, sizeof a) == 0);
  CU_ASSERT(imgstat_pool_merge(&e, &a, &err) == IMGSTAT_OK);
  CU_ASSERT(memcmp(&e, &a, sizeof a) == 0);
  imgstat_partial none[3];
  for (int c = 0; c < 3; c++)
    imgstat_partial_init(&none[c]);
  CU_ASSERT(imgstat_pool_add(&a, 9, none, 3, IMGSTAT_U8, 0, &err) ==
            IMGSTAT_OK);
  CU_ASSERT(a.images == 2 && a.ch[0].count == 4);
  CU_ASSERT(imgstat_pool_figures_compute(&a, 0, 5, &fig, &err) == IMGSTAT_OK);
  CU_ASSERT(fig.has_values && !fig.has_std);
}

static const test_case tests[] = {
    {"pool", NULL},
    {"u8 RGB: figures vs pixels", test_reference_u8},
    {"u16 YA: figures vs pixels", test_reference_u16},
    {"f32 RGBA: figures vs pixels", test_reference_f32},
    {"one image: the per-image figures' bits", test_one_image_same_as_figures},
    {"u16: same bits in every grouping", test_groupings_int},
    {"f32: same bits in every grouping", test_groupings_float},
    {"u16 past 2^32 samples: exact sums", test_past_2_32_samples},
    {"f32: exact mean and std", test_float_exact},
    {"ties to even", test_ties_to_even},
    {"f32: cancelling means", test_float_cancellation},
    {"extrema keys (ordinal, y, x)", test_keys},
    {"serialized form", test_serialize},
    {"arguments", test_arguments},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
