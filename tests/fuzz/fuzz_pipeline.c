/*
 * libFuzzer target over everything after decoding: whatever image the bytes
 * decode to (at most PIPE_MAX_PIXELS pixels), the library's histograms,
 * percentiles, figures, normalization plans and their CPU application, and
 * the PNG / NPY / PFM writers must work and keep their documented contracts
 * (docs/normalize.md), checked here against computations of this file's
 * own. Each 8-bit (16-bit) image is also run a second time reinterpreted as
 * float32, 4 (2) consecutive samples of a row making one float, so that the
 * float paths see every bit pattern (NaN, Inf, negatives, subnormals), not
 * only the non-negative finite values a Radiance file decodes to.
 *
 * Which options each input gets (linked, alpha mode, output depth, clip
 * percentiles, bins, given mean/std, output format) comes from a hash of its
 * bytes, so the fuzzer explores them along with the pixels. Outputs are
 * written into a private folder under $TMPDIR, /dev/shm or /tmp, read back
 * and removed, and the folder with them.
 *
 * Build and run: see tests/fuzz/fuzz_load.c and docs/fuzzing.md; without
 * -DIMGSTAT_FUZZ=ON it is linked with tests/fuzz/fuzz_replay.c into
 * replay_pipeline.
 */
#include "imgstat/imgstat.h"
#include "imgstat/norm.h"
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIPE_MAX_PIXELS (UINT64_C(1) << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: say which, then crash so that the fuzzer keeps the
 * input. */
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_pipeline.c:%d: invariant failed: %s\n", __LINE__,  \
              #cond);                                                          \
      __builtin_trap();                                                        \
    }                                                                          \
  } while (0)

/* ---- options from the input's bytes ------------------------------------- */

static uint64_t bits_state;

static void bits_seed(const uint8_t *data, size_t size) {
  uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
  for (size_t i = 0; i < size; i++)
    h = (h ^ data[i]) * UINT64_C(1099511628211);
  bits_state = h;
}

/* The next value in [0, n). */
static unsigned pick(unsigned n) {
  bits_state = bits_state * UINT64_C(6364136223846793005) +
               UINT64_C(1442695040888963407);
  return (unsigned)((bits_state >> 33) % n);
}

/* ---- samples ------------------------------------------------------------- */

static double full_of(imgstat_sample s) {
  return s == IMGSTAT_U8 ? 255.0 : (s == IMGSTAT_U16 ? 65535.0 : 1.0);
}

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* The same float, or both NaN. */
static int same_float(float a, float b) {
  return (isnan(a) && isnan(b)) || float_bits(a) == float_bits(b);
}

/* ---- histograms, percentiles, figures ------------------------------------ */

/* Percentiles as exact fractions num / den, so that the rank
 * max(1, ceil(p N / 100)) is integer arithmetic here. */
static const struct {
  uint64_t num, den;
} pcts[] = {{0, 1}, {1, 2}, {50, 1}, {199, 2}, {100, 1}, {100, 3}};
#define NPCTS (sizeof pcts / sizeof pcts[0])

static uint64_t rank_of(uint64_t num, uint64_t den, uint64_t n) {
  uint64_t k = (num * n + den * 100 - 1) / (den * 100);
  return k < 1 ? 1 : k;
}

static void check_histograms(const imgstat_image *img,
                             const imgstat_partial *part, double *sorted) {
  uint64_t n = (uint64_t)img->width * img->height;
  for (int c = 0; c < img->channels; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&part[c], img->sample, img->width, 0, &f);
    static const uint32_t bin_choice[] = {0, 1, 3, 256, 4096};
    imgstat_hist_options ho;
    memset(&ho, 0, sizeof ho);
    ho.float_bins = bin_choice[pick(5)];
    /* Sometimes a narrower range than the channel's: samples outside it
     * are clamped to the end bins. */
    if (img->sample == IMGSTAT_F32 && f.has_values && pick(4) == 0) {
      ho.have_range = 1;
      ho.lo = f.min;
      ho.hi = f.min + (f.max - f.min) / 2;
    }
    imgstat_histogram h;
    imgstat_error err;
    imgstat_status st = imgstat_histogram_compute(img, c, &ho, &h, &err);
    CHECK(st == IMGSTAT_OK);
    uint32_t want_bins = img->sample == IMGSTAT_U8    ? 256
                         : img->sample == IMGSTAT_U16 ? 65536
                         : ho.float_bins              ? ho.float_bins
                                         : IMGSTAT_FLOAT_BINS_DEFAULT;
    CHECK(h.bins == want_bins && h.sample == img->sample);
    uint64_t sum = 0;
    for (uint32_t b = 0; b < h.bins; b++)
      sum += h.counts[b];
    CHECK(sum == h.total);
    /* The histogram and the statistics' scan count the same samples. */
    CHECK(h.total == f.count && h.nan_count == f.nan_count &&
          h.inf_count == f.inf_count);
    CHECK(h.total + h.nan_count + h.inf_count == n);

    /* Percentiles: integer ones are exact nearest-rank values (checked by
     * counting the plane); float ones lie within one bin of them (checked
     * against the sorted finite samples), with p = 0 and 100 the ends. */
    uint64_t cnt = 0;
    if (img->sample == IMGSTAT_F32 && !ho.have_range) {
      for (uint64_t i = 0; i < n; i++) {
        double x = test_sample_at(img, c, i);
        if (isfinite(x))
          sorted[cnt++] = x;
      }
      qsort(sorted, cnt, sizeof *sorted, test_cmp_double);
      CHECK(cnt == h.total);
    }
    double prev = -INFINITY;
    double values[NPCTS];
    for (size_t i = 0; i < NPCTS; i++) {
      double p = (double)pcts[i].num / (double)pcts[i].den, v = 0;
      int got = imgstat_histogram_percentile(&h, p, &v);
      CHECK(got == (h.total > 0));
      values[i] = v;
      if (!got)
        continue;
      uint64_t k = rank_of(pcts[i].num, pcts[i].den, h.total);
      if (img->sample != IMGSTAT_F32) {
        uint64_t below = 0, upto = 0;
        for (uint64_t j = 0; j < n; j++) {
          double x = test_sample_at(img, c, j);
          below += x < v;
          upto += x <= v;
        }
        CHECK(below < k && k <= upto);
      } else {
        CHECK(v >= h.lo && v <= h.hi);
        if (!ho.have_range) {
          double width = (h.hi - h.lo) / h.bins;
          double slack = width * 1e-9 + 1e-12 * fmax(fabs(h.lo), fabs(h.hi));
          CHECK(fabs(v - sorted[k - 1]) <= width + slack);
          if (k == 1)
            CHECK(v == f.min);
          if (k == h.total)
            CHECK(v == f.max);
        }
      }
      if (i < 5) { /* the first five are in increasing order */
        CHECK(v >= prev);
        prev = v;
      }
    }
    if (h.total > 0 && img->sample != IMGSTAT_F32)
      CHECK(values[0] == f.min && values[4] == f.max);

    /* Moments: from the histogram (integers, exact mean) or the plane. */
    imgstat_moments m;
    if (img->sample == IMGSTAT_F32)
      imgstat_moments_f32(img->planes[c], n, &m);
    else
      imgstat_moments_from_histogram(&h, &m);
    CHECK(m.count == f.count);
    if (f.has_values && img->sample != IMGSTAT_F32)
      CHECK(m.mean == f.mean);
    if (f.has_values && m.m2 > 0) {
      double var = f.std * f.std;
      CHECK(fabs(m.m2 - var) <=
            1e-6 * fmax(m.m2, var) + 1e-12 * m.mean * m.mean);
    }
    double p[NPCTS];
    for (size_t i = 0; i < NPCTS; i++)
      p[i] = (double)pcts[i].num / (double)pcts[i].den;
    /* (each percentile is a walk over the bins: a few are enough here) */
    int np = (int)pick(3);
    imgstat_hist_figures hf;
    imgstat_hist_figures_compute(&h, &m, p, np, &hf);
    CHECK(hf.has_values == (h.total > 0));
    if (hf.has_values) {
      CHECK(hf.npercentiles == np);
      CHECK(hf.median == values[2]);
      for (int i = 0; i < np; i++)
        CHECK(hf.percentile[i] == values[i]);
      CHECK(hf.entropy >= 0 && hf.entropy <= log2((double)h.bins) + 1e-9);
    }
    if (hf.has_shape) {
      /* Cauchy-Schwarz: skewness^2 <= kurtosis + 3. */
      CHECK(isfinite(hf.skewness) && isfinite(hf.kurtosis));
      CHECK(hf.skewness * hf.skewness <= (hf.kurtosis + 3) * (1 + 1e-9) + 1e-9);
    }
    static const uint32_t rebins[] = {1, 7, 256};
    uint32_t rb = rebins[pick(3)];
    uint64_t shown[256];
    imgstat_histogram_rebin(&h, rb, shown);
    uint64_t shown_sum = 0;
    for (uint32_t j = 0; j < rb; j++)
      shown_sum += shown[j];
    CHECK(shown_sum == h.total);
    imgstat_histogram_free(&h);
    CHECK(h.counts == NULL);
  }
}

