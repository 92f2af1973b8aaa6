/*
 * Normalization and the writers on the CPU, against independent
 * computations: expected outputs from the definitions in docs/normalize.md
 * evaluated here in double (rint of the exact quotient), percentiles by
 * sorting, files read back with libpng / by hand / by numpy.
 */
#include "imgstat/norm.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t seed = 777;
static char tmpdir[256];

static void make_image(imgstat_image *img, uint32_t w, uint32_t h, int ch,
                       imgstat_sample s) {
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_image_alloc(img, w, h, ch, s, 0, &err) == IMGSTAT_OK);
  uint64_t n = (uint64_t)w * h;
  for (int c = 0; c < ch; c++) {
    /* channels with different ranges so linking matters */
    uint32_t lo = 10 * (uint32_t)c, span = s == IMGSTAT_U8 ? 200 : 60000;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = test_rand(&seed);
      if (s == IMGSTAT_U8)
        ((uint8_t *)img->planes[c])[i] = (uint8_t)(lo + r % (span - 20 * c));
      else if (s == IMGSTAT_U16)
        ((uint16_t *)img->planes[c])[i] = (uint16_t)(lo + r % (span - 20 * c));
      else
        ((float *)img->planes[c])[i] =
            (float)((double)(r >> 11) / 9007199254740992.0 * (3 + c) - 1.0);
    }
  }
}

