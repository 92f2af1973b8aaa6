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
 * (IMGSTAT_GPU_VALID_COMPACT) byte for byte. Needs a CUDA
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

static const test_case tests[] = {
    {"valid samples on the device", NULL},
    {"random images, masks and nodata values: GPU = CPU = loop", test_random},
    {"empty and full masks, nodata at the extrema, NaN", test_edges},
    {"labels: GPU = CPU per label", test_labels},
    {"the image and its labels at once: 1 to 200 channels, 300 labels",
     test_regions},
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
