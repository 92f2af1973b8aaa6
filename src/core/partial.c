/*
 * Partial statistics of one channel: start (init), scan, merge, and the one
 * place that turns a partial into the reported figures.
 *
 * A scan works in fixed chunks of IMGSTAT_SCAN_CHUNK samples whose boundaries
 * are multiples of the chunk size in plane coordinates, whatever `first` and
 * `n` are. Each chunk gets a fresh partial that is merged into the caller's
 * in chunk order, so a float plane scanned in one call and the same plane
 * scanned chunk by chunk and merged in order give the same bits. The CPU
 * backend relies on that (its work unit is the same chunk).
 */
#include "image_rows.h"
#include "imgstat.h"
#include "merge.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* 64 Ki samples: the u8 sum of squares of one chunk fits 32 bits
 * (65536 * 255^2 < 2^32), as does the u16 sum (65536 * 65535 < 2^32). The
 * CPU backend uses the same work unit; tests check they agree bit for bit. */
#define IMGSTAT_SCAN_CHUNK 65536u

/* Samples per sub-block. A chunk's reduction keeps the min and max of each
 * sub-block, so the first position of the chunk's min and max is searched in
 * one sub-block (cache-hot) instead of the whole chunk. */
#define SUB_BLOCK 2048u
#define SUB_BLOCKS (IMGSTAT_SCAN_CHUNK / SUB_BLOCK)

/* Samples per block in the first-position searches: the block test is a
 * branch-free loop the compiler vectorizes; only the hit block is walked. */
#define SEARCH_BLOCK 64

/* One library for every x86-64 CPU that still uses AVX2 / AVX-512 where the
 * CPU has them (GCC function multiversioning, resolved once at load time):
 * SSE2 alone has no unsigned 16-bit min/max and no 32-bit multiply, and runs
 * the u16 scan at less than half the speed. ThreadSanitizer cannot run ifunc
 * resolvers (it crashes at start-up), so TSan builds go without. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__) && !defined(__SANITIZE_THREAD__)
#define IMGSTAT_SIMD_CLONES                                                    \
  __attribute__((noinline, target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define IMGSTAT_SIMD_CLONES
#endif

void imgstat_partial_init(imgstat_partial *p) { *p = ist_partial_empty(); }

void imgstat_partial_merge(imgstat_partial *a, const imgstat_partial *b,
                           imgstat_sample sample) {
  ist_partial_merge(a, b, sample == IMGSTAT_F32);
}

/* ---- first positions ----------------------------------------------------- */

IMGSTAT_SIMD_CLONES
static uint32_t find_u16(const uint16_t *x, uint32_t n, uint16_t v) {
  uint32_t i = 0;
  for (; i + SEARCH_BLOCK <= n; i += SEARCH_BLOCK) {
    int hit = 0;
    for (int k = 0; k < SEARCH_BLOCK; k++)
      hit |= x[i + k] == v;
    if (hit)
      break;
  }
  for (; i < n; i++)
    if (x[i] == v)
      return i;
  return n;
}

static uint32_t find_f32(const float *x, uint32_t n, float v) {
  for (uint32_t i = 0; i < n; i++)
    if (x[i] == v)
      return i;
  return n;
}

/* The first sub-block whose extreme equals the chunk's: the first sample
 * equal to that extreme lies in it. */
static uint32_t first_sub_block_u(const uint32_t *ext, uint32_t blocks,
                                  uint32_t v) {
  uint32_t k = 0;
  while (k + 1 < blocks && ext[k] != v)
    k++;
  return k;
}

static uint32_t sub_len(uint32_t n, uint32_t k) {
  uint32_t start = k * SUB_BLOCK;
  return n - start < SUB_BLOCK ? n - start : SUB_BLOCK;
}

/* ---- integer chunks ------------------------------------------------------ */

/* One vectorized pass (sum, sum of squares, min and max of each sub-block)
 * then the first min and max searched in a single sub-block. */