static imgstat_status run_cpu(const imgstat_image *in,
                              const imgstat_norm_options *o,
                              imgstat_norm_measure *m, imgstat_norm_plan *plan,
                              imgstat_image *out) {
  imgstat_error err;
  imgstat_status st = imgstat_norm_measure_cpu(in, o, 2, m, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_norm_plan_make(in, o, m, plan, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_norm_apply_cpu(in, plan, 2, out, &err);
  if (st != IMGSTAT_OK)
    printf("\n  failed: %s\n", err.message);
  return st;
}

static uint32_t full(imgstat_sample s) { return s == IMGSTAT_U8 ? 255 : 65535; }

/* Independent expectation for integer stretch: rint of the quotient in
 * double is round-half-even of the exact rational here, because a quotient
 * with a denominator below 2^17 is either exactly q + 1/2 or at least 2^-17
 * away from it. */
static double ref_stretch(double x, double lo, double hi, uint32_t m,
                          uint32_t in_max) {
  if (x < lo)
    return 0;
  if (x > hi)
    return m;
  if (hi == lo) /* a constant range: depth conversion only */
    return rint(x * m / in_max);
  return rint((x - lo) * m / (hi - lo));
}

static void check_minmax_int(imgstat_sample s, imgstat_sample out_s, int linked,
                             uint32_t w, uint32_t h, int ch) {
  imgstat_image in, out;
  make_image(&in, w, h, ch, s);
  imgstat_norm_options o = {
      .mode = IMGSTAT_NORM_MINMAX, .linked = linked, .out_sample = out_s};
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  imgstat_sample os = out_s ? out_s : s;
  CU_ASSERT_EQUAL(out.sample, os);
  CU_ASSERT_EQUAL(out.channels, ch);
  uint64_t n = (uint64_t)w * h;
  /* the ranges, measured here */
  double lo[4], hi[4], llo = 1e300, lhi = -1e300;
  for (int c = 0; c < ch; c++) {
    lo[c] = 1e300;
    hi[c] = -1e300;
    for (uint64_t i = 0; i < n; i++) {
      double x = test_sample_at(&in, c, i);
      lo[c] = fmin(lo[c], x);
      hi[c] = fmax(hi[c], x);
    }
    if (!imgstat_channel_is_alpha(ch, c)) {
      llo = fmin(llo, lo[c]);
      lhi = fmax(lhi, hi[c]);
    }
  }
  for (int c = 0; c < ch; c++) {
    int alpha = imgstat_channel_is_alpha(ch, c);
    double a = linked && !alpha ? llo : lo[c],
           b = linked && !alpha ? lhi : hi[c];
    double omin = 1e300, omax = -1e300;
    int bad = 0;
    for (uint64_t i = 0; i < n; i++) {
      double x = test_sample_at(&in, c, i), y = test_sample_at(&out, c, i),
             want;
      if (alpha) /* copied, depth-converted */
        want = rint(x * full(os) / full(s));
      else
        want = ref_stretch(x, a, b, full(os), full(s));
      bad += y != want;
      omin = fmin(omin, y);
      omax = fmax(omax, y);
    }
    CU_ASSERT_EQUAL(bad, 0);
    if (!alpha && !linked && hi[c] > lo[c]) {
      /* re-measured: the full range */
      CU_ASSERT_EQUAL(omin, 0);
      CU_ASSERT_EQUAL(omax, full(os));
    }
  }
  imgstat_image_free(&in);
  imgstat_image_free(&out);
}

static void test_minmax_u8(void) {
  check_minmax_int(IMGSTAT_U8, 0, 0, 37, 23, 3);
  check_minmax_int(IMGSTAT_U8, 0, 0, 1, 1, 1);
  check_minmax_int(IMGSTAT_U8, 0, 0, 61, 7, 4);
  check_minmax_int(IMGSTAT_U8, IMGSTAT_U16, 0, 13, 11, 2);
  check_minmax_int(IMGSTAT_U8, 0, 1, 37, 23, 3);
  check_minmax_int(IMGSTAT_U8, 0, 1, 17, 9, 4);
}

static void test_minmax_u16(void) {
  check_minmax_int(IMGSTAT_U16, 0, 0, 129, 3, 3);
  check_minmax_int(IMGSTAT_U16, IMGSTAT_U8, 0, 31, 17, 4);
  check_minmax_int(IMGSTAT_U16, 0, 1, 29, 31, 3);
}

static void test_u16_extremes_and_constant(void) {
  imgstat_image in, out;
  make_image(&in, 3, 2, 2, IMGSTAT_U16);
  uint16_t *p = in.planes[0], *q = in.planes[1];
  uint16_t vals[6] = {0, 65535, 1, 65534, 32768, 32767};
  for (int i = 0; i < 6; i++) {
    p[i] = vals[i];
    q[i] = 4242; /* alpha, constant */
  }
  imgstat_norm_options o = {0};
  o.mode = IMGSTAT_NORM_MINMAX;
  o.alpha = IMGSTAT_ALPHA_NORMALIZE; /* a constant normalized channel */
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  for (int i = 0; i < 6; i++) {
    CU_ASSERT_EQUAL(((uint16_t *)out.planes[0])[i], vals[i]); /* identity */
    CU_ASSERT_EQUAL(((uint16_t *)out.planes[1])[i], 4242);    /* unchanged */
  }
  imgstat_image_free(&out);
  /* to 8 bits: round(x * 255 / 65535) = round(x / 257), half to even */
  o.out_sample = IMGSTAT_U8;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  uint8_t want[6] = {0, 255, 0, 255, 128, 127};
  for (int i = 0; i < 6; i++)
    CU_ASSERT_EQUAL(((uint8_t *)out.planes[0])[i], want[i]);
  CU_ASSERT_EQUAL(((uint8_t *)out.planes[1])[0], 17); /* 4242/257 = 16.5 */
  imgstat_image_free(&out);
  /* zscore of a constant channel: 0, no NaN */
  o.mode = IMGSTAT_NORM_ZSCORE;
  o.out_sample = 0;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  CU_ASSERT_EQUAL(out.sample, IMGSTAT_F32);
  for (int i = 0; i < 6; i++)
    CU_ASSERT_EQUAL(((float *)out.planes[1])[i], 0.0f);
  imgstat_image_free(&out);
  imgstat_image_free(&in);
}

/* nearest rank percentile by sorting; p integer */
static double ref_percentile(double *v, uint64_t n, int p) {
  qsort(v, n, sizeof *v, test_cmp_double);
  uint64_t k = ((uint64_t)p * n + 99) / 100;
  return v[(k ? k : 1) - 1];
}

static void check_clip_int(imgstat_sample s, int linked, int plo, int phi) {
  imgstat_image in, out;
  uint32_t w = 53, h = 19;
  int ch = 3;
  make_image(&in, w, h, ch, s);
  imgstat_norm_options o = {.mode = IMGSTAT_NORM_CLIP,
                            .linked = linked,
                            .clip_low = plo,
                            .clip_high = phi};
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  uint64_t n = (uint64_t)w * h;
  double *v = malloc(n * ch * sizeof *v);
  double a[3], b[3];
  for (int c = 0; c < ch; c++) {
    for (uint64_t i = 0; i < n; i++)
      v[i] = test_sample_at(&in, c, i);
    a[c] = ref_percentile(v, n, plo);
    b[c] = ref_percentile(v, n, phi);
  }
  if (linked) {
    for (int c = 0; c < ch; c++)
      for (uint64_t i = 0; i < n; i++)
        v[c * n + i] = test_sample_at(&in, c, i);
    double la = ref_percentile(v, n * ch, plo);
    double lb = ref_percentile(v, n * ch, phi);
    for (int c = 0; c < ch; c++) {
      a[c] = la;
      b[c] = lb;
    }
  }
  for (int c = 0; c < ch; c++) {
    CU_ASSERT_EQUAL(m.lo[c], a[c]);
    CU_ASSERT_EQUAL(m.hi[c], b[c]);
    int bad = 0;
    for (uint64_t i = 0; i < n; i++) {
      double x = test_sample_at(&in, c, i), y = test_sample_at(&out, c, i);
      bad += y != ref_stretch(x, a[c], b[c], full(s), full(s));
    }
    CU_ASSERT_EQUAL(bad, 0);
  }
  free(v);
  imgstat_image_free(&in);
  imgstat_image_free(&out);
}

static void test_clip(void) {
  check_clip_int(IMGSTAT_U8, 0, 1, 99);
  check_clip_int(IMGSTAT_U8, 1, 2, 98);
  check_clip_int(IMGSTAT_U16, 0, 5, 95);
  check_clip_int(IMGSTAT_U16, 1, 0, 100);
  check_clip_int(IMGSTAT_U8, 0, 50, 50); /* a degenerate range */
}

static void test_zscore_and_given(void) {
  imgstat_image in, out;
  uint32_t w = 41, h = 13;
  make_image(&in, w, h, 3, IMGSTAT_U8);
  imgstat_norm_options o = {0};
  o.mode = IMGSTAT_NORM_ZSCORE;
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  uint64_t n = (uint64_t)w * h;
  for (int c = 0; c < 3; c++) {
    double sum = 0, ss = 0;
    for (uint64_t i = 0; i < n; i++)
      sum += test_sample_at(&in, c, i);
    double mean = sum / n;
    for (uint64_t i = 0; i < n; i++)
      ss += (test_sample_at(&in, c, i) - mean) *
            (test_sample_at(&in, c, i) - mean);
    double sd = sqrt(ss / n);
    double zs = 0, zz = 0;
    for (uint64_t i = 0; i < n; i++) {
      double y = test_sample_at(&out, c, i);
      double want = (test_sample_at(&in, c, i) - mean) / sd;
      CU_ASSERT(fabs(y - want) <= 1e-6 * (1 + fabs(want)));
      zs += y;
      zz += y * y;
    }
    CU_ASSERT(fabs(zs / n) < 1e-5);     /* mean 0 */
    CU_ASSERT(fabs(zz / n - 1) < 1e-5); /* variance 1 */
  }
  imgstat_image_free(&out);
  o.mode = IMGSTAT_NORM_GIVEN;
  o.nstats = 3;
  double mean[3] = {123.675, 116.28, 103.53}, sd[3] = {58.395, 57.12, 57.375};
  memcpy(o.mean, mean, sizeof mean);
  memcpy(o.std, sd, sizeof sd);
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  for (int c = 0; c < 3; c++)
    for (uint64_t i = 0; i < n; i += 7) {
      double want = (test_sample_at(&in, c, i) - mean[c]) / sd[c];
      CU_ASSERT_EQUAL((float)want, ((float *)out.planes[c])[i]);
    }
  imgstat_image_free(&out);
  /* invalid: std 0, or an integer output */
  imgstat_error err;
  o.std[1] = 0;
  CU_ASSERT_EQUAL(imgstat_norm_plan_make(&in, &o, NULL, &plan, &err),
                  IMGSTAT_ERR_ARG);
  o.std[1] = 1;
  o.out_sample = IMGSTAT_U8;
  CU_ASSERT_EQUAL(imgstat_norm_plan_make(&in, &o, NULL, &plan, &err),
                  IMGSTAT_ERR_ARG);
  imgstat_image_free(&in);
}

static void test_float_input(void) {
  imgstat_image in, out;
  uint32_t w = 33, h = 9;
  make_image(&in, w, h, 4, IMGSTAT_F32);
  float *p = in.planes[0];
  p[3] = NAN;
  p[4] = INFINITY;
  p[5] = -INFINITY;
  imgstat_norm_options o = {0};
  o.mode = IMGSTAT_NORM_MINMAX;
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  CU_ASSERT_EQUAL(out.sample, IMGSTAT_F32);
  float *q = out.planes[0];
  CU_ASSERT(isnan(q[3]));
  CU_ASSERT(isinf(q[4]) && q[4] > 0);
  CU_ASSERT(isinf(q[5]) && q[5] < 0);
  uint64_t n = (uint64_t)w * h;
  for (int c = 0; c < 3; c++) {
    double lo = 1e300, hi = -1e300, omin = 1e300, omax = -1e300;
    for (uint64_t i = 0; i < n; i++) {
      double x = test_sample_at(&in, c, i);
      if (isfinite(x)) {
        lo = fmin(lo, x);
        hi = fmax(hi, x);
      }
    }
    for (uint64_t i = 0; i < n; i++) {
      double x = test_sample_at(&in, c, i), y = test_sample_at(&out, c, i);
      if (!isfinite(x))
        continue;
      CU_ASSERT_EQUAL((float)((x - lo) / (hi - lo)), (float)y);
      omin = fmin(omin, y);
      omax = fmax(omax, y);
    }
    CU_ASSERT_EQUAL(omin, 0.0);
    CU_ASSERT_EQUAL(omax, 1.0);
  }
  /* alpha copied unchanged */
  CU_ASSERT(memcmp(in.planes[3], out.planes[3], n * 4) == 0);
  imgstat_image_free(&out);
  /* to 8 bits: NaN 0, +Inf 255, -Inf 0 */
  o.out_sample = IMGSTAT_U8;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  uint8_t *b = out.planes[0];
  CU_ASSERT_EQUAL(b[3], 0);
  CU_ASSERT_EQUAL(b[4], 255);
  CU_ASSERT_EQUAL(b[5], 0);
  imgstat_image_free(&out);
  /* drop alpha */
  o.out_sample = 0;
  o.alpha = IMGSTAT_ALPHA_DROP;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  CU_ASSERT_EQUAL(out.channels, 3);
  imgstat_image_free(&out);
  imgstat_image_free(&in);
}

/* Every entry of the lookup tables against the definition evaluated in
 * double (exact here, see ref_stretch), for random integer ranges. */
static void test_lut_exhaustive(void) {
  imgstat_sample ins[2] = {IMGSTAT_U8, IMGSTAT_U16};
  imgstat_sample outs[2] = {IMGSTAT_U8, IMGSTAT_U16};
  uint32_t *lut = malloc(65536 * sizeof *lut);
  int bad = 0;
  for (int ii = 0; ii < 2; ii++)
    for (int oi = 0; oi < 2; oi++)
      for (int trial = 0; trial < 20; trial++) {
        uint32_t in_max = full(ins[ii]);
        uint32_t a = (uint32_t)(test_rand(&seed) % (in_max + 1));
        uint32_t b = (uint32_t)(test_rand(&seed) % (in_max + 1));
        if (a > b) {
          uint32_t t = a;
          a = b;
          b = t;
        }
        if (trial == 0) { /* the whole range: a pure depth change */
          a = 0;
          b = in_max;
        }
        imgstat_norm_plan plan;
        memset(&plan, 0, sizeof plan);
        plan.in_sample = ins[ii];
        plan.out_sample = outs[oi];
        plan.channels_out = 1;
        plan.map[0].kind = IMGSTAT_MAP_STRETCH;
        plan.map[0].a = a;
        plan.map[0].b = b;
        imgstat_norm_plan_lut(&plan, 0, lut);
        for (uint32_t x = 0; x <= in_max; x++)
          bad +=
              lut[x] != (uint32_t)ref_stretch(x, a, b, full(outs[oi]), in_max);
      }
  CU_ASSERT_EQUAL(bad, 0);
  free(lut);
}

/* Float to integer rounds half to even: t * 255 = 127.5 and 128.5. */
static void test_float_half_even(void) {
  imgstat_image in, out;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_image_alloc(&in, 4, 1, 1, IMGSTAT_F32, 0, &err) ==
                  IMGSTAT_OK);
  float *p = in.planes[0];
  p[0] = 0;   /* lo */
  p[1] = 510; /* hi: t = x / 510, so x = 255 gives 127.5, x = 257 128.5 */
  p[2] = 255;
  p[3] = 257;
  imgstat_norm_options o = {0};
  o.mode = IMGSTAT_NORM_MINMAX;
  o.out_sample = IMGSTAT_U8;
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  CU_ASSERT_FATAL(run_cpu(&in, &o, &m, &plan, &out) == IMGSTAT_OK);
  uint8_t *q = out.planes[0];
  CU_ASSERT_EQUAL(q[0], 0);
  CU_ASSERT_EQUAL(q[1], 255);
  CU_ASSERT_EQUAL(q[2], 128);
  CU_ASSERT_EQUAL(q[3], 128);
  imgstat_image_free(&out);
  imgstat_image_free(&in);
}

/* ---- writers ----------------------------------------------------------- */

static int files_in_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  if (d)
    closedir(d);
  return n;
}

