/*
 * The statistics of the valid samples on the device (imgstat_gpu_valid_stats:
 * a mask and nodata values) against the CPU's valid path on the same image
 * (imgstat_valid_compact, imgstat_cpu_stats of the compacted plane,
 * imgstat_valid_raster_pair): the same bits, channel by channel, and the
 * same nodata counts; and against a plain loop over the samples written
 * here (counts, extrema and their first raster positions, exact integer
 * sums). Images of 8 and 16 bits and float (with NaN, infinities and -0),
 * of awkward sizes, under random masks, an empty mask, a full one and
 * none; nodata values per channel, at the positions of the extrema, a
 * channel made of nodata alone, NaN as the nodata value; a label image's
 * labels (imgstat_gpu_valid_label_stats) against the CPU's reduction of
 * each label's pixel list. For 8- and 16-bit samples the histograms of the
 * valid samples (imgstat_gpu_valid_stats_hist, _label_stats_hist) against
 * imgstat_histogram_compute of the CPU's compacted plane and a plain
 * count written here, bin by bin; float samples refused there. The image's
 * region and its labels' in one call (imgstat_gpu_valid_regions_hist: the
 * fused pass of integer samples) for 1 to 200 channels and up to 700
 * labels against the CPU, and against the compaction path
 * (IMGSTAT_GPU_VALID_COMPACT) byte for byte. Batches of such images
 * (imgstat_gpu_valid_regions_batch) against each image's own call and the
 * CPU, byte for byte, with items that fail alone. Needs a CUDA
 * device: without one it is skipped (77).
 */
#include "imgstat/cuda.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static imgstat_gpu *g_gpu;
static uint64_t g_rng = 0x243f6a8885a308d3u;

/* The CPU's valid partials and nodata counts of img under v. */
static int cpu_valid(const imgstat_image *img, const imgstat_valid *v,
                     imgstat_partial *out, uint64_t *nodata) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  for (int c = 0; c < img->channels; c++) {
    imgstat_image part;
    imgstat_partial p[IMGSTAT_MAX_CHANNELS];
    if (imgstat_valid_compact(img, c, v, &part, &nodata[c], &err) != IMGSTAT_OK)
      return 0;
    imgstat_status st = imgstat_cpu_stats(&part, 1, p, &err);
    imgstat_image_free(&part);
    if (st != IMGSTAT_OK)
      return 0;
    imgstat_valid_raster_pair(img, c, v, &p[0].min_index, &p[0].max_index);
    out[c] = p[0];
  }
  return 1;
}

/* The plain loop: channel c's valid samples under v checked against p. */
static int loop_agrees(const imgstat_image *img, int c, const imgstat_valid *v,
                       const imgstat_partial *p, uint64_t nodata) {
  uint64_t n = (uint64_t)img->width * img->height;
  uint64_t count = 0, nans = 0, infs = 0, nod = 0, sum = 0, sumsq = 0;
  uint64_t min_at = UINT64_MAX, max_at = UINT64_MAX;
  double mn = INFINITY, mx = -INFINITY;
  int has = v->has_nodata[c];
  for (uint64_t i = 0; i < n; i++) {
    if (v->mask && !v->mask[i])
      continue;
    double s = test_sample_at(img, c, i);
    int is_nodata;
    if (img->sample == IMGSTAT_F32)
      is_nodata = has && (float)s == (float)v->nodata[c];
    else
      is_nodata = has && s == v->nodata[c];
    if (is_nodata) {
      nod++;
      continue;
    }
    if (isnan(s)) {
      nans++;
      continue;
    }
    if (isinf(s)) {
      infs++;
      continue;
    }
    count++;
    if (img->sample != IMGSTAT_F32) {
      sum += (uint64_t)s;
      sumsq += (uint64_t)s * (uint64_t)s;
    }
    if (s < mn) {
      mn = s;
      min_at = i;
    }
    if (s > mx) {
      mx = s;
      max_at = i;
    }
  }
  int ok = nod == nodata && count == p->count;
  if (img->sample == IMGSTAT_F32) {
    ok = ok && nans == p->nan_count && infs == p->inf_count;
    if (count)
      ok = ok && mn == p->min && mx == p->max;
  } else {
    ok = ok && sum == p->sum && sumsq == p->sumsq;
    if (count)
      ok = ok && mn == p->min && mx == p->max && min_at == p->min_index &&
           max_at == p->max_index;
  }
  if (!ok)
    printf("\n  channel %d: loop count %llu nodata %llu min %g@%llu max "
           "%g@%llu; GPU count %llu nodata %llu min %g@%llu max %g@%llu\n",
           c, (unsigned long long)count, (unsigned long long)nod, mn,
           (unsigned long long)min_at, mx, (unsigned long long)max_at,
           (unsigned long long)p->count, (unsigned long long)nodata, p->min,
           (unsigned long long)p->min_index, p->max,
           (unsigned long long)p->max_index);
  return ok;
}

/* Whether g, the GPU's histogram of channel c's valid samples under v (a
 * mask or a pixel list, nodata values), has the bins, counts and total of
 * imgstat_histogram_compute of the CPU's compacted plane and of a plain
 * count over the pixels. */
