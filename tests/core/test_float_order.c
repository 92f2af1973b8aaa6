/*
 * The canonical float order (docs/float-order.md) against a slow, obvious
 * re-implementation written here from the spec, not from
 * src/core/float_order.h: the plane's shift K (the lower median of its 16
 * probes, found here by sorting), 256 lanes of 4-sample groups per chunk of
 * 65536, each lane's shifted sums in double (the squares a group at a time into
 * a Kahan sum), lane means relative to K, lanes and chunks merged by a
 * recursive perfect binary tree (neighbours first, empty partials as padding),
 * K added back. The CPU backend, at any thread count, on dense and strided
 * planes of 1..4 channels, must give the same bits: count, NaN/Inf counts, min,
 * max and their positions, mean and M2.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_CHUNK 65536u
#define REF_LANES 256u

typedef struct ref_m {
  uint64_t n;
  double mean, m2;
} ref_m;

/* Chan, Golub and LeVeque's update of a by b, one rounding per operation
 * (this file is compiled with -ffp-contract=off, as the library is). */
static void ref_merge(ref_m *a, const ref_m *b) {
  if (b->n == 0)
    return;
  if (a->n == 0) {
    *a = *b;
    return;
  }
  double na = (double)a->n, nb = (double)b->n;
  double n = na + nb;
  double delta = b->mean - a->mean;
  double w = nb / n;
  a->mean = a->mean + delta * w;
  double f = na * w;
  double cross = (delta * delta) * f;
  a->m2 = a->m2 + (b->m2 + cross);
  a->n += b->n;
}

/* The tree over v[lo, lo + size) (size a power of two); slots at n and
 * beyond are empty. */
static ref_m ref_tree(const ref_m *v, uint64_t lo, uint64_t size, uint64_t n) {
  if (size == 1) {
    ref_m e = {0, 0.0, 0.0};
    return lo < n ? v[lo] : e;
  }
  ref_m left = ref_tree(v, lo, size / 2, n);
  ref_m right = ref_tree(v, lo + size / 2, size / 2, n);
  ref_merge(&left, &right);
  return left;
}

static ref_m ref_tree_all(const ref_m *v, uint64_t n) {
  uint64_t size = 1;
  while (size < n)
    size *= 2;
  return ref_tree(v, 0, size, n);
}

static int ref_finite(float x) { return !isnan(x) && !isinf(x); }

typedef struct ref_probe {
  float v;
  uint32_t j;
} ref_probe;

/* By value, then by probe index (-0 and +0 equal). */
static int ref_probe_cmp(const void *a, const void *b) {
  const ref_probe *p = a, *q = b;
  if (p->v < q->v)
    return -1;
  if (p->v > q->v)
    return 1;
  return p->j < q->j ? -1 : p->j > q->j;
}

/* The plane's shift K: the finite ones of its probes x[j * (n / 16)]
 * (j < 16; all its samples when n < 16) sorted, the lower median of them;
 * 0 when there is none. */
static double ref_shift(const float *x, uint64_t n) {
  ref_probe p[16];
  uint64_t step = n < 16 ? 1 : n / 16, np = n < 16 ? n : 16;
  uint32_t m = 0;
  for (uint64_t j = 0; j < np; j++)
    if (ref_finite(x[j * step])) {
      p[m].v = x[j * step];
      p[m].j = (uint32_t)j;
      m++;
    }
  if (m == 0)
    return 0.0;
  qsort(p, m, sizeof *p, ref_probe_cmp);
  return p[(m - 1) / 2].v;
}