/* ---- normalization ------------------------------------------------------- */

/* The depth conversion of docs/normalize.md ("Depth conversion"). */
static double convert(double x, imgstat_sample in, imgstat_sample out) {
  if (in == out)
    return x;
  if (out == IMGSTAT_F32)
    return (float)(x / full_of(in));
  if (in == IMGSTAT_U8) /* to 16 bits */
    return x * 257;
  if (in == IMGSTAT_U16) /* to 8 bits: x / 257 has no exact halves */
    return floor((x + 128) / 257);
  if (isnan(x))
    return 0;
  double t = x < 0 ? 0 : (x > 1 ? 1 : x);
  return rint(t * full_of(out));
}

/* What a sample x must become under map mp, from docs/normalize.md. */
static double expected(double x, const imgstat_channel_map *mp,
                       imgstat_sample in, imgstat_sample out) {
  double full = full_of(out);
  int fout = out == IMGSTAT_F32;
  if (mp->kind == IMGSTAT_MAP_STANDARDIZE) {
    if (!isfinite(x))
      return x; /* float in, float out: passes through */
    return mp->b > 0 ? (float)((x - mp->a) / mp->b) : 0.0;
  }
  if (mp->kind == IMGSTAT_MAP_STRETCH && !isnan(x)) {
    if (x < mp->a || (x <= mp->a && mp->a < mp->b))
      return isinf(x) && fout ? x : 0;
    if (x > mp->b || (x >= mp->b && mp->a < mp->b))
      return isinf(x) && fout ? x : full;
    if (mp->a < mp->b && in != IMGSTAT_F32 && !fout)
      /* integers: an exact numerator, so one rounding, half to even (a
       * quotient of a denominator below 2^17 is a half exactly or at
       * least 2^-17 away from one) */
      return rint((x - mp->a) * full / (mp->b - mp->a));
    if (mp->a < mp->b) {
      double t = (x - mp->a) / (mp->b - mp->a);
      return fout ? (float)t : rint(t * full);
    }
  }
  return convert(x, in, out); /* CONVERT, or x == a == b */
}