IMGSTAT_SIMD_CLONES
static void chunk_u8(imgstat_partial *p, const uint8_t *x, uint64_t first,
                     uint32_t n) {
  uint32_t sum = 0, sumsq = 0; /* 64 Ki samples: both fit 32 bits */
  uint32_t blo[SUB_BLOCKS], bhi[SUB_BLOCKS];
  uint32_t blocks = (n + SUB_BLOCK - 1) / SUB_BLOCK;
  uint8_t lo = UINT8_MAX, hi = 0;
  for (uint32_t k = 0; k < blocks; k++) {
    const uint8_t *b = x + k * SUB_BLOCK;
    uint32_t m = sub_len(n, k);
    uint32_t s = 0, q = 0;
    uint8_t l = UINT8_MAX, h = 0;
    for (uint32_t i = 0; i < m; i++) {
      uint32_t v = b[i];
      s += v;
      q += v * v;
      l = b[i] < l ? b[i] : l;
      h = b[i] > h ? b[i] : h;
    }
    sum += s;
    sumsq += q;
    blo[k] = l;
    bhi[k] = h;
    lo = l < lo ? l : lo;
    hi = h > hi ? h : hi;
  }
  uint32_t klo = first_sub_block_u(blo, blocks, lo);
  uint32_t khi = first_sub_block_u(bhi, blocks, hi);
  const uint8_t *at_lo = memchr(x + klo * SUB_BLOCK, lo, sub_len(n, klo));
  const uint8_t *at_hi = memchr(x + khi * SUB_BLOCK, hi, sub_len(n, khi));
  p->count = n;
  p->sum = sum;
  p->sumsq = sumsq;
  p->min = lo;
  p->max = hi;
  p->min_index = first + (uint64_t)(at_lo - x);
  p->max_index = first + (uint64_t)(at_hi - x);
}

IMGSTAT_SIMD_CLONES
static void chunk_u16(imgstat_partial *p, const uint16_t *x, uint64_t first,
                      uint32_t n) {
  uint32_t sum = 0; /* 64 Ki * 65535 fits 32 bits */
  uint64_t sumsq = 0;
  uint32_t blo[SUB_BLOCKS], bhi[SUB_BLOCKS];
  uint32_t blocks = (n + SUB_BLOCK - 1) / SUB_BLOCK;
  uint16_t lo = UINT16_MAX, hi = 0;
  for (uint32_t k = 0; k < blocks; k++) {
    const uint16_t *b = x + k * SUB_BLOCK;
    uint32_t m = sub_len(n, k);
    uint32_t s = 0;
    uint64_t q = 0;
    uint16_t l = UINT16_MAX, h = 0;
    for (uint32_t i = 0; i < m; i++) {
      uint32_t v = b[i];
      s += v;
      q += v * v; /* 65535^2 fits 32 bits; the sum needs 64 */
      l = b[i] < l ? b[i] : l;
      h = b[i] > h ? b[i] : h;
    }
    sum += s;
    sumsq += q;
    blo[k] = l;
    bhi[k] = h;
    lo = l < lo ? l : lo;
    hi = h > hi ? h : hi;
  }
  uint32_t klo = first_sub_block_u(blo, blocks, lo);
  uint32_t khi = first_sub_block_u(bhi, blocks, hi);
  p->count = n;
  p->sum = sum;
  p->sumsq = sumsq;
  p->min = lo;
  p->max = hi;
  p->min_index = first + klo * SUB_BLOCK +
                 find_u16(x + klo * SUB_BLOCK, sub_len(n, klo), lo);
  p->max_index = first + khi * SUB_BLOCK +
                 find_u16(x + khi * SUB_BLOCK, sub_len(n, khi), hi);
}

/* ---- float chunks -------------------------------------------------------- */

/*
 * Finite samples only: a two-pass mean then M2 in double, with the deviations
 * also summed to correct M2 for the rounding of the mean ("corrected
 * two-pass"). Each pass has F32_LANES fixed lanes (lane l takes samples l,
 * l + F32_LANES, ...) combined in lane order, so the order of every addition
 * is fixed by the code. The compiler's vectorizer may not reorder float sums
 * on its own (no -ffast-math), so the lanes are written with GCC/Clang vector
 * types; other compilers get the same lanes as scalar code, the same bits.
 * Non-finite samples are classified on their bits and masked to zero.
 */
#define F32_LANES 16
#define F32_ABS 0x7fffffffu
#define F32_INF 0x7f800000u
#define F32_NEG_INF 0xff800000u
#define F32_NAN 0x7fc00000u

typedef struct f32_pass1 {
  double sum[F32_LANES];
  uint32_t finite[F32_LANES];
  uint32_t nan[F32_LANES];
} f32_pass1;

#if defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 9)
/* A step is F32_QUADS quads of 4 floats, each widened to 4 doubles; float
 * lane l of a step is double lane l. */
#define F32_QUADS (F32_LANES / 4)
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

#define V4(x)                                                                  \
  { x, x, x, x }

/* Sums, counts and the min/max lanes of whole steps (n a multiple of
 * F32_LANES); lo/hi start afresh, the sums and counts go on. */