/* The reference partial of samples x[0..n). */
static void ref_plane(const float *x, uint64_t n, imgstat_partial *out) {
  memset(out, 0, sizeof *out);
  out->min = INFINITY;
  out->max = -INFINITY;
  out->min_index = out->max_index = UINT64_MAX;
  for (uint64_t i = 0; i < n; i++) {
    if (isnan(x[i])) {
      out->nan_count++;
    } else if (isinf(x[i])) {
      out->inf_count++;
    } else {
      if (x[i] < out->min || out->min_index == UINT64_MAX) {
        out->min = x[i];
        out->min_index = i;
      }
      if (x[i] > out->max || out->max_index == UINT64_MAX) {
        out->max = x[i];
        out->max_index = i;
      }
    }
  }
  double K = ref_shift(x, n);
  uint64_t chunks = (n + REF_CHUNK - 1) / REF_CHUNK;
  ref_m *cm = calloc(chunks ? chunks : 1, sizeof *cm);
  CU_ASSERT_FATAL(cm != NULL);
  for (uint64_t k = 0; k < chunks; k++) {
    uint32_t cnt[REF_LANES] = {0};
    double s1[REF_LANES] = {0}, s2[REF_LANES] = {0}, e[REF_LANES] = {0};
    uint64_t len =
        n - k * REF_CHUNK < REF_CHUNK ? n - k * REF_CHUNK : REF_CHUNK;
    /* group G of the chunk: its samples 4G .. 4G + 3, lane G mod 256 */
    for (uint64_t G = 0; 4 * G < len; G++) {
      uint32_t l = (uint32_t)(G % REF_LANES), fin = 0;
      double d[4] = {0, 0, 0, 0};
      for (uint64_t j = 0; j < 4 && 4 * G + j < len; j++) {
        float v = x[k * REF_CHUNK + 4 * G + j];
        if (ref_finite(v)) {
          d[j] = (double)v - K;
          fin++;
        }
      }
      if (fin == 0)
        continue;
      for (int j = 0; j < 4; j++)
        s1[l] = s1[l] + d[j];
      double g = (d[0] * d[0] + d[1] * d[1]) + (d[2] * d[2] + d[3] * d[3]);
      /* Kahan's compensated sum of the groups' squares */
      double y = g - e[l];
      double t = s2[l] + y;
      e[l] = (t - s2[l]) - y;
      s2[l] = t;
      cnt[l] += fin;
    }
    ref_m lane[REF_LANES];
    for (uint32_t l = 0; l < REF_LANES; l++) {
      lane[l].n = cnt[l];
      lane[l].mean = lane[l].m2 = 0.0;
      if (cnt[l]) {
        double dm = s1[l] / (double)cnt[l];
        lane[l].mean = dm;
        double m2 = (s2[l] - e[l]) - s1[l] * dm;
        lane[l].m2 = m2 > 0 ? m2 : 0.0;
      }
    }
    cm[k] = ref_tree_all(lane, REF_LANES);
  }
  ref_m root = ref_tree_all(cm, chunks);
  free(cm);
  out->count = root.n;
  out->mean = root.n ? K + root.mean : root.mean;
  out->m2 = root.m2;
}

static int same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* 1 when a and b agree to the bit (reported otherwise). */
static int partial_same(const imgstat_partial *a, const imgstat_partial *b,
                        const char *what) {
  int ok = a->count == b->count && a->nan_count == b->nan_count &&
           a->inf_count == b->inf_count && a->min_index == b->min_index &&
           a->max_index == b->max_index && same_bits(a->mean, b->mean) &&
           same_bits(a->m2, b->m2);
  if (a->count)
    ok = ok && same_bits(a->min, b->min) && same_bits(a->max, b->max);
  if (!ok)
    printf("\n  %s: count %llu/%llu nan %llu/%llu inf %llu/%llu min %a@%llu "
           "/ %a@%llu max %a / %a mean %a / %a m2 %a / %a\n",
           what, (unsigned long long)a->count, (unsigned long long)b->count,
           (unsigned long long)a->nan_count, (unsigned long long)b->nan_count,
           (unsigned long long)a->inf_count, (unsigned long long)b->inf_count,
           a->min, (unsigned long long)a->min_index, b->min,
           (unsigned long long)b->min_index, a->max, b->max, a->mean, b->mean,
           a->m2, b->m2);
  return ok;
}

/* ---- planes -------------------------------------------------------------- */

static double unit(uint64_t *st) {
  return (double)(test_rand(st) >> 11) / 9007199254740992.0;
}

static float normalish(uint64_t *st) {
  double s = 0;
  for (int k = 0; k < 4; k++)
    s += unit(st);
  return (float)((s - 2.0) * 173.2);
}

static float special(uint64_t *st) {
  switch (test_rand(st) % 8) {
  case 0:
    return NAN;
  case 1:
    return INFINITY;
  case 2:
    return -INFINITY;
  case 3:
    return -0.0f;
  case 4:
    return 0.0f;
  case 5: /* a denormal */
    return (float)((unit(st) - 0.5) * 1e-39);
  default:
    return normalish(st);
  }
}

enum {
  K_NORMAL,
  K_SPECIALS,
  K_CONSTANT,
  K_OFFSET,
  K_WIDE,
  K_ALLNAN,
  K_LATE,
  K_KINDS
};
static const char *kind_name[K_KINDS] = {
    "normal",         "NaN/Inf/-0/denormal", "constant",
    "1e6+noise",      "wide magnitudes",     "all NaN",
    "NaN then values"};