static void check_output(const imgstat_image *in, const imgstat_norm_plan *plan,
                         const imgstat_image *out, const imgstat_partial *part,
                         imgstat_norm_mode mode, int linked) {
  uint64_t n = (uint64_t)in->width * in->height;
  CHECK(out->width == in->width && out->height == in->height);
  CHECK(out->channels == plan->channels_out);
  CHECK(out->sample == plan->out_sample);
  for (int o = 0; o < out->channels; o++) {
    const imgstat_channel_map *mp = &plan->map[o];
    int c = plan->source[o];
    imgstat_figures f;
    imgstat_figures_compute(&part[c], in->sample, in->width, 0, &f);
    if (mp->kind == IMGSTAT_MAP_STRETCH)
      CHECK(mp->a <= mp->b);
    if (mp->kind == IMGSTAT_MAP_STRETCH && !linked && f.has_values) {
      CHECK(mp->a >= f.min && mp->b <= f.max);
      if (mode == IMGSTAT_NORM_MINMAX)
        CHECK(mp->a == f.min && mp->b == f.max);
    }
    if (mode == IMGSTAT_NORM_ZSCORE && mp->kind == IMGSTAT_MAP_STANDARDIZE) {
      CHECK(mp->a == (f.has_values ? f.mean : 0));
      CHECK(mp->b == (f.has_std ? f.std : 0));
    }
    double sum = 0, sumsq = 0;
    for (uint64_t i = 0; i < n; i++) {
      double x = test_sample_at(in, c, i), y = test_sample_at(out, o, i);
      double want = expected(x, mp, in->sample, out->sample);
      if (out->sample == IMGSTAT_F32)
        CHECK(same_float((float)y, (float)want));
      else
        CHECK(y == want);
      if (mp->kind == IMGSTAT_MAP_STANDARDIZE && isfinite(x)) {
        sum += y;
        sumsq += y * y;
        /* |x - mean| <= std sqrt(N - 1) for the population std */
        if (mode == IMGSTAT_NORM_ZSCORE)
          CHECK(fabs(y) <= sqrt((double)n) * 1.001 + 1e-3);
      }
    }
    /* z-scores of integer samples have mean 0 and standard deviation 1 */
    if (mode == IMGSTAT_NORM_ZSCORE && in->sample != IMGSTAT_F32 &&
        mp->kind == IMGSTAT_MAP_STANDARDIZE && mp->b > 0) {
      double mean = sum / (double)n;
      double var = sumsq / (double)n - mean * mean;
      CHECK(fabs(mean) < 1e-4 && fabs(var - 1) < 1e-4);
    }
  }
}