static int hist_agrees(const imgstat_image *img, int c, const imgstat_valid *v,
                       const imgstat_histogram *g) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_image part;
  uint64_t nod = 0;
  imgstat_histogram h;
  memset(&h, 0, sizeof h);
  if (imgstat_valid_compact(img, c, v, &part, &nod, &err) != IMGSTAT_OK)
    return 0;
  imgstat_status st = imgstat_histogram_compute(&part, 0, NULL, &h, &err);
  imgstat_image_free(&part);
  if (st != IMGSTAT_OK)
    return 0;
  int ok = g->counts && g->sample == h.sample && g->bins == h.bins &&
           g->lo == h.lo && g->hi == h.hi && g->total == h.total &&
           g->nan_count == h.nan_count && g->inf_count == h.inf_count &&
           memcmp(g->counts, h.counts, h.bins * sizeof *h.counts) == 0;
  /* the plain count */
  uint64_t *loop = calloc(h.bins, sizeof *loop);
  uint64_t n = v->npixels ? v->npixels : (uint64_t)img->width * img->height;
  uint64_t total = 0;
  ok = ok && loop != NULL;
  for (uint64_t j = 0; ok && j < n; j++) {
    uint64_t i = v->npixels ? v->pixels[j] : j;
    if (v->mask && !v->mask[i])
      continue;
    double x = test_sample_at(img, c, i);
    if (v->has_nodata[c] && x == v->nodata[c])
      continue;
    loop[(uint64_t)x]++;
    total++;
  }
  ok = ok && total == g->total &&
       memcmp(loop, g->counts, h.bins * sizeof *loop) == 0;
  if (!ok)
    printf("\n  channel %d: GPU histogram of %llu samples, CPU's %llu, "
           "loop's %llu: they differ\n",
           c, (unsigned long long)g->total, (unsigned long long)h.total,
           (unsigned long long)total);
  free(loop);
  imgstat_histogram_free(&h);
  return ok;
}

/* Sample i of channel c set to value. */
static void set_sample(imgstat_image *img, int c, uint64_t i, double value) {
  switch (img->sample) {
  case IMGSTAT_U8:
    ((uint8_t *)img->planes[c])[i] = (uint8_t)value;
    break;
  case IMGSTAT_U16:
    ((uint16_t *)img->planes[c])[i] = (uint16_t)value;
    break;
  case IMGSTAT_F32:
    ((float *)img->planes[c])[i] = (float)value;
    break;
  }
}

/* A random sample of a few values (so that nodata hits often), or for
 * floats now and then NaN, an infinity or -0. */
static double random_sample(imgstat_sample sample) {
  uint64_t r = test_rand(&g_rng);
  if (sample == IMGSTAT_F32) {
    switch (r % 23) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    case 2:
      return -0.0;
    case 3:
      return 0.0;
    default:
      return (double)(float)((double)(r >> 11) * 0x1p-53 * 200.0 - 100.0);
    }
  }
  uint64_t top = sample == IMGSTAT_U8 ? 256 : 65536;
  return (double)((r >> 8) % (r % 3 == 0 ? 7 : top));
}

/* One case: img under v on the GPU against the CPU and the loop. */
static void check(const char *what, const imgstat_image *img,
                  const imgstat_valid *v) {
  imgstat_partial gpu[IMGSTAT_MAX_CHANNELS], cpu[IMGSTAT_MAX_CHANNELS];
  uint64_t gn[IMGSTAT_MAX_CHANNELS], cn[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  memset(&err, 0, sizeof err);
  memset(gpu, 0x5a, sizeof gpu);
  imgstat_status st = imgstat_gpu_valid_stats(
      g_gpu, img, v, IMGSTAT_KERNEL_FAST, gpu, gn, &err);
  if (st != IMGSTAT_OK)
    printf("\n  %s: %s\n", what, err.message);
  CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
  CU_ASSERT_FATAL(cpu_valid(img, v, cpu, cn));
  for (int c = 0; c < img->channels; c++) {
    int same = memcmp(&gpu[c], &cpu[c], sizeof gpu[c]) == 0 && gn[c] == cn[c];
    if (!same)
      printf("\n  %s (%ux%u, %d-byte samples), channel %d: GPU and CPU "
             "differ\n",
             what, img->width, img->height, (int)img->sample, c);
    CU_ASSERT(same);
    CU_ASSERT(loop_agrees(img, c, v, &gpu[c], gn[c]));
  }
  /* with histograms: the same partials, and the histograms (integer
   * samples; float ones refused) */
  imgstat_partial again[IMGSTAT_MAX_CHANNELS];
  uint64_t an[IMGSTAT_MAX_CHANNELS];
  imgstat_histogram hist[IMGSTAT_MAX_CHANNELS];
  st = imgstat_gpu_valid_stats_hist(g_gpu, img, v, IMGSTAT_KERNEL_FAST, again,
                                    an, hist, &err);
  if (img->sample == IMGSTAT_F32) {
    CU_ASSERT_EQUAL(st, IMGSTAT_ERR_UNSUPPORTED);
    return;
  }
  if (st != IMGSTAT_OK)
    printf("\n  %s, histograms: %s\n", what, err.message);
  CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
  for (int c = 0; c < img->channels; c++) {
    CU_ASSERT(memcmp(&again[c], &gpu[c], sizeof gpu[c]) == 0 && an[c] == gn[c]);
    CU_ASSERT(hist_agrees(img, c, v, &hist[c]));
    imgstat_histogram_free(&hist[c]);
  }
}

static const imgstat_sample k_samples[3] = {IMGSTAT_U8, IMGSTAT_U16,
                                            IMGSTAT_F32};

/* Random images under random masks and nodata values, several sizes. */
static void test_random(void) {
  const uint32_t sizes[][2] = {{1, 1}, {7, 3}, {33, 17}, {4097, 3}, {640, 480}};
  for (int t = 0; t < 3; t++)
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
      imgstat_image img;
      uint32_t w = sizes[z][0], h = sizes[z][1];
      int channels = 1 + (int)(z % 3);
      CU_ASSERT_FATAL(test_image_make(&img, w, h, channels, k_samples[t]));
      uint64_t n = (uint64_t)w * h;
      for (int c = 0; c < channels; c++)
        for (uint64_t i = 0; i < n; i++)
          set_sample(&img, c, i, random_sample(img.sample));
      uint8_t *mask = malloc(n);
      CU_ASSERT_FATAL(mask != NULL);
      for (uint64_t i = 0; i < n; i++)
        mask[i] = (uint8_t)(test_rand(&g_rng) % 3 ? 1 + i % 5 : 0);
      imgstat_valid v;
      memset(&v, 0, sizeof v);
      /* nodata only, on every channel but the last of several */
      for (int c = 0; c < (channels == 1 ? 1 : channels - 1); c++) {
        v.has_nodata[c] = 1;
        v.nodata[c] = test_sample_at(&img, c, n / 2);
        if (isnan(v.nodata[c]))
          v.nodata[c] = 0;
      }
      check("nodata", &img, &v);
      v.mask = mask;
      check("mask and nodata", &img, &v);
      memset(v.has_nodata, 0, sizeof v.has_nodata);
      check("mask", &img, &v);
      free(mask);
      test_image_free(&img);
    }
}