static void clear_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  struct dirent *e;
  char path[512];
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
    unlink(path);
  }
  if (d)
    closedir(d);
}

static void check_png_roundtrip(imgstat_sample s, int ch) {
  imgstat_image img;
  make_image(&img, 29, 7, ch, s);
  char path[512];
  snprintf(path, sizeof path, "%s/out.png", tmpdir);
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_image_write(path, &img, NULL, &err) == IMGSTAT_OK);
  /* read back with libpng's simplified API, independent of our loader */
  png_image pi;
  memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  CU_ASSERT_FATAL(png_image_begin_read_from_file(&pi, path));
  CU_ASSERT_EQUAL(pi.width, 29u);
  CU_ASSERT_EQUAL(pi.height, 7u);
  CU_ASSERT_EQUAL((int)PNG_IMAGE_SAMPLE_CHANNELS(pi.format), ch);
  CU_ASSERT_EQUAL((int)PNG_IMAGE_SAMPLE_COMPONENT_SIZE(pi.format), (int)s);
  /* read raw bytes through the classic API to avoid any conversion */
  png_image_free(&pi);
  FILE *f = fopen(path, "rb");
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, 0, 0, 0);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_read_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
  png_bytepp rows = png_get_rows(png, info);
  int bad = 0;
  for (uint32_t y = 0; y < 7; y++)
    for (uint32_t x = 0; x < 29; x++)
      for (int c = 0; c < ch; c++) {
        size_t k = (size_t)x * ch + c;
        double v = s == IMGSTAT_U8 ? rows[y][k]
                                   : (rows[y][2 * k] << 8) | rows[y][2 * k + 1];
        bad += v != test_sample_at(&img, c, (uint64_t)y * 29 + x);
      }
  CU_ASSERT_EQUAL(bad, 0);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
  CU_ASSERT_EQUAL(files_in_tmpdir(), 1); /* no temporary left */
  clear_tmpdir();
  imgstat_image_free(&img);
}