static void normalize(const imgstat_image *img, const imgstat_partial *part,
                      imgstat_norm_mode mode, imgstat_image *out) {
  imgstat_norm_options o;
  memset(&o, 0, sizeof o);
  o.mode = mode;
  o.linked = (int)pick(2);
  o.alpha = (imgstat_alpha_mode)pick(3);
  static const double lows[] = {0, 0.5, 1, 2, 50};
  static const double highs[] = {50, 98, 99, 99.5, 100};
  o.clip_low = lows[pick(5)];
  o.clip_high = highs[pick(5)];
  static const uint32_t bins[] = {0, 1, 16, 1000};
  o.float_bins = bins[pick(4)];
  static const imgstat_sample outs[] = {0, IMGSTAT_U8, IMGSTAT_U16,
                                        IMGSTAT_F32};
  o.out_sample = outs[pick(4)];
  if (mode == IMGSTAT_NORM_ZSCORE || mode == IMGSTAT_NORM_GIVEN)
    o.out_sample = pick(2) ? IMGSTAT_F32 : 0;
  if (mode == IMGSTAT_NORM_GIVEN) {
    static const double means[] = {0, 0.5, 127.5, 1e4};
    static const double stds[] = {1, 0.25, 1e-3, 1e6};
    o.nstats = pick(2) ? 1 : img->channels;
    for (int i = 0; i < o.nstats; i++) {
      o.mean[i] = means[pick(4)];
      o.std[i] = stds[pick(4)];
    }
  }
  imgstat_error err;
  imgstat_norm_measure m;
  CHECK(imgstat_norm_measure_cpu(img, &o, 1, &m, &err) == IMGSTAT_OK);
  imgstat_norm_plan plan;
  CHECK(imgstat_norm_plan_make(img, &o, &m, &plan, &err) == IMGSTAT_OK);
  int has_alpha = imgstat_channel_is_alpha(img->channels, img->channels - 1);
  CHECK(plan.channels_out ==
        img->channels - (has_alpha && o.alpha == IMGSTAT_ALPHA_DROP));
  CHECK(plan.in_sample == img->sample);
  CHECK(plan.out_sample == (o.out_sample                ? o.out_sample
                            : mode <= IMGSTAT_NORM_CLIP ? img->sample
                                                        : IMGSTAT_F32));
  for (int k = 0; k < plan.channels_out; k++) {
    int c = plan.source[k];
    CHECK(c >= 0 && c < img->channels && (k == 0 || c > plan.source[k - 1]));
    int alpha = imgstat_channel_is_alpha(img->channels, c);
    CHECK((plan.map[k].kind == IMGSTAT_MAP_CONVERT) ==
          ((alpha && o.alpha != IMGSTAT_ALPHA_NORMALIZE) ||
           (mode <= IMGSTAT_NORM_CLIP && !m.has_values[c])));
    if (mode == IMGSTAT_NORM_GIVEN && plan.map[k].kind != IMGSTAT_MAP_CONVERT) {
      int i = o.nstats == 1 ? 0 : c;
      CHECK(plan.map[k].a == o.mean[i] && plan.map[k].b == o.std[i]);
    }
  }
  CHECK(imgstat_norm_apply_cpu(img, &plan, 1, out, &err) == IMGSTAT_OK);
  check_output(img, &plan, out, part, mode, o.linked);
}