/* Empty and full masks, a channel of nodata alone, nodata at the extrema,
 * NaN as the nodata value. */
static void test_edges(void) {
  for (int t = 0; t < 3; t++) {
    imgstat_image img;
    uint32_t w = 301, h = 7;
    uint64_t n = (uint64_t)w * h;
    CU_ASSERT_FATAL(test_image_make(&img, w, h, 3, k_samples[t]));
    for (uint64_t i = 0; i < n; i++) {
      set_sample(&img, 0, i, 9);           /* all nodata */
      set_sample(&img, 1, i, 3 + i % 11);  /* extrema repeated */
      set_sample(&img, 2, i, 5 + i % 101); /* extrema once per period */
    }
    set_sample(&img, 1, 0, 2);       /* the min first, as nodata */
    set_sample(&img, 1, n - 1, 2);   /* and the min again, last */
    set_sample(&img, 2, 4, 200);     /* the max, nodata */
    set_sample(&img, 2, n - 3, 199); /* the max of what is left */
    uint8_t *mask = calloc(n, 1);
    CU_ASSERT_FATAL(mask != NULL);
    imgstat_valid v;
    memset(&v, 0, sizeof v);
    v.has_nodata[0] = v.has_nodata[1] = v.has_nodata[2] = 1;
    v.nodata[0] = 9;
    v.nodata[1] = 2;
    v.nodata[2] = 200;
    check("nodata at the extrema, a channel of nodata", &img, &v);
    v.mask = mask;
    check("empty mask", &img, &v);
    memset(mask, 1, n);
    check("full mask", &img, &v);
    mask[n - 3] = 0; /* the next max's position outside */
    mask[5] = 0;
    check("mask over the extrema", &img, &v);
    if (img.sample == IMGSTAT_F32) {
      for (uint64_t i = 0; i < n; i += 13)
        set_sample(&img, 1, i, NAN);
      set_sample(&img, 2, 1, -0.0);
      set_sample(&img, 2, 2, 0.0);
      v.nodata[1] = NAN; /* equals no sample: NaN counted as NaN */
      v.nodata[2] = 0.0; /* -0 and +0 both nodata */
      check("NaN samples, NaN and 0 as nodata", &img, &v);
      v.has_nodata[1] = 0;
      v.nodata[2] = -0.0;
      check("NaN samples, -0 as nodata", &img, &v);
    }
    free(mask);
    test_image_free(&img);
  }
}