IMGSTAT_SIMD_CLONES
static void f32_scan1(const float *x, uint32_t n, f32_pass1 *acc, float *lo,
                      float *hi) {
  const v4i inf = V4((int32_t)F32_INF), ninf = V4((int32_t)F32_NEG_INF);
  const v4i mask_abs = V4((int32_t)F32_ABS);
  v4d s[F32_QUADS];
  v4i fin_n[F32_QUADS], nan_n[F32_QUADS], vlo[F32_QUADS], vhi[F32_QUADS];
  memcpy(s, acc->sum, sizeof s);
  memcpy(fin_n, acc->finite, sizeof fin_n);
  memcpy(nan_n, acc->nan, sizeof nan_n);
  for (int g = 0; g < F32_QUADS; g++) {
    vlo[g] = inf;
    vhi[g] = ninf;
  }
  for (uint32_t i = 0; i < n; i += F32_LANES) {
    for (int g = 0; g < F32_QUADS; g++) {
      v4i b;
      memcpy(&b, x + i + 4 * g, sizeof b);
      v4i mag = b & mask_abs;
      v4i fin = mag < inf; /* -1 in finite lanes */
      fin_n[g] -= fin;
      nan_n[g] -= mag > inf;
      v4i w = b & fin; /* non-finite samples add +0 */
      s[g] += __builtin_convertvector((v4f)w, v4d);
      /* for min/max, non-finite samples become +inf / -inf */
      v4f cl = (v4f)(w | (inf & ~fin)), ch = (v4f)(w | (ninf & ~fin));
      v4f old_lo = (v4f)vlo[g], old_hi = (v4f)vhi[g];
      v4i lt = cl < old_lo;
      v4i gt = ch > old_hi;
      vlo[g] = ((v4i)cl & lt) | (vlo[g] & ~lt);
      vhi[g] = ((v4i)ch & gt) | (vhi[g] & ~gt);
    }
  }
  memcpy(acc->sum, s, sizeof s);
  memcpy(acc->finite, fin_n, sizeof fin_n);
  memcpy(acc->nan, nan_n, sizeof nan_n);
  memcpy(lo, vlo, sizeof vlo);
  memcpy(hi, vhi, sizeof vhi);
}

/* Adds (x - mean)^2 and (x - mean) of the finite samples of whole steps to
 * the lanes q and d. */