/* ---- writers ------------------------------------------------------------- */

static char dir[64];

/* The input's private folder, made when it first writes and removed (empty:
 * every output is removed once checked) when it is done, so that nothing is
 * left behind however the fuzzer exits. */
static const char *out_dir(void) {
  if (dir[0])
    return dir;
  const char *base = getenv("TMPDIR");
  if (!base || !*base || strlen(base) > 32 || access(base, W_OK) != 0)
    base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(dir, sizeof dir, "%s/imgstat-fuzz-XXXXXX", base);
  CHECK(mkdtemp(dir) != NULL);
  return dir;
}

/* The names in the folder; fails if there are more than one. */
static int dir_entries(char *name, size_t size) {
  DIR *d = opendir(out_dir());
  CHECK(d != NULL);
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (count++ == 0)
      snprintf(name, size, "%s", e->d_name);
  }
  closedir(d);
  return count;
}

static unsigned char *read_all(const char *path, size_t *size) {
  unsigned char *buf = test_read_file(path, size);
  CHECK(buf != NULL);
  return buf;
}

/* .npy: numpy's version 1.0 header, then the samples row by row,
 * interleaved, in the host's order. */
static void check_npy(const char *path, const imgstat_image *img) {
  size_t size;
  unsigned char *buf = read_all(path, &size);
  CHECK(size >= 10 && memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0);
  size_t hlen = buf[8] | (size_t)buf[9] << 8;
  CHECK((10 + hlen) % 16 == 0 && 10 + hlen <= size && buf[9 + hlen] == '\n');
  char want[160];
  const char *descr = img->sample == IMGSTAT_U8    ? "|u1"
                      : img->sample == IMGSTAT_U16 ? "<u2"
                                                   : "<f4";
  if (img->channels == 1)
    snprintf(want, sizeof want,
             "{'descr': '%s', 'fortran_order': False, 'shape': (%u, %u), }",
             descr, img->height, img->width);
  else
    snprintf(want, sizeof want,
             "{'descr': '%s', 'fortran_order': False, 'shape': (%u, %u, %d), "
             "}",
             descr, img->height, img->width, img->channels);
  CHECK(hlen >= strlen(want) && memcmp(buf + 10, want, strlen(want)) == 0);
  uint64_t n = (uint64_t)img->width * img->height;
  size_t ss = (size_t)img->sample;
  CHECK(size == 10 + hlen + n * img->channels * ss);
  const unsigned char *p = buf + 10 + hlen;
  for (uint64_t i = 0; i < n; i++)
    for (int c = 0; c < img->channels; c++, p += ss)
      CHECK(memcmp(p, (const unsigned char *)img->planes[c] + i * ss, ss) == 0);
  free(buf);
}

/* PFM: "PF" (3 channels) or "Pf" (1), the size, -1.0 (little-endian), then
 * float rows from the bottom up. */
static void check_pfm(const char *path, const imgstat_image *img) {
  size_t size;
  unsigned char *buf = read_all(path, &size);
  char want[64];
  int hl = snprintf(want, sizeof want, "%s\n%u %u\n-1.0\n",
                    img->channels == 3 ? "PF" : "Pf", img->width, img->height);
  CHECK(size >= (size_t)hl && memcmp(buf, want, (size_t)hl) == 0);
  uint64_t n = (uint64_t)img->width * img->height;
  CHECK(size == (size_t)hl + n * img->channels * 4);
  const unsigned char *p = buf + hl;
  for (uint32_t r = 0; r < img->height; r++) {
    uint64_t row = (uint64_t)(img->height - 1 - r) * img->width;
    for (uint32_t x = 0; x < img->width; x++)
      for (int c = 0; c < img->channels; c++, p += 4) {
        float v;
        memcpy(&v, p, 4);
        CHECK(same_float(v, (float)test_sample_at(img, c, row + x)));
      }
  }
  free(buf);
}