static float sample_of(int kind, uint64_t i, uint64_t n, uint64_t *st) {
  switch (kind) {
  case K_SPECIALS:
    return test_rand(st) % 3 == 0 ? special(st) : normalish(st);
  case K_CONSTANT:
    return 3.25f;
  case K_OFFSET:
    return (float)(1e6 + normalish(st) * 0.01);
  case K_WIDE: {
    double m = ldexp(unit(st) + 0.5, (int)(test_rand(st) % 280) - 150);
    return (float)(test_rand(st) & 1 ? -m : m);
  }
  case K_ALLNAN:
    return NAN;
  case K_LATE:
    return i < n / 2 + 3 ? (i % 2 ? INFINITY : NAN) : normalish(st) + 40.0f;
  default:
    return normalish(st);
  }
}

typedef struct shape {
  uint32_t w, h;
} shape;

static const shape shapes[] = {{1, 1},      {3, 1},     {4, 1},      {5, 3},
                               {31, 33},    {1024, 1},  {1025, 1},   {256, 256},
                               {257, 255},  {300, 219}, {1000, 263}, {4097, 3},
                               {513, 1021}, {2049, 640}};

/* One image of `channels` planes of kind (channel c of kind + c), checked
 * dense and strided at every thread count against the reference. */
static void check_image(uint32_t w, uint32_t h, int channels, int kind,
                        uint64_t seed) {
  uint64_t n = (uint64_t)w * h;
  size_t stride = (size_t)w * 4 + 12; /* rows with a NaN-filled gap */
  float *dense[IMGSTAT_MAX_CHANNELS] = {0};
  unsigned char *strided[IMGSTAT_MAX_CHANNELS] = {0};
  imgstat_partial ref[IMGSTAT_MAX_CHANNELS];
  uint64_t st = seed;
  for (int c = 0; c < channels; c++) {
    int k = (kind + c) % K_KINDS;
    dense[c] = malloc(n * sizeof(float));
    strided[c] = malloc((size_t)h * stride);
    CU_ASSERT_FATAL(dense[c] && strided[c]);
    for (uint64_t i = 0; i < n; i++)
      dense[c][i] = sample_of(k, i, n, &st);
    for (uint32_t y = 0; y < h; y++) {
      float gap[3] = {NAN, -INFINITY, 1e30f};
      memcpy(strided[c] + y * stride, dense[c] + (uint64_t)y * w,
             (size_t)w * 4);
      memcpy(strided[c] + y * stride + (size_t)w * 4, gap, sizeof gap);
    }
    ref_plane(dense[c], n, &ref[c]);
  }
  static const int threads[] = {1, 2, 3, 8};
  for (int layout = 0; layout < 2; layout++) {
    imgstat_image img;
    imgstat_error err;
    void *planes[IMGSTAT_MAX_CHANNELS];
    for (int c = 0; c < channels; c++)
      planes[c] = layout ? (void *)strided[c] : (void *)dense[c];
    CU_ASSERT_FATAL(imgstat_image_wrap(&img, w, h, channels, IMGSTAT_F32,
                                       planes, layout ? stride : 0,
                                       &err) == IMGSTAT_OK);
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
      imgstat_partial out[IMGSTAT_MAX_CHANNELS];
      CU_ASSERT_FATAL(imgstat_cpu_stats(&img, threads[t], out, &err) ==
                      IMGSTAT_OK);
      for (int c = 0; c < channels; c++) {
        char what[160];
        snprintf(what, sizeof what, "%ux%u %s channel %d (%s) -j%d", w, h,
                 layout ? "strided" : "dense", c,
                 kind_name[(kind + c) % K_KINDS], threads[t]);
        CU_ASSERT(partial_same(&out[c], &ref[c], what));
      }
    }
    imgstat_image_free(&img);
  }
  /* One scan of the whole plane: the same tree. */
  for (int c = 0; c < channels; c++) {
    imgstat_partial p;
    imgstat_partial_init(&p);
    imgstat_partial_scan(&p, dense[c], IMGSTAT_F32, 0, n);
    CU_ASSERT(partial_same(&p, &ref[c], "imgstat_partial_scan"));
  }
  for (int c = 0; c < channels; c++) {
    free(dense[c]);
    free(strided[c]);
  }
}

static void test_shapes(void) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int kind = 0; kind < K_KINDS; kind++) {
      int channels = 1 + (int)((s + (size_t)kind) % 4);
      check_image(shapes[s].w, shapes[s].h, channels, kind, seed++);
    }
}