static void test_png(void) {
  check_png_roundtrip(IMGSTAT_U8, 1);
  check_png_roundtrip(IMGSTAT_U8, 3);
  check_png_roundtrip(IMGSTAT_U16, 4);
  check_png_roundtrip(IMGSTAT_U16, 2);
  imgstat_image img;
  make_image(&img, 3, 3, 3, IMGSTAT_F32);
  char path[512];
  snprintf(path, sizeof path, "%s/f.png", tmpdir);
  imgstat_error err;
  CU_ASSERT_EQUAL(imgstat_image_write(path, &img, NULL, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(files_in_tmpdir(), 0);
  imgstat_image_free(&img);
}

static void test_npy_and_pfm(void) {
  imgstat_image img;
  uint32_t w = 5, h = 3;
  make_image(&img, w, h, 3, IMGSTAT_F32);
  char path[512];
  snprintf(path, sizeof path, "%s/out.npy", tmpdir);
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_image_write(path, &img, NULL, &err) == IMGSTAT_OK);
  /* the header by hand */
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  CU_ASSERT_FATAL(fread(head, 1, 10, f) == 10);
  CU_ASSERT(memcmp(head, "\x93NUMPY\x01\x00", 8) == 0);
  size_t hl = head[8] | (head[9] << 8);
  CU_ASSERT_EQUAL((10 + hl) % 64, 0);
  char dict[512] = {0};
  CU_ASSERT_FATAL(hl < sizeof dict && fread(dict, 1, hl, f) == hl);
  CU_ASSERT(strstr(dict, "'descr': '<f4'") != NULL);
  CU_ASSERT(strstr(dict, "'shape': (3, 5, 3)") != NULL);
  CU_ASSERT_EQUAL(dict[hl - 1], '\n');
  float data[45];
  CU_ASSERT_FATAL(fread(data, 4, 45, f) == 45);
  CU_ASSERT(fgetc(f) == EOF);
  fclose(f);
  for (uint32_t i = 0; i < w * h; i++)
    for (int c = 0; c < 3; c++)
      CU_ASSERT_EQUAL(data[i * 3 + c], ((float *)img.planes[c])[i]);
  /* numpy, when present */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import numpy' >/dev/null 2>&1 || exit 77; "
           "python3 -c 'import numpy as np, sys; a = np.load(sys.argv[1]); "
           "assert a.shape == (3, 5, 3) and a.dtype == np.float32, a; "
           "assert float(a[2, 4, 1]) == %.17g' '%s'",
           (double)((float *)img.planes[1])[14], path);
  int rc = system(cmd);
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77)
    printf(
        "\n  skipped: numpy is not installed (npy read back by hand only)\n");
  else
    CU_ASSERT_EQUAL(rc, 0);
  unlink(path);
  /* PFM: bottom-up rows, little-endian (scale -1) */
  snprintf(path, sizeof path, "%s/out.pfm", tmpdir);
  CU_ASSERT_FATAL(imgstat_image_write(path, &img, NULL, &err) == IMGSTAT_OK);
  f = fopen(path, "rb");
  char magic[3] = {0};
  unsigned pw = 0, ph = 0;
  double scale = 0;
  CU_ASSERT(fscanf(f, "%2s %u %u %lf", magic, &pw, &ph, &scale) == 4);
  fgetc(f);
  CU_ASSERT_STRING_EQUAL(magic, "PF");
  CU_ASSERT_EQUAL(pw, w);
  CU_ASSERT_EQUAL(ph, h);
  CU_ASSERT(scale < 0);
  CU_ASSERT_FATAL(fread(data, 4, 45, f) == 45);
  fclose(f);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      CU_ASSERT_EQUAL(data[((h - 1 - y) * w + x) * 3],
                      ((float *)img.planes[0])[y * w + x]);
  unlink(path);
  imgstat_image_free(&img);
  /* 16-bit npy and a 1-channel shape */
  make_image(&img, 4, 2, 1, IMGSTAT_U16);
  snprintf(path, sizeof path, "%s/g.npy", tmpdir);
  CU_ASSERT_FATAL(imgstat_image_write(path, &img, NULL, &err) == IMGSTAT_OK);
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import numpy' >/dev/null 2>&1 || exit 77; "
           "python3 -c 'import numpy as np, sys; a = np.load(sys.argv[1]); "
           "assert a.shape == (2, 4) and a.dtype == np.uint16 and "
           "int(a[1, 3]) == %u' '%s'",
           ((uint16_t *)img.planes[0])[7], path);
  rc = system(cmd);
  if (!(WIFEXITED(rc) && WEXITSTATUS(rc) == 77))
    CU_ASSERT_EQUAL(rc, 0);
  unlink(path);
  /* PFM cannot hold 2 channels */
  imgstat_image_free(&img);
  make_image(&img, 4, 2, 2, IMGSTAT_F32);
  snprintf(path, sizeof path, "%s/ya.pfm", tmpdir);
  CU_ASSERT_EQUAL(imgstat_image_write(path, &img, NULL, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(files_in_tmpdir(), 0);
  imgstat_image_free(&img);
}

static void test_failing_writes(void) {
  imgstat_image img;
  make_image(&img, 300, 200, 3, IMGSTAT_U8);
  imgstat_error err;
  char path[512];
  /* a folder that does not exist */
  snprintf(path, sizeof path, "%s/no/such/dir/x.png", tmpdir);
  CU_ASSERT_EQUAL(imgstat_image_write(path, &img, NULL, &err), IMGSTAT_ERR_IO);
  CU_ASSERT(strstr(err.message, "No such file") != NULL);
  /* cancelled (as by Ctrl-C): nothing left */
  volatile sig_atomic_t flag = 1;
  imgstat_write_options wo = {.format = IMGSTAT_FILE_AUTO, .cancel = &flag};
  snprintf(path, sizeof path, "%s/c.png", tmpdir);
  CU_ASSERT_EQUAL(imgstat_image_write(path, &img, &wo, &err), IMGSTAT_ERR_IO);
  CU_ASSERT_STRING_EQUAL(err.message, "interrupted");
  CU_ASSERT_EQUAL(files_in_tmpdir(), 0);
  /* the disk fills up mid-write (a file size limit in a child process) */
  const char *names[3] = {"full.png", "full.npy", "full.pfm"};
  for (int k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/%s", tmpdir, names[k]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit rl = {20000, 20000};
      setrlimit(RLIMIT_FSIZE, &rl);
      imgstat_error e2;
      imgstat_status st = imgstat_image_write(path, &img, NULL, &e2);
      _exit(st == IMGSTAT_ERR_IO && strstr(e2.message, "large") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(files_in_tmpdir(), 0);
  }
  /* a read-only folder (root ignores the mode: then say so) */
  char ro[300];
  snprintf(ro, sizeof ro, "%s/ro", tmpdir);
  mkdir(ro, 0555);
  snprintf(path, sizeof path, "%s/x.npy", ro);
  if (geteuid() == 0) {
    printf("\n  skipped: read-only folder check (running as root)\n");
  } else {
    CU_ASSERT_EQUAL(imgstat_image_write(path, &img, NULL, &err),
                    IMGSTAT_ERR_IO);
    CU_ASSERT(strstr(err.message, "Permission denied") != NULL);
    DIR *d = opendir(ro);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
      n += e->d_name[0] != '.' || strlen(e->d_name) > 2;
    if (d)
      closedir(d);
    CU_ASSERT_EQUAL(n, 0);
  }
  rmdir(ro);
  /* /dev/full: the folder /dev is not ours to create files in, or the
   * write fails; either way an error and no /dev/.full.* left behind */
  CU_ASSERT_NOT_EQUAL(imgstat_image_write("/dev/full", &img, NULL, &err),
                      IMGSTAT_OK);
  imgstat_image_free(&img);
}

static int suite_init(void) {
  return test_tmp_template(tmpdir, sizeof tmpdir, "imgstat-test-norm-") &&
                 mkdtemp(tmpdir)
             ? 0
             : 1;
}

static int suite_clean(void) {
  clear_tmpdir();
  return rmdir(tmpdir);
}

static const test_case tests[] = {
    {"normalize", NULL},
    {"minmax u8 (per channel, linked, 1x1, to 16)", test_minmax_u8},
    {"minmax u16 (to 8, linked)", test_minmax_u16},
    {"u16 extremes, constant channels", test_u16_extremes_and_constant},
    {"clip against sorted percentiles", test_clip},
    {"zscore and given statistics", test_zscore_and_given},
    {"float input: NaN/Inf, alpha", test_float_input},
    {"every lookup table entry", test_lut_exhaustive},
    {"float to 8 bits: half to even", test_float_half_even},
    {"PNG written and read back", test_png},
    {".npy and PFM", test_npy_and_pfm},
    {"failing writes leave no file", test_failing_writes},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, suite_init, suite_clean); }