/* PNG: read back through the library's own PNG decoder (libpng). */
static void check_png(const char *path, const imgstat_image *img) {
  imgstat_image back;
  imgstat_error err;
  CHECK(imgstat_image_load(path, NULL, &back, &err) == IMGSTAT_OK);
  CHECK(back.width == img->width && back.height == img->height &&
        back.channels == img->channels && back.sample == img->sample);
  size_t bytes = imgstat_image_plane_bytes(img);
  for (int c = 0; c < img->channels; c++)
    CHECK(memcmp(back.planes[c], img->planes[c], bytes) == 0);
  imgstat_image_free(&back);
}

static void write_and_check(const imgstat_image *img) {
  static const char *const exts[] = {"png", "npy", "pfm"};
  unsigned which = pick(3);
  char path[sizeof dir + 16], name[300];
  snprintf(path, sizeof path, "%s/out.%s", out_dir(), exts[which]);
  imgstat_write_options wo = {.format = IMGSTAT_FILE_AUTO};
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_image_write(path, img, &wo, &err);
  /* PNG: 8/16-bit samples of 1 to 4 channels (not 5 to 16 bands) */
  int fits = which == 0   ? img->sample != IMGSTAT_F32 && img->channels <= 4
             : which == 2 ? img->channels == 1 || img->channels == 3
                          : 1;
  if (!fits) {
    /* refused with a reason, leaving no file behind */
    CHECK(st == IMGSTAT_ERR_ARG && err.message[0] != '\0');
    CHECK(dir_entries(name, sizeof name) == 0);
    return;
  }
  CHECK(st == IMGSTAT_OK);
  /* only the output, no temporary left */
  CHECK(dir_entries(name, sizeof name) == 1 &&
        strcmp(name, path + strlen(dir) + 1) == 0);
  if (which == 0)
    check_png(path, img);
  else if (which == 1)
    check_npy(path, img);
  else
    check_pfm(path, img);
  CHECK(unlink(path) == 0);
}

/* ---- the pipeline ---------------------------------------------------------
 */

static void pipeline(const imgstat_image *img) {
  imgstat_error err;
  imgstat_partial part[IMGSTAT_MAX_CHANNELS];
  CHECK(imgstat_cpu_stats(img, 1, part, &err) == IMGSTAT_OK);
  static double sorted[PIPE_MAX_PIXELS];
  check_histograms(img, part, sorted);
  write_and_check(img);
  for (int mode = IMGSTAT_NORM_MINMAX; mode <= IMGSTAT_NORM_GIVEN; mode++) {
    imgstat_image out;
    normalize(img, part, (imgstat_norm_mode)mode, &out);
    write_and_check(&out);
    imgstat_image_free(&out);
  }
}

/* 4 (8-bit) or 2 (16-bit) consecutive samples of a row as one float. */
static int as_float(const imgstat_image *img, imgstat_image *f) {
  uint32_t per = 4 / (uint32_t)img->sample;
  imgstat_error err;
  if (img->sample == IMGSTAT_F32 || img->width < per ||
      imgstat_image_alloc(f, img->width / per, img->height, img->channels,
                          IMGSTAT_F32, 0, &err) != IMGSTAT_OK)
    return 0;
  size_t in_row = (size_t)img->width * img->sample, out_row = f->width * 4u;
  for (int c = 0; c < img->channels; c++)
    for (uint32_t y = 0; y < img->height; y++)
      memcpy((unsigned char *)f->planes[c] + y * out_row,
             (const unsigned char *)img->planes[c] + y * in_row, out_row);
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  imgstat_load_options opts;
  memset(&opts, 0, sizeof opts);
  opts.max_pixels = PIPE_MAX_PIXELS;
  opts.max_memory = UINT64_C(64) << 20;
  imgstat_image img;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_image_load_memory(data, size, &opts, &img, &err) != IMGSTAT_OK) {
    CHECK(err.message[0] != '\0' && img.data == NULL);
    return 0;
  }
  bits_seed(data, size);
  pipeline(&img);
  imgstat_image f;
  if (as_float(&img, &f)) {
    pipeline(&f);
    imgstat_image_free(&f);
  }
  imgstat_image_free(&img);
  if (dir[0]) {
    CHECK(rmdir(dir) == 0);
    dir[0] = '\0';
  }
  return 0;
}