/* An empty image, and what the device refuses (as the CPU does). */
static void test_arguments(void) {
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  uint64_t nodata[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, 5, 5, 1, IMGSTAT_U8));
  memset(img.planes[0], 7, 25);
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  v.has_nodata[0] = 1;
  v.nodata[0] = 300; /* not an 8-bit sample */
  CU_ASSERT_EQUAL(
      imgstat_gpu_valid_stats(g_gpu, &img, &v, 0, out, nodata, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT(strstr(err.message, "nodata 300") != NULL);
  uint32_t list[2] = {1, 3};
  memset(&v, 0, sizeof v);
  v.pixels = list;
  v.npixels = 2;
  CU_ASSERT_EQUAL(
      imgstat_gpu_valid_stats(g_gpu, &img, &v, 0, out, nodata, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(
      imgstat_gpu_valid_stats(NULL, &img, NULL, 0, out, nodata, &err),
      IMGSTAT_ERR_ARG);
  /* no valid set at all: every sample */
  check("no valid set", &img, &(imgstat_valid){0});
  test_image_free(&img);
}

/* A label image's labels on the device (imgstat_gpu_valid_label_stats)
 * against the CPU's reduction of each label's pixel list: labels 1..5 at
 * random (label 5 on one pixel, label 3 absent from the lists: none), the
 * lists in raster order (inside a random mask), with nodata values. */
static void test_labels(void) {
  enum { NL = 5 };
  for (int t = 0; t < 3; t++) {
    imgstat_image img;
    uint32_t w = 97, h = 61;
    uint64_t n = (uint64_t)w * h;
    CU_ASSERT_FATAL(test_image_make(&img, w, h, 2, k_samples[t]));
    for (int c = 0; c < 2; c++)
      for (uint64_t i = 0; i < n; i++)
        set_sample(&img, c, i, random_sample(img.sample));
    uint32_t *label = malloc(n * sizeof *label);
    uint32_t *pixels = malloc(n * sizeof *pixels);
    CU_ASSERT_FATAL(label != NULL && pixels != NULL);
    for (uint64_t i = 0; i < n; i++) {
      uint32_t l = (uint32_t)(test_rand(&g_rng) % 6); /* 0: none */
      label[i] = l == 3 || test_rand(&g_rng) % 4 == 0 ? 0 : l;
    }
    label[n / 2] = 5; /* label 5: one pixel */
    for (uint64_t i = 0; i < n; i++)
      if (i != n / 2 && label[i] == 5)
        label[i] = 4;
    uint64_t start[NL], count[NL], at = 0;
    for (uint32_t k = 0; k < NL; k++) {
      start[k] = at;
      for (uint64_t i = 0; i < n; i++)
        if (label[i] == k + 1)
          pixels[at++] = (uint32_t)i;
      count[k] = at - start[k];
    }
    imgstat_valid v;
    memset(&v, 0, sizeof v);
    v.has_nodata[0] = 1;
    v.nodata[0] = test_sample_at(&img, 0, n / 3);
    if (isnan(v.nodata[0]))
      v.nodata[0] = 0;
    /* NL x 2 channels of each, label k's channel c at k * 2 + c; a
     * canary after them */
    imgstat_partial *out = calloc(NL * 2 + 1, sizeof *out);
    uint64_t *nod = calloc(NL * 2 + 1, sizeof *nod);
    imgstat_histogram *hist = calloc(NL * 2, sizeof *hist);
    CU_ASSERT_FATAL(out != NULL && nod != NULL && hist != NULL);
    memset(&out[NL * 2], 0x5a, sizeof *out);
    nod[NL * 2] = 12345;
    imgstat_error err;
    memset(&err, 0, sizeof err);
    imgstat_status st =
        imgstat_gpu_valid_label_stats(g_gpu, &img, &v, IMGSTAT_KERNEL_FAST, NL,
                                      pixels, start, count, out, nod, &err);
    if (st != IMGSTAT_OK)
      printf("\n  labels: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
    CU_ASSERT(nod[NL * 2] == 12345);
    const int with_hist = img.sample != IMGSTAT_F32;
    if (with_hist) { /* the same partials, and each label's histograms */
      imgstat_partial *again = calloc(NL * 2, sizeof *again);
      uint64_t *an = calloc(NL * 2, sizeof *an);
      CU_ASSERT_FATAL(again != NULL && an != NULL);
      st = imgstat_gpu_valid_label_stats_hist(
          g_gpu, &img, &v, IMGSTAT_KERNEL_FAST, NL, pixels, start, count, again,
          an, hist, &err);
      if (st != IMGSTAT_OK)
        printf("\n  labels' histograms: %s\n", err.message);
      CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
      CU_ASSERT(memcmp(again, out, NL * 2 * sizeof *out) == 0);
      CU_ASSERT(memcmp(an, nod, NL * 2 * sizeof *nod) == 0);
      free(again);
      free(an);
    }
    for (uint32_t k = 0; k < NL; k++) {
      imgstat_valid lv = v;
      lv.pixels = pixels + start[k];
      lv.npixels = count[k];
      imgstat_partial cpu[IMGSTAT_MAX_CHANNELS];
      uint64_t cn[IMGSTAT_MAX_CHANNELS];
      /* a label without pixels (3 here) is an empty region: a pixel
       * list of none means "no list" to the CPU's predicate, so the CPU
       * side is the empty region as a mask of zeros */
      uint8_t *none = count[k] == 0 ? calloc(n, 1) : NULL;
      if (count[k] == 0) {
        CU_ASSERT_FATAL(none != NULL);
        lv.pixels = NULL;
        lv.mask = none;
      }
      CU_ASSERT_FATAL(cpu_valid(&img, &lv, cpu, cn));
      free(none);
      for (int c = 0; c < 2; c++) {
        const imgstat_partial *g = &out[k * 2 + c];
        int same =
            memcmp(g, &cpu[c], sizeof *g) == 0 && nod[k * 2 + c] == cn[c];
        if (with_hist) {
          imgstat_valid hv = lv;
          if (count[k] == 0) { /* the empty region, as a mask of zeros */
            uint8_t *zero = calloc(n, 1);
            CU_ASSERT_FATAL(zero != NULL);
            hv.mask = zero;
            same = same && hist_agrees(&img, c, &hv, &hist[k * 2 + c]);
            free(zero);
          } else {
            same = same && hist_agrees(&img, c, &hv, &hist[k * 2 + c]);
          }
          imgstat_histogram_free(&hist[k * 2 + c]);
        }
        if (!same)
          printf("\n  label %u channel %d (%d-byte samples): GPU and CPU "
                 "differ\n",
                 k + 1, c, (int)img.sample);
        CU_ASSERT(same);
      }
    }
    free(out);
    free(nod);
    free(hist);
    free(label);
    free(pixels);
    test_image_free(&img);
  }
}

/* The image's region and its labels' in one call
 * (imgstat_gpu_valid_regions_hist, integer samples: the fused pass) for
 * one image of w x h, channels of sample, a mask or none, nl labels laid
 * in runs inside the mask (the last one nodata alone on channel 0; with
 * many labels on few pixels, places of no pixel), nodata values on
 * channel 0 and the last; every region and channel against the CPU
 * (cpu_valid of the region, hist_agrees), then the same bytes by the
 * compaction path (IMGSTAT_GPU_VALID_COMPACT). */
static void regions_case(uint32_t w, uint32_t h, int channels,
                         imgstat_sample sample, uint32_t nl, int with_mask,
                         int with_hist) {
  imgstat_image img;
  const uint64_t n = (uint64_t)w * h;
  const size_t nc = (size_t)channels;
  CU_ASSERT_FATAL(test_image_make(&img, w, h, channels, sample));
  for (int c = 0; c < channels; c++)
    for (uint64_t i = 0; i < n; i++)
      set_sample(&img, c, i, random_sample(sample));
  uint8_t *mask = with_mask ? malloc(n) : NULL;
  uint8_t *zero = calloc(n, 1);
  uint32_t *label = calloc(n, sizeof *label);
  uint32_t *pixels = malloc(n * sizeof *pixels);
  uint64_t *start = calloc(nl ? nl : 1, sizeof *start);
  uint64_t *count = calloc(nl ? nl : 1, sizeof *count);
  CU_ASSERT_FATAL(zero && label && pixels && start && count &&
                  (mask || !with_mask));
  uint32_t cur = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (mask)
      mask[i] = (uint8_t)(test_rand(&g_rng) % 3 ? 1 : 0);
    if (nl && test_rand(&g_rng) % 50 == 0)
      cur = (uint32_t)(test_rand(&g_rng) % (nl + 1));
    label[i] = mask && !mask[i] ? 0 : cur;
  }
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  v.mask = mask;
  v.has_nodata[0] = 1;
  v.nodata[0] = 3;
  if (channels > 1) {
    v.has_nodata[channels - 1] = 1;
    v.nodata[channels - 1] = sample == IMGSTAT_U8 ? 255 : 65535;
  }
  for (uint64_t i = 0; nl > 1 && i < n; i++)
    if (label[i] == nl)
      set_sample(&img, 0, i, 3); /* the last label: nodata alone */
  uint64_t at = 0;
  for (uint32_t k = 0; k < nl; k++) {
    start[k] = at;
    for (uint64_t i = 0; i < n; i++)
      if (label[i] == k + 1)
        pixels[at++] = (uint32_t)i;
    count[k] = at - start[k];
  }
  const size_t nlc = nl ? (size_t)nl * nc : 1;
  imgstat_partial *out = calloc(nc, sizeof *out);
  imgstat_partial *lout = calloc(nlc, sizeof *lout);
  uint64_t *nod = calloc(nc, sizeof *nod), *lnod = calloc(nlc, sizeof *lnod);
  imgstat_histogram *hist = with_hist ? calloc(nc, sizeof *hist) : NULL;
  imgstat_histogram *lhist = with_hist ? calloc(nlc, sizeof *lhist) : NULL;
  CU_ASSERT_FATAL(out && lout && nod && lnod &&
                  (!with_hist || (hist && lhist)));
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_gpu_valid_regions_hist(
      g_gpu, &img, &v, IMGSTAT_KERNEL_FAST, out, nod, hist, nl, pixels, start,
      count, lout, lnod, lhist, &err);
  if (st != IMGSTAT_OK)
    printf("\n  regions: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
  imgstat_partial *cpu = calloc(nc, sizeof *cpu);
  uint64_t *cn = calloc(nc, sizeof *cn);
  CU_ASSERT_FATAL(cpu && cn);
  int same = cpu_valid(&img, &v, cpu, cn);
  for (size_t c = 0; c < nc; c++) {
    same =
        same && memcmp(&out[c], &cpu[c], sizeof *out) == 0 && nod[c] == cn[c];
    if (with_hist)
      same = same && hist_agrees(&img, (int)c, &v, &hist[c]);
  }
  for (uint32_t k = 0; k < nl; k++) {
    imgstat_valid lv = v;
    lv.mask = NULL;
    lv.pixels = pixels + start[k];
    lv.npixels = count[k];
    if (count[k] == 0) /* no pixel: the empty region, a mask of zeros */
      lv.mask = zero;
    same = same && cpu_valid(&img, &lv, cpu, cn);
    for (size_t c = 0; c < nc; c++) {
      const size_t j = (size_t)k * nc + c;
      same = same && memcmp(&lout[j], &cpu[c], sizeof *lout) == 0 &&
             lnod[j] == cn[c];
      if (with_hist)
        same = same && hist_agrees(&img, (int)c, &lv, &lhist[j]);
    }
  }
  if (!same)
    printf("\n  %ux%u, %d channels of %d-byte samples, %u labels%s%s: GPU "
           "and CPU differ\n",
           w, h, channels, (int)sample, nl, with_mask ? ", mask" : "",
           with_hist ? ", histograms" : "");
  CU_ASSERT(same);
  /* the compaction path: the same bytes */
  imgstat_partial *out2 = calloc(nc, sizeof *out2);
  imgstat_partial *lout2 = calloc(nlc, sizeof *lout2);
  uint64_t *nod2 = calloc(nc, sizeof *nod2),
           *lnod2 = calloc(nlc, sizeof *lnod2);
  imgstat_histogram *hist2 = with_hist ? calloc(nc, sizeof *hist2) : NULL;
  imgstat_histogram *lhist2 = with_hist ? calloc(nlc, sizeof *lhist2) : NULL;
  CU_ASSERT_FATAL(out2 && lout2 && nod2 && lnod2 &&
                  (!with_hist || (hist2 && lhist2)));
  /* (not under IMGSTAT_TEST_QUICK: the compaction path takes launches and
   * synchronizations per label and channel, slow under compute-sanitizer) */
  if (!getenv("IMGSTAT_TEST_QUICK")) {
    setenv("IMGSTAT_GPU_VALID_COMPACT", "1", 1);
    st = imgstat_gpu_valid_regions_hist(g_gpu, &img, &v, IMGSTAT_KERNEL_FAST,
                                        out2, nod2, hist2, nl, pixels, start,
                                        count, lout2, lnod2, lhist2, &err);
    unsetenv("IMGSTAT_GPU_VALID_COMPACT");
    CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
    CU_ASSERT(memcmp(out, out2, nc * sizeof *out) == 0);
    CU_ASSERT(memcmp(nod, nod2, nc * sizeof *nod) == 0);
    CU_ASSERT(nl == 0 || memcmp(lout, lout2, nl * nc * sizeof *lout) == 0);
    CU_ASSERT(nl == 0 || memcmp(lnod, lnod2, nl * nc * sizeof *lnod) == 0);
    for (size_t j = 0; with_hist && j < nc + (size_t)nl * nc; j++) {
      const imgstat_histogram *a = j < nc ? &hist[j] : &lhist[j - nc];
      const imgstat_histogram *b = j < nc ? &hist2[j] : &lhist2[j - nc];
      CU_ASSERT(a->bins == b->bins && a->total == b->total &&
                memcmp(a->counts, b->counts, a->bins * sizeof *a->counts) == 0);
    }
  }
  for (size_t j = 0; with_hist && j < nc; j++) {
    imgstat_histogram_free(&hist[j]);
    imgstat_histogram_free(&hist2[j]);
  }
  for (size_t j = 0; with_hist && j < (size_t)nl * nc; j++) {
    imgstat_histogram_free(&lhist[j]);
    imgstat_histogram_free(&lhist2[j]);
  }
  free(out);
  free(lout);
  free(nod);
  free(lnod);
  free(hist);
  free(lhist);
  free(out2);
  free(lout2);
  free(nod2);
  free(lnod2);
  free(hist2);
  free(lhist2);
  free(cpu);
  free(cn);
  free(mask);
  free(zero);
  free(label);
  free(pixels);
  free(start);
  free(count);
  test_image_free(&img);
}

/* Integer images of 1, 3, 13 and 200 channels, odd sizes, few and many
 * labels, with and without masks and histograms. */
static void test_regions(void) {
  regions_case(1, 1, 1, IMGSTAT_U8, 0, 0, 1);
  regions_case(1, 1, 1, IMGSTAT_U16, 1, 1, 1);
  regions_case(97, 61, 1, IMGSTAT_U8, 3, 1, 1);
  regions_case(97, 61, 3, IMGSTAT_U16, 3, 1, 1);
  regions_case(97, 61, 3, IMGSTAT_U8, 0, 1, 1);
  regions_case(4097, 3, 1, IMGSTAT_U16, 40, 0, 1);
  regions_case(4097, 3, 1, IMGSTAT_U16, 300, 1, 0);
  regions_case(23, 37, 13, IMGSTAT_U8, 300, 1, 1);
  regions_case(23, 37, 13, IMGSTAT_U16, 3, 1, 1);
  regions_case(23, 37, 200, IMGSTAT_U8, 3, 1, 1);
  regions_case(23, 37, 200, IMGSTAT_U16, 3, 0, 0);
  regions_case(640, 480, 1, IMGSTAT_U16, 3, 0, 1);
  /* more labels than a block keeps in shared memory */
  regions_case(331, 29, 2, IMGSTAT_U8, 700, 1, 0);
}

/* ---- a batch of images (imgstat_gpu_valid_regions_batch) -------------- */

/* One image of a batch: its inputs (as regions_case makes them; nodata
 * `bad` on channel 0 when not 0: a value the sample type cannot hold) and
 * two sets of outputs, [0] the batch's and [1] the one-image call's. */
typedef struct bcase {
  imgstat_image img;
  imgstat_valid v;
  uint8_t *mask, *zero;
  uint32_t nl, *pixels;
  uint64_t *start, *count;
  int with_hist;
  imgstat_partial *out[2], *lout[2];
  uint64_t *nod[2], *lnod[2];
  imgstat_histogram *hist[2], *lhist[2];
} bcase;

static void bcase_make(bcase *b, uint32_t w, uint32_t h, int channels,
                       imgstat_sample sample, uint32_t nl, int with_mask,
                       int with_hist, double bad) {
  memset(b, 0, sizeof *b);
  const uint64_t n = (uint64_t)w * h;
  const size_t nc = (size_t)channels;
  CU_ASSERT_FATAL(test_image_make(&b->img, w, h, channels, sample));
  for (int c = 0; c < channels; c++)
    for (uint64_t i = 0; i < n; i++)
      set_sample(&b->img, c, i, random_sample(sample));
  b->mask = with_mask ? malloc(n) : NULL;
  b->zero = calloc(n, 1);
  uint32_t *label = calloc(n, sizeof *label);
  b->pixels = malloc(n * sizeof *b->pixels);
  b->start = calloc(nl ? nl : 1, sizeof *b->start);
  b->count = calloc(nl ? nl : 1, sizeof *b->count);
  CU_ASSERT_FATAL(b->zero && label && b->pixels && b->start && b->count &&
                  (b->mask || !with_mask));
  uint32_t cur = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (b->mask)
      b->mask[i] = (uint8_t)(test_rand(&g_rng) % 3 ? 1 : 0);
    if (nl && test_rand(&g_rng) % 50 == 0)
      cur = (uint32_t)(test_rand(&g_rng) % (nl + 1));
    label[i] = b->mask && !b->mask[i] ? 0 : cur;
  }
  b->v.mask = b->mask;
  b->v.has_nodata[0] = 1;
  b->v.nodata[0] = bad != 0 ? bad : 3;
  if (channels > 1) {
    b->v.has_nodata[channels - 1] = 1;
    b->v.nodata[channels - 1] = sample == IMGSTAT_U8 ? 255 : 65535;
  }
  uint64_t at = 0;
  for (uint32_t k = 0; k < nl; k++) {
    b->start[k] = at;
    for (uint64_t i = 0; i < n; i++)
      if (label[i] == k + 1)
        b->pixels[at++] = (uint32_t)i;
    b->count[k] = at - b->start[k];
  }
  free(label);
  b->nl = nl;
  b->with_hist = with_hist;
  const size_t nlc = nl ? (size_t)nl * nc : 1;
  for (int j = 0; j < 2; j++) {
    b->out[j] = calloc(nc, sizeof *b->out[j]);
    b->lout[j] = calloc(nlc, sizeof *b->lout[j]);
    b->nod[j] = calloc(nc, sizeof *b->nod[j]);
    b->lnod[j] = calloc(nlc, sizeof *b->lnod[j]);
    b->hist[j] = with_hist ? calloc(nc, sizeof *b->hist[j]) : NULL;
    b->lhist[j] = with_hist ? calloc(nlc, sizeof *b->lhist[j]) : NULL;
    CU_ASSERT_FATAL(b->out[j] && b->lout[j] && b->nod[j] && b->lnod[j] &&
                    (!with_hist || (b->hist[j] && b->lhist[j])));
  }
}

static void bcase_free(bcase *b) {
  const size_t nc = (size_t)b->img.channels;
  for (int j = 0; j < 2; j++) {
    for (size_t i = 0; b->hist[j] && i < nc; i++)
      imgstat_histogram_free(&b->hist[j][i]);
    for (size_t i = 0; b->lhist[j] && i < (size_t)b->nl * nc; i++)
      imgstat_histogram_free(&b->lhist[j][i]);
    free(b->out[j]);
    free(b->lout[j]);
    free(b->nod[j]);
    free(b->lnod[j]);
    free(b->hist[j]);
    free(b->lhist[j]);
  }
  free(b->mask);
  free(b->zero);
  free(b->pixels);
  free(b->start);
  free(b->count);
  test_image_free(&b->img);
}

/* The batch's item of case b (outputs [0]). */
static imgstat_gpu_valid_item bcase_item(bcase *b) {
  imgstat_gpu_valid_item it;
  memset(&it, 0, sizeof it);
  it.img = &b->img;
  it.v = &b->v;
  it.out = b->out[0];
  it.nodata = b->nod[0];
  it.hist = b->hist[0];
  it.nlabels = b->nl;
  it.pixels = b->pixels;
  it.start = b->start;
  it.count = b->count;
  it.lout = b->lout[0];
  it.lnodata = b->lnod[0];
  it.lhist = b->lhist[0];
  return it;
}

static int hist_same(const imgstat_histogram *a, const imgstat_histogram *b) {
  return a->bins == b->bins && a->total == b->total && a->sample == b->sample &&
         memcmp(a->counts, b->counts, a->bins * sizeof *a->counts) == 0;
}

/* Case b's batched figures against the one-image call's (same status and
 * message; on success the same bytes) and, on success, the CPU's. */
static void bcase_check(bcase *b, const imgstat_gpu_valid_item *it,
                        int want_batched) {
  const size_t nc = (size_t)b->img.channels;
  const size_t nlc = (size_t)b->nl * nc;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_gpu_valid_regions_hist(
      g_gpu, &b->img, &b->v, IMGSTAT_KERNEL_FAST, b->out[1], b->nod[1],
      b->hist[1], b->nl, b->pixels, b->start, b->count, b->lout[1], b->lnod[1],
      b->lhist[1], &err);
  const char *what = b->img.sample == IMGSTAT_F32 ? "float" : "integer";
  if (it->status != st || it->batched != want_batched)
    printf("\n  batch: %ux%u %s, %d channels, %u labels: status %d (%s), "
           "batched %d; alone: %d (%s)\n",
           b->img.width, b->img.height, what, b->img.channels, b->nl,
           (int)it->status, it->err.message, it->batched, (int)st, err.message);
  CU_ASSERT_EQUAL(it->status, st);
  CU_ASSERT_EQUAL(it->batched, want_batched);
  CU_ASSERT_STRING_EQUAL(it->err.message, err.message);
  if (st != IMGSTAT_OK || it->status != IMGSTAT_OK)
    return;
  int same = memcmp(b->out[0], b->out[1], nc * sizeof *b->out[0]) == 0 &&
             memcmp(b->nod[0], b->nod[1], nc * sizeof *b->nod[0]) == 0 &&
             (nlc == 0 ||
              (memcmp(b->lout[0], b->lout[1], nlc * sizeof *b->lout[0]) == 0 &&
               memcmp(b->lnod[0], b->lnod[1], nlc * sizeof *b->lnod[0]) == 0));
  for (size_t j = 0; b->with_hist && j < nc; j++)
    same = same && hist_same(&b->hist[0][j], &b->hist[1][j]);
  for (size_t j = 0; b->with_hist && j < nlc; j++)
    same = same && hist_same(&b->lhist[0][j], &b->lhist[1][j]);
  /* the CPU's */
  imgstat_partial *cpu = calloc(nc, sizeof *cpu);
  uint64_t *cn = calloc(nc, sizeof *cn);
  CU_ASSERT_FATAL(cpu && cn);
  same = same && cpu_valid(&b->img, &b->v, cpu, cn);
  for (size_t c = 0; c < nc; c++) {
    same = same && memcmp(&b->out[0][c], &cpu[c], sizeof *cpu) == 0 &&
           b->nod[0][c] == cn[c];
    if (b->with_hist)
      same = same && hist_agrees(&b->img, (int)c, &b->v, &b->hist[0][c]);
  }
  for (uint32_t k = 0; k < b->nl; k++) {
    imgstat_valid lv = b->v;
    lv.mask = NULL;
    lv.pixels = b->pixels + b->start[k];
    lv.npixels = b->count[k];
    if (b->count[k] == 0)
      lv.mask = b->zero;
    same = same && cpu_valid(&b->img, &lv, cpu, cn);
    for (size_t c = 0; c < nc; c++) {
      const size_t j = (size_t)k * nc + c;
      same = same && memcmp(&b->lout[0][j], &cpu[c], sizeof *cpu) == 0 &&
             b->lnod[0][j] == cn[c];
      if (b->with_hist)
        same = same && hist_agrees(&b->img, (int)c, &lv, &b->lhist[0][j]);
    }
  }
  if (!same)
    printf("\n  batch: %ux%u %s, %d channels, %u labels: the batch, the "
           "one-image call and the CPU differ\n",
           b->img.width, b->img.height, what, b->img.channels, b->nl);
  CU_ASSERT(same);
  free(cpu);
  free(cn);
}

/* Batches of images of different sizes, sample types, channels, masks,
 * label counts and histograms: each item's figures are those of its own
 * call (imgstat_gpu_valid_regions_hist) byte for byte, and the CPU's; the
 * items the fused pass takes whole go in the batched launch, a float image
 * one by one; items with bad arguments (a nodata value the sample type
 * cannot hold, float histograms) fail alone with the one-image call's
 * error, the others unharmed. More than 4 MiB of data (the staging
 * buffers' size: pieces across their edges); a batch with more labels
 * than a block keeps in shared memory. */
static void test_batch(void) {
  struct {
    uint32_t w, h;
    int channels;
    imgstat_sample sample;
    uint32_t nl;
    int mask, hist;
    double bad;
    int batched;
  } spec[] = {
      {97, 61, 3, IMGSTAT_U16, 3, 1, 1, 0, 1},
      {1, 1, 1, IMGSTAT_U8, 0, 0, 1, 0, 1},
      {23, 37, 13, IMGSTAT_U8, 300, 1, 1, 0, 1},
      {31, 17, 3, IMGSTAT_F32, 2, 1, 0, 0, 0},  /* one by one */
      {40, 30, 1, IMGSTAT_U8, 2, 1, 1, 300, 0}, /* nodata 300: fails */
      {1024, 1024, 2, IMGSTAT_U16, 3, 1, 1, 0, 1},
      {29, 13, 2, IMGSTAT_F32, 0, 1, 1, 0, 0}, /* float histograms: fail */
      {640, 480, 1, IMGSTAT_U16, 3, 0, 1, 0, 1},
      {4097, 3, 1, IMGSTAT_U16, 40, 0, 0, 0, 1},
      {13, 11, 4, IMGSTAT_U8, 0, 1, 0, 0, 1},
      {331, 29, 2, IMGSTAT_U8, 3, 1, 1, -1, 0}, /* nodata -1: fails */
  };
  enum { M = sizeof spec / sizeof spec[0] };
  /* (under IMGSTAT_TEST_QUICK, for the sanitizers: a smaller large image,
   * its batch still past 4 MiB) */
  if (getenv("IMGSTAT_TEST_QUICK"))
    spec[5].h = 640;
  bcase b[M];
  imgstat_gpu_valid_item items[M];
  for (int k = 0; k < M; k++) {
    bcase_make(&b[k], spec[k].w, spec[k].h, spec[k].channels, spec[k].sample,
               spec[k].nl, spec[k].mask, spec[k].hist, spec[k].bad);
    items[k] = bcase_item(&b[k]);
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL_FATAL(imgstat_gpu_valid_regions_batch(
                            g_gpu, IMGSTAT_KERNEL_FAST, items, M, &err),
                        IMGSTAT_OK);
  for (int k = 0; k < M; k++) {
    CU_ASSERT_EQUAL(items[k].status == IMGSTAT_OK,
                    spec[k].bad == 0 &&
                        !(spec[k].hist && spec[k].sample == IMGSTAT_F32));
    bcase_check(&b[k], &items[k], spec[k].batched);
    bcase_free(&b[k]);
  }
  /* more labels than a block keeps in shared memory, beside a small image;
   * a batch of one; an empty batch */
  bcase c[2];
  imgstat_gpu_valid_item two[2];
  bcase_make(&c[0], 331, 29, 2, IMGSTAT_U8, 700, 1, 0, 0);
  bcase_make(&c[1], 97, 61, 1, IMGSTAT_U16, 3, 0, 1, 0);
  for (int k = 0; k < 2; k++)
    two[k] = bcase_item(&c[k]);
  CU_ASSERT_EQUAL(
      imgstat_gpu_valid_regions_batch(g_gpu, IMGSTAT_KERNEL_FAST, two, 2, &err),
      IMGSTAT_OK);
  for (int k = 0; k < 2; k++) {
    bcase_check(&c[k], &two[k], 1);
    bcase_free(&c[k]);
  }
  bcase_make(&c[0], 257, 33, 3, IMGSTAT_U8, 5, 1, 1, 0);
  two[0] = bcase_item(&c[0]);
  CU_ASSERT_EQUAL(
      imgstat_gpu_valid_regions_batch(g_gpu, IMGSTAT_KERNEL_FAST, two, 1, &err),
      IMGSTAT_OK);
  bcase_check(&c[0], &two[0], 1);
  bcase_free(&c[0]);
  CU_ASSERT_EQUAL(imgstat_gpu_valid_regions_batch(g_gpu, IMGSTAT_KERNEL_FAST,
                                                  NULL, 0, &err),
                  IMGSTAT_OK);
  CU_ASSERT_NOT_EQUAL(
      imgstat_gpu_valid_regions_batch(NULL, IMGSTAT_KERNEL_FAST, two, 1, &err),
      IMGSTAT_OK);
}

static const test_case tests[] = {
    {"valid samples on the device", NULL},
    {"random images, masks and nodata values: GPU = CPU = loop", test_random},
    {"empty and full masks, nodata at the extrema, NaN", test_edges},
    {"labels: GPU = CPU per label", test_labels},
    {"the image and its labels at once: 1 to 200 channels, 300 labels",
     test_regions},
    {"a batch of images: each its own call's figures, failures alone",
     test_batch},
    {"arguments", test_arguments},
    {NULL, NULL}};

int main(void) {
  if (!imgstat_gpu_compiled())
    return test_skip("built without CUDA");
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_gpu_create(-1, &g_gpu, &err);
  if (st == IMGSTAT_ERR_NODEVICE)
    return test_skip("no CUDA device");
  if (st != IMGSTAT_OK) {
    printf("CUDA device present but unusable: %s\n", err.message);
    return 1;
  }
  printf("device: %s\n", imgstat_gpu_device_name(g_gpu));
  int rc = test_main(tests);
  imgstat_gpu_destroy(g_gpu);
  return rc;
}