IMGSTAT_SIMD_CLONES
static void f32_scan2(const float *x, uint32_t n, double mean, double *q_out,
                      double *d_out) {
  const v4i inf = V4((int32_t)F32_INF), mask_abs = V4((int32_t)F32_ABS);
  const v4d m = V4(mean);
  v4d q[F32_QUADS], d[F32_QUADS];
  memcpy(q, q_out, sizeof q);
  memcpy(d, d_out, sizeof d);
  for (uint32_t i = 0; i < n; i += F32_LANES) {
    for (int g = 0; g < F32_QUADS; g++) {
      v4i b;
      memcpy(&b, x + i + 4 * g, sizeof b);
      v4i fin = (b & mask_abs) < inf;
      v4d a = __builtin_convertvector((v4f)(b & fin), v4d) - m;
      a = (v4d)((v4l)a & __builtin_convertvector(fin, v4l));
      q[g] += a * a;
      d[g] += a;
    }
  }
  memcpy(q_out, q, sizeof q);
  memcpy(d_out, d, sizeof d);
}
#else
static uint32_t f32_bits(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static void f32_scan1(const float *x, uint32_t n, f32_pass1 *acc, float *lo,
                      float *hi) {
  for (int l = 0; l < F32_LANES; l++) {
    lo[l] = INFINITY;
    hi[l] = -INFINITY;
  }
  for (uint32_t i = 0; i < n; i += F32_LANES)
    for (int l = 0; l < F32_LANES; l++) {
      float v = x[i + l];
      uint32_t mag = f32_bits(v) & F32_ABS;
      int fin = mag < F32_INF;
      acc->finite[l] += (uint32_t)fin;
      acc->nan[l] += mag > F32_INF;
      acc->sum[l] += fin ? (double)v : 0.0;
      if (fin && v < lo[l])
        lo[l] = v;
      if (fin && v > hi[l])
        hi[l] = v;
    }
}

static void f32_scan2(const float *x, uint32_t n, double mean, double *q,
                      double *d) {
  for (uint32_t i = 0; i < n; i += F32_LANES)
    for (int l = 0; l < F32_LANES; l++) {
      float v = x[i + l];
      double a = (f32_bits(v) & F32_ABS) < F32_INF ? (double)v - mean : 0.0;
      q[l] += a * a;
      d[l] += a;
    }
}
#endif

/* The chunk's last partial step, padded with NaN (counted, then uncounted). */
static uint32_t f32_pad(float pad[F32_LANES], const float *x, uint32_t tail) {
  uint32_t nan_bits = F32_NAN;
  for (int l = 0; l < F32_LANES; l++)
    memcpy(&pad[l], &nan_bits, sizeof pad[l]);
  memcpy(pad, x, tail * sizeof *x);
  return F32_LANES - tail;
}

static void chunk_f32(imgstat_partial *p, const float *x, uint64_t first,
                      uint32_t n) {
  f32_pass1 acc;
  memset(&acc, 0, sizeof acc);
  float blo[SUB_BLOCKS], bhi[SUB_BLOCKS];
  uint32_t blocks = (n + SUB_BLOCK - 1) / SUB_BLOCK;
  uint32_t padded = 0;
  float lo = INFINITY, hi = -INFINITY;
  for (uint32_t k = 0; k < blocks; k++) {
    const float *b = x + k * SUB_BLOCK;
    uint32_t m = sub_len(n, k), whole = m - m % F32_LANES;
    float l[F32_LANES], h[F32_LANES];
    f32_scan1(b, whole, &acc, l, h);
    if (whole < m) {
      float pad[F32_LANES], pl[F32_LANES], ph[F32_LANES];
      padded = f32_pad(pad, b + whole, m - whole);
      f32_scan1(pad, F32_LANES, &acc, pl, ph);
      for (int j = 0; j < F32_LANES; j++) {
        l[j] = pl[j] < l[j] ? pl[j] : l[j];
        h[j] = ph[j] > h[j] ? ph[j] : h[j];
      }
    }
    blo[k] = INFINITY;
    bhi[k] = -INFINITY;
    for (int j = 0; j < F32_LANES; j++) {
      blo[k] = l[j] < blo[k] ? l[j] : blo[k];
      bhi[k] = h[j] > bhi[k] ? h[j] : bhi[k];
    }
    lo = blo[k] < lo ? blo[k] : lo;
    hi = bhi[k] > hi ? bhi[k] : hi;
  }
  uint32_t count = 0, nans = 0;
  double sum = 0.0;
  for (int l = 0; l < F32_LANES; l++) {
    count += acc.finite[l];
    nans += acc.nan[l];
    sum += acc.sum[l];
  }
  nans -= padded;
  p->count = count;
  p->nan_count = nans;
  p->inf_count = n - count - nans;
  if (count == 0)
    return;

  double mean = sum / count;
  double q[F32_LANES] = {0}, d[F32_LANES] = {0};
  uint32_t whole = n - n % F32_LANES;
  f32_scan2(x, whole, mean, q, d);
  if (whole < n) {
    float pad[F32_LANES];
    f32_pad(pad, x + whole, n - whole);
    f32_scan2(pad, F32_LANES, mean, q, d);
  }
  double m2 = 0.0, dsum = 0.0;
  for (int l = 0; l < F32_LANES; l++) {
    m2 += q[l];
    dsum += d[l];
  }
  m2 -= dsum * dsum / count;
  p->mean = mean;
  p->m2 = m2 > 0.0 ? m2 : 0.0;

  /* The first sample equal to the extreme (the first sub-block holding it);
   * reporting that sample's own value makes -0.0 versus +0.0 follow the
   * position. */
  uint32_t klo = 0, khi = 0;
  while (klo + 1 < blocks && !(blo[klo] == lo))
    klo++;
  while (khi + 1 < blocks && !(bhi[khi] == hi))
    khi++;
  uint64_t ilo =
      klo * SUB_BLOCK + find_f32(x + klo * SUB_BLOCK, sub_len(n, klo), lo);
  uint64_t ihi =
      khi * SUB_BLOCK + find_f32(x + khi * SUB_BLOCK, sub_len(n, khi), hi);
  p->min = x[ilo];
  p->max = x[ihi];
  p->min_index = first + ilo;
  p->max_index = first + ihi;
}

/* One chunk's partial, merged into p; x is its first sample, `at` its
 * raster index. */
static void scan_chunk(imgstat_partial *p, const void *x, imgstat_sample sample,
                       uint64_t at, uint32_t len) {
  imgstat_partial c;
  imgstat_partial_init(&c);
  switch (sample) {
  case IMGSTAT_U8:
    chunk_u8(&c, x, at, len);
    break;
  case IMGSTAT_U16:
    chunk_u16(&c, x, at, len);
    break;
  case IMGSTAT_F32:
    chunk_f32(&c, x, at, len);
    break;
  default:
    return;
  }
  imgstat_partial_merge(p, &c, sample);
}

/* The end of the chunk that starts at `at` (or holds it), at most end. */
static uint64_t chunk_end_of(uint64_t at, uint64_t end) {
  uint64_t chunk_end = (at / IMGSTAT_SCAN_CHUNK + 1) * IMGSTAT_SCAN_CHUNK;
  return chunk_end < end ? chunk_end : end;
}

void imgstat_partial_scan(imgstat_partial *p, const void *plane,
                          imgstat_sample sample, uint64_t first, uint64_t n) {
  if (sample != IMGSTAT_U8 && sample != IMGSTAT_U16 && sample != IMGSTAT_F32)
    return;
  uint64_t end = first + n;
  uint64_t at = first;
  while (at < end) {
    uint64_t chunk_end = chunk_end_of(at, end);
    scan_chunk(p, (const unsigned char *)plane + at * (size_t)sample, sample,
               at, (uint32_t)(chunk_end - at));
    at = chunk_end;
  }
}

_Static_assert(IMGSTAT_SCAN_CHUNK * 4 <= IST_SCAN_SCRATCH_BYTES,
               "a chunk of float samples fits the scratch");

void ist_partial_scan_rows(imgstat_partial *p, const void *plane, size_t stride,
                           uint32_t width, imgstat_sample sample,
                           uint64_t first, uint64_t n, void *scratch) {
  const size_t row = (size_t)width * (size_t)sample;
  if (stride == row || width == 0) {
    imgstat_partial_scan(p, plane, sample, first, n);
    return;
  }
  if (sample != IMGSTAT_U8 && sample != IMGSTAT_U16 && sample != IMGSTAT_F32)
    return;
  /* The same chunks as in a dense plane, each gathered from its rows. */
  const unsigned char *base = plane;
  unsigned char *buf = scratch;
  uint64_t end = first + n;
  uint64_t at = first;
  while (at < end) {
    uint64_t chunk_end = chunk_end_of(at, end);
    size_t got = 0;
    for (uint64_t i = at; i < chunk_end;) {
      uint64_t y = i / width, x = i % width;
      uint64_t take = width - x < chunk_end - i ? width - x : chunk_end - i;
      memcpy(buf + got, base + y * stride + x * sample, take * sample);
      got += take * sample;
      i += take;
    }
    scan_chunk(p, buf, sample, at, (uint32_t)(chunk_end - at));
    at = chunk_end;
  }
}

/* ---- figures ------------------------------------------------------------- */

/* Integer std from exact integers: N*sumsq - sum^2 is exact in 128 bits (up to
 * 2^32 * 2^32 * 2^32 = 2^96), so a constant image gives exactly 0 and there
 * is no cancellation; only the final division and root round. */
static double int_std(uint64_t count, uint64_t sum, uint64_t sumsq, int ddof) {
  __extension__ typedef unsigned __int128 u128;
  u128 d = (u128)count * sumsq - (u128)sum * sum;
  if (d == 0)
    return 0.0;
  long double num = (long double)d;
  long double den = (long double)count * (long double)(count - (uint64_t)ddof);
  return (double)sqrtl(num / den);
}

void imgstat_figures_compute(const imgstat_partial *p, imgstat_sample sample,
                             uint32_t width, int ddof, imgstat_figures *out) {
  if (ddof < 0)
    ddof = 0;
  memset(out, 0, sizeof *out);
  out->count = p->count;
  out->nan_count = p->nan_count;
  out->inf_count = p->inf_count;
  out->sum_is_exact = sample != IMGSTAT_F32;
  out->has_values = p->count > 0;
  out->has_std = p->count > (uint64_t)ddof;
  if (out->sum_is_exact) {
    out->exact_sum = p->sum;
    out->sum = (double)p->sum;
  }
  if (!out->has_values)
    return;

  out->min = p->min;
  out->max = p->max;
  if (width > 0) {
    out->min_x = (uint32_t)(p->min_index % width);
    out->min_y = (uint32_t)(p->min_index / width);
    out->max_x = (uint32_t)(p->max_index % width);
    out->max_y = (uint32_t)(p->max_index / width);
  }
  if (sample == IMGSTAT_F32) {
    out->mean = p->mean;
    out->sum = p->mean * (double)p->count;
    if (out->has_std) {
      double m2 = p->m2 > 0.0 ? p->m2 : 0.0;
      out->std = sqrt(m2 / (double)(p->count - (uint64_t)ddof));
    }
  } else {
    /* Both integers are exact in double (sum < 2^48), so this one division
     * is the correctly rounded mean. */
    out->mean = (double)p->sum / (double)p->count;
    if (out->has_std)
      out->std = int_std(p->count, p->sum, p->sumsq, ddof);
  }
}