/* A plane of several chunks where one chunk is all NaN, one lane of a chunk
 * has one finite sample, and the last chunk is short: empty partials in both
 * trees. */
static void test_sparse(void) {
  uint64_t n = 5 * (uint64_t)REF_CHUNK + 7;
  float *x = malloc(n * sizeof *x);
  CU_ASSERT_FATAL(x != NULL);
  uint64_t st = 7;
  for (uint64_t i = 0; i < n; i++)
    x[i] = normalish(&st);
  for (uint64_t i = REF_CHUNK; i < 2 * REF_CHUNK; i++)
    x[i] = NAN;
  for (uint64_t i = 3 * REF_CHUNK; i < 4 * REF_CHUNK; i++)
    x[i] = i == 3 * REF_CHUNK + 1029 ? 5.0f : INFINITY;
  imgstat_partial ref, p;
  ref_plane(x, n, &ref);
  imgstat_partial_init(&p);
  imgstat_partial_scan(&p, x, IMGSTAT_F32, 0, n);
  CU_ASSERT(partial_same(&p, &ref, "sparse plane"));
  free(x);
}

/* The tree does not depend on how the chunks are cut into runs: scanning a
 * plane in aligned runs of 2^k chunks (means relative to the plane's K) and
 * merging the runs with the same tree gives the plane's bits (what the GPU
 * does with planes larger than its memory). */
static void test_ranges(void) {
  uint64_t n = 11 * (uint64_t)REF_CHUNK + 100;
  float *x = malloc(n * sizeof *x);
  CU_ASSERT_FATAL(x != NULL);
  uint64_t st = 11;
  for (uint64_t i = 0; i < n; i++)
    x[i] = (float)(1e6 + normalish(&st));
  imgstat_partial ref;
  ref_plane(x, n, &ref);
  double K = ref_shift(x, n);
  for (uint64_t run = 1; run <= 8; run *= 2) {
    uint64_t len = run * REF_CHUNK, runs = (n + len - 1) / len;
    ref_m *r = calloc(runs, sizeof *r);
    CU_ASSERT_FATAL(r != NULL);
    for (uint64_t k = 0; k < runs; k++) {
      imgstat_partial p;
      imgstat_partial_init(&p);
      uint64_t m = n - k * len < len ? n - k * len : len;
      /* the run's chunks, means relative to the plane's K */
      ist_partial_scan_rows(&p, x + k * len, m * 4, (uint32_t)m, IMGSTAT_F32, 0,
                            m, NULL, &K);
      r[k].n = p.count;
      r[k].mean = p.mean;
      r[k].m2 = p.m2;
    }
    ref_m root = ref_tree_all(r, runs);
    root.mean = K + root.mean;
    CU_ASSERT(root.n == ref.count);
    CU_ASSERT(same_bits(root.mean, ref.mean));
    CU_ASSERT(same_bits(root.m2, ref.m2));
    free(r);
  }
  free(x);
}

/* ---- accuracy ------------------------------------------------------------ */

/* Two-pass long-double mean and M2 of the finite samples. */
static void ref_long(const float *x, uint64_t n, double *mean, double *m2) {
  long double sum = 0, q = 0;
  uint64_t cnt = 0;
  for (uint64_t i = 0; i < n; i++)
    if (ref_finite(x[i])) {
      sum += x[i];
      cnt++;
    }
  long double m = cnt ? sum / (long double)cnt : 0;
  for (uint64_t i = 0; i < n; i++)
    if (ref_finite(x[i])) {
      long double d = (long double)x[i] - m;
      q += d * d;
    }
  *mean = (double)m;
  *m2 = (double)q;
}

static double g_worst_mean, g_worst_m2;

/* The CPU backend's error on one plane against the long-double reference,
 * within docs/gpu.md's bound: |mean - ref| <= 1e-12 (|mean| + std),
 * |M2 - ref| <= 1e-12 M2 + 8 eps |mean - x0| sqrt(M2 n log2(n + 2)), x0 the
 * plane's first finite sample. */
static void check_accuracy(const float *x, uint64_t n, const char *what,
                           double m2_prev) {
  imgstat_image img;
  imgstat_error err;
  void *planes[1] = {(void *)x};
  CU_ASSERT_FATAL(imgstat_image_wrap(&img, (uint32_t)n, 1, 1, IMGSTAT_F32,
                                     planes, 0, &err) == IMGSTAT_OK);
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  CU_ASSERT_FATAL(imgstat_cpu_stats(&img, 0, out, &err) == IMGSTAT_OK);
  imgstat_image_free(&img);
  const imgstat_partial p = out[0];
  double mean, m2, x0 = 0;
  ref_long(x, n, &mean, &m2);
  for (uint64_t i = 0; i < n; i++)
    if (ref_finite(x[i])) {
      x0 = x[i];
      break;
    }
  if (p.count == 0)
    return;
  double sd = sqrt(m2 / (double)p.count), nd = (double)p.count;
  double em = fabs(p.mean - mean), e2 = fabs(p.m2 - m2);
  double lim_m2 = 1e-12 * m2 + 8 * 2.220446049250313e-16 * fabs(mean - x0) *
                                   sqrt(m2 * nd * log2(nd + 2));
  /* and M2 no worse than the path before the canonical order measured on
   * the same plane (m2_prev, relative: docs/gpu.md's table) */
  int ok =
      em <= 1e-12 * (fabs(mean) + sd) && e2 <= lim_m2 && e2 <= m2_prev * m2;
  if (!ok)
    printf("\n  %s: mean %.17g vs %.17g, m2 %.17g vs %.17g\n", what, p.mean,
           mean, p.m2, m2);
  CU_ASSERT(ok);
  if (fabs(mean) + sd > 0 && em / (fabs(mean) + sd) > g_worst_mean)
    g_worst_mean = em / (fabs(mean) + sd);
  if (getenv("FO_DEBUG"))
    printf("\n  %s n=%llu mean err %.3g m2 err %.3g", what,
           (unsigned long long)n, em / (fabs(mean) + sd), m2 > 0 ? e2 / m2 : 0);
  if (m2 > 0 && e2 / m2 > g_worst_m2)
    g_worst_m2 = e2 / m2;
}

/* The planes of tests/cuda/test_gpu.c that docs/gpu.md's bound was measured on:
 * random planes of three scales (10^-2, 10, 10^4) at several sizes, and
 * "float specials" A, B, C (NaN/Inf sprinkled, 10^6 + noise, the same with
 * NaN first, and with an outlier 0 first). */
static void test_accuracy(void) {
  static const uint64_t sizes[] = {1025, 65537, 262147, 1048573,
                                   (1u << 22) + 5};
  /* The reference needs long double wider than double at run time:
   * valgrind computes x87 long doubles in 64 bits. */
  volatile long double one = 1.0L, tiny = 1e-18L;
  if (one + tiny == one) {
    printf("(skipped: long double is no wider than double here, as under "
           "valgrind) ");
    return;
  }
  uint64_t st = 0x1234567887654321u;
  g_worst_mean = g_worst_m2 = 0;
  float *x = malloc(((1u << 22) + 5) * sizeof *x);
  CU_ASSERT_FATAL(x != NULL);
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
    for (int c = 0; c < 3; c++) {
      double scale = pow(10.0, (double)(c * 3) - 2.0);
      for (uint64_t i = 0; i < sizes[k]; i++) {
        double u = unit(&st);
        x[i] = (float)((u * 2.0 - 1.0) * scale + scale * 0.25);
      }
      check_accuracy(x, sizes[k], "random", 8.1e-16);
    }
  const uint64_t n = 200003;
  for (int variant = 0; variant < 3; variant++) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = test_rand(&st);
      float u = (float)((double)(r >> 40) / 16777216.0);
      x[i] = r % 17 == 0   ? NAN
             : r % 19 == 0 ? INFINITY
             : r % 23 == 0 ? -INFINITY
                           : u * 100.0f - 50.0f;
    }
    check_accuracy(x, n, "specials plane 0", 4.2e-16);
    for (uint64_t i = 0; i < n; i++) {
      float u = (float)((double)(test_rand(&st) >> 40) / 16777216.0);
      x[i] = i == 0 && variant == 1   ? NAN
             : i == 0 && variant == 2 ? 0.0f
                                      : 1.0e6f + u;
    }
    static const double prev[3] = {1.0e-13, 4.2e-13, 3.3e-14}; /* A, B, C */
    check_accuracy(x, n, "specials plane 3 (1e6 + noise)", prev[variant]);
  }
  free(x);
  printf("(worst vs long double: mean %.3g of |mean|+std, M2 %.3g relative) ",
         g_worst_mean, g_worst_m2);
}

static const test_case tests[] = {
    {"float order", NULL},
    {"CPU backend = slow reference: shapes, kinds, -j, strides", test_shapes},
    {"empty chunks and lanes", test_sparse},
    {"runs of 2^k chunks merge to the plane's bits", test_ranges},
    {"accuracy against long double (docs/gpu.md's planes)", test_accuracy},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
