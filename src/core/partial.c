/*
 * Partial statistics of one channel: start (init), scan, merge, and the one
 * place that turns a partial into the reported figures.
 *
 * A scan works in fixed chunks of IMGSTAT_SCAN_CHUNK samples whose boundaries
 * are multiples of the chunk size in plane coordinates, whatever `first` and
 * `n` are. Each chunk gets a fresh partial; float chunks are merged by the
 * chunk tree of float_order.h (the canonical order), so a float plane
 * scanned in one call and the same plane scanned chunk by chunk and merged by
 * that tree give the same bits. The CPU backend relies on that (its work
 * unit is the same chunk).
 */
#include "float_order.h"
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "merge.h"
#include "simd_clones.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* 64 Ki samples (the float order's chunk): the u8 sum of squares of one
 * chunk fits 32 bits (65536 * 255^2 < 2^32), as does the u16 sum
 * (65536 * 65535 < 2^32). The CPU backend uses the same work unit; tests
 * check they agree bit for bit. */
#define IMGSTAT_SCAN_CHUNK IST_FO_CHUNK

/* Samples per sub-block. A chunk's reduction keeps the min and max of each
 * sub-block, so the first position of the chunk's min and max is searched in
 * one sub-block (cache-hot) instead of the whole chunk. */
#define SUB_BLOCK 2048u
#define SUB_BLOCKS (IMGSTAT_SCAN_CHUNK / SUB_BLOCK)

/* Samples per block in the first-position searches: the block test is a
 * branch-free loop the compiler vectorizes; only the hit block is walked. */
#define SEARCH_BLOCK 64

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

/* Where v first stands in x[0..n) (it is there): memchr for bytes. */
static inline const uint8_t *at_u8(const uint8_t *x, uint32_t n, uint8_t v) {
  return memchr(x, v, n);
}

static inline const uint16_t *at_u16(const uint16_t *x, uint32_t n,
                                     uint16_t v) {
  return x + find_u16(x, n, v);
}

/* One vectorized pass (sum, sum of squares, min and max of each sub-block)
 * then the first min and max searched in a single sub-block, written once for
 * u8 and u16: T the sample, T_MAX its largest value, Q the sum of squares'
 * type (a u8 chunk's fits 32 bits, a u16 chunk's needs 64; one u16 square
 * fits 32), FIND the first-position search. A chunk's sum fits 32 bits for
 * both (65536 * 65535 < 2^32). */
#define CHUNK_UINT(NAME, T, T_MAX, Q, FIND)                                    \
  IMGSTAT_SIMD_CLONES                                                          \
  static void NAME(imgstat_partial *p, const T *x, uint64_t first,             \
                   uint32_t n) {                                               \
    uint32_t sum = 0;                                                          \
    Q sumsq = 0;                                                               \
    uint32_t blo[SUB_BLOCKS], bhi[SUB_BLOCKS];                                 \
    uint32_t blocks = (n + SUB_BLOCK - 1) / SUB_BLOCK;                         \
    T lo = T_MAX, hi = 0;                                                      \
    for (uint32_t k = 0; k < blocks; k++) {                                    \
      const T *b = x + k * SUB_BLOCK;                                          \
      uint32_t m = sub_len(n, k);                                              \
      uint32_t s = 0;                                                          \
      Q q = 0;                                                                 \
      T l = T_MAX, h = 0;                                                      \
      for (uint32_t i = 0; i < m; i++) {                                       \
        uint32_t v = b[i];                                                     \
        s += v;                                                                \
        q += v * v;                                                            \
        l = b[i] < l ? b[i] : l;                                               \
        h = b[i] > h ? b[i] : h;                                               \
      }                                                                        \
      sum += s;                                                                \
      sumsq += q;                                                              \
      blo[k] = l;                                                              \
      bhi[k] = h;                                                              \
      lo = l < lo ? l : lo;                                                    \
      hi = h > hi ? h : hi;                                                    \
    }                                                                          \
    uint32_t klo = first_sub_block_u(blo, blocks, lo);                         \
    uint32_t khi = first_sub_block_u(bhi, blocks, hi);                         \
    const T *at_lo = FIND(x + klo * SUB_BLOCK, sub_len(n, klo), lo);           \
    const T *at_hi = FIND(x + khi * SUB_BLOCK, sub_len(n, khi), hi);           \
    p->count = n;                                                              \
    p->sum = sum;                                                              \
    p->sumsq = sumsq;                                                          \
    p->min = lo;                                                               \
    p->max = hi;                                                               \
    p->min_index = first + (uint64_t)(at_lo - x);                              \
    p->max_index = first + (uint64_t)(at_hi - x);                              \
  }

CHUNK_UINT(chunk_u8, uint8_t, UINT8_MAX, uint32_t, at_u8)
CHUNK_UINT(chunk_u16, uint16_t, UINT16_MAX, uint64_t, at_u16)

/* ---- float chunks -------------------------------------------------------- */

/*
 * Two passes over a chunk, the second cache-hot. Pass 1: NaN / Inf counts and
 * the min and max of each sub-block (for the first positions), in 16 lanes
 * of its own (their order does not matter). Pass 2: count, mean and M2 in
 * the canonical order of float_order.h (256 lanes of 4-sample groups, the
 * lane tree), the lanes written with GCC/Clang vector types, four lanes a
 * vector; other compilers, chunks scanned from a point that is not a chunk
 * start, and the last partial row take the same lanes one sample at a time:
 * the same operations, the same bits (tests/core/test_float_order.c holds this
 * to a slow reference). The file is compiled with -ffp-contract=off.
 * Non-finite samples are classified on their bits.
 */
#define F32_LANES 16
#define F32_ABS 0x7fffffffu
#define F32_INF 0x7f800000u
#define F32_NEG_INF 0xff800000u
#define F32_NAN 0x7fc00000u

typedef struct f32_pass1 {
  uint32_t finite[F32_LANES];
  uint32_t nan[F32_LANES];
} f32_pass1;

/* The canonical lanes' running sums, one array per field, and the plane's
 * shift they are relative to. */
typedef struct f32_lanes {
  double shift;
  double s1[IST_FO_LANES];
  double s2[IST_FO_LANES];
  double e[IST_FO_LANES];
  int32_t count[IST_FO_LANES];
} f32_lanes;

/* Samples j0 .. n-1 of x, whose sample 0 is sample `off` of its chunk, a
 * group at a time into their lanes (the samples of a group outside the
 * scan left out). */
static void f32_lanes_scalar(f32_lanes *L, const float *x, uint32_t off,
                             uint32_t j0, uint32_t n) {
  for (uint32_t j = j0; j < n;) {
    uint32_t first = off + j, group = first & ~3u;
    float g[4];
    uint32_t present = 0;
    for (uint32_t k = 0; k < 4; k++) {
      uint32_t i = group + k;
      g[k] = 0.0f;
      if (i >= first && i < off + n) {
        g[k] = x[i - off];
        present |= 1u << k;
      }
    }
    uint32_t l = ist_fo_lane(group);
    ist_fo_acc a;
    a.count = (uint32_t)L->count[l];
    a.shift = L->shift;
    a.s1 = L->s1[l];
    a.s2 = L->s2[l];
    a.e = L->e[l];
    ist_fo_group_add(&a, g, present);
    L->count[l] = (int32_t)a.count;
    L->s1[l] = a.s1;
    L->s2[l] = a.s2;
    L->e[l] = a.e;
    j = group + 4 - off;
  }
}

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

#if defined(__clang__)
#define SHUF4(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define SHUF4(a, b, i, j, k, l) __builtin_shuffle(a, b, (v4i){i, j, k, l})
#endif

/* Counts and the min/max lanes of whole steps (n a multiple of F32_LANES);
 * lo/hi start afresh, the counts go on. */
IMGSTAT_SIMD_CLONES
static void f32_scan1(const float *x, uint32_t n, f32_pass1 *acc, float *lo,
                      float *hi) {
  const v4i inf = V4((int32_t)F32_INF), ninf = V4((int32_t)F32_NEG_INF);
  const v4i mask_abs = V4((int32_t)F32_ABS);
  v4i fin_n[F32_QUADS], nan_n[F32_QUADS], vlo[F32_QUADS], vhi[F32_QUADS];
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
      v4i w = b & fin;
      /* for min/max, non-finite samples become +inf / -inf */
      v4f cl = (v4f)(w | (inf & ~fin)), ch = (v4f)(w | (ninf & ~fin));
      v4f old_lo = (v4f)vlo[g], old_hi = (v4f)vhi[g];
      v4i lt = cl < old_lo;
      v4i gt = ch > old_hi;
      vlo[g] = ((v4i)cl & lt) | (vlo[g] & ~lt);
      vhi[g] = ((v4i)ch & gt) | (vhi[g] & ~gt);
    }
  }
  memcpy(acc->finite, fin_n, sizeof fin_n);
  memcpy(acc->nan, nan_n, sizeof nan_n);
  memcpy(lo, vlo, sizeof vlo);
  memcpy(hi, vhi, sizeof vhi);
}

/* d = x - K of one sample of each of four lanes: +0 where the sample is not
 * finite (fin: -1 where it is), the same bits as skipping it. */
#define F32_D(c, fin)                                                          \
  ((v4d)((v4l)(__builtin_convertvector((c), v4d) - shift) &                    \
         __builtin_convertvector((fin), v4l)))

/* ist_fo_group_sums on four lanes at once (d0..d3: the group's samples of
 * each lane); `any`: -1 in the lanes whose group holds a finite sample (a
 * group without one changes nothing). */
#define F32_GROUP(d0, d1, d2, d3, any)                                         \
  do {                                                                         \
    s1 = s1 + (d0);                                                            \
    s1 = s1 + (d1);                                                            \
    s1 = s1 + (d2);                                                            \
    s1 = s1 + (d3);                                                            \
    v4d g_ = ((d0) * (d0) + (d1) * (d1)) + ((d2) * (d2) + (d3) * (d3));        \
    v4d y_ = g_ - e;                                                           \
    v4d t_ = s2 + y_;                                                          \
    v4d e_ = (t_ - s2) - y_;                                                   \
    s2 = (v4d)(((v4l)t_ & (any)) | ((v4l)s2 & ~(any)));                        \
    e = (v4d)(((v4l)e_ & (any)) | ((v4l)e & ~(any)));                          \
  } while (0)

/* Whole rows (IST_FO_ROW samples: one group of every lane) from a chunk
 * start, four lanes at a time, each walking down the rows with its sums in
 * registers: a 4 x 4 transpose turns the four lanes' groups into four
 * vectors, sample j of each lane's group in vector j. finite[r]: row r
 * holds only finite samples (then no selects: the same bits). */
IMGSTAT_SIMD_CLONES
static void f32_lanes_rows(f32_lanes *L, const float *x, uint32_t rows,
                           const uint8_t *finite) {
  const v4i inf = V4((int32_t)F32_INF), mask_abs = V4((int32_t)F32_ABS);
  const v4i four = V4(4);
  const v4l all = V4((int64_t)-1);
  const v4d shift = V4(L->shift);
  for (uint32_t g = 0; g < IST_FO_LANES / 4; g++) {
    v4d s1, s2, e;
    v4i cnt;
    memcpy(&s1, L->s1 + 4 * g, sizeof s1);
    memcpy(&s2, L->s2 + 4 * g, sizeof s2);
    memcpy(&e, L->e + 4 * g, sizeof e);
    memcpy(&cnt, L->count + 4 * g, sizeof cnt);
    for (uint32_t r = 0; r < rows; r++) {
      const float *p = x + (size_t)r * IST_FO_ROW + 16 * g;
      v4f a0, a1, a2, a3;
      memcpy(&a0, p, sizeof a0);
      memcpy(&a1, p + 4, sizeof a1);
      memcpy(&a2, p + 8, sizeof a2);
      memcpy(&a3, p + 12, sizeof a3);
      v4f t0 = SHUF4(a0, a1, 0, 4, 1, 5), t1 = SHUF4(a2, a3, 0, 4, 1, 5);
      v4f t2 = SHUF4(a0, a1, 2, 6, 3, 7), t3 = SHUF4(a2, a3, 2, 6, 3, 7);
      v4f c0 = SHUF4(t0, t1, 0, 1, 4, 5), c1 = SHUF4(t0, t1, 2, 3, 6, 7);
      v4f c2 = SHUF4(t2, t3, 0, 1, 4, 5), c3 = SHUF4(t2, t3, 2, 3, 6, 7);
      if (finite[r]) {
        v4d d0 = __builtin_convertvector(c0, v4d) - shift;
        v4d d1 = __builtin_convertvector(c1, v4d) - shift;
        v4d d2 = __builtin_convertvector(c2, v4d) - shift;
        v4d d3 = __builtin_convertvector(c3, v4d) - shift;
        F32_GROUP(d0, d1, d2, d3, all);
        cnt += four;
      } else {
        v4i f0 = ((v4i)c0 & mask_abs) < inf, f1 = ((v4i)c1 & mask_abs) < inf;
        v4i f2 = ((v4i)c2 & mask_abs) < inf, f3 = ((v4i)c3 & mask_abs) < inf;
        v4d d0 = F32_D(c0, f0), d1 = F32_D(c1, f1);
        v4d d2 = F32_D(c2, f2), d3 = F32_D(c3, f3);
        v4l any = __builtin_convertvector(f0 | f1 | f2 | f3, v4l);
        F32_GROUP(d0, d1, d2, d3, any);
        cnt -= f0 + f1 + f2 + f3;
      }
    }
    memcpy(L->s1 + 4 * g, &s1, sizeof s1);
    memcpy(L->s2 + 4 * g, &s2, sizeof s2);
    memcpy(L->e + 4 * g, &e, sizeof e);
    memcpy(L->count + 4 * g, &cnt, sizeof cnt);
  }
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
      if (fin && v < lo[l])
        lo[l] = v;
      if (fin && v > hi[l])
        hi[l] = v;
    }
}

static void f32_lanes_rows(f32_lanes *L, const float *x, uint32_t rows,
                           const uint8_t *finite) {
  (void)finite;
  f32_lanes_scalar(L, x, 0, 0, rows * IST_FO_ROW);
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

/* Count, mean - k and M2 of the n samples of x in the canonical order, k
 * the plane's shift; x[0] is sample `off` of its chunk (0 unless a scan
 * starts inside a chunk). */
_Static_assert(SUB_BLOCK % IST_FO_ROW == 0, "whole rows a sub-block");
#define ROWS_PER_SUB_BLOCK (SUB_BLOCK / IST_FO_ROW)

/* fin_block[k]: sub-block k of the chunk holds only finite samples. */
static ist_fo_moments f32_moments(const float *x, uint32_t off, uint32_t n,
                                  double k, const uint8_t *fin_block) {
  f32_lanes L;
  memset(&L, 0, sizeof L);
  L.shift = k;
  uint32_t done = 0;
  if (off == 0) {
    uint32_t rows = n / IST_FO_ROW;
    uint8_t finite[IST_FO_CHUNK / IST_FO_ROW];
    for (uint32_t r = 0; r < rows; r++)
      finite[r] = fin_block[r / ROWS_PER_SUB_BLOCK];
    f32_lanes_rows(&L, x, rows, finite);
    done = rows * IST_FO_ROW;
  }
  f32_lanes_scalar(&L, x, off, done, n);
  ist_fo_moments m[IST_FO_LANES];
  for (uint32_t l = 0; l < IST_FO_LANES; l++) {
    ist_fo_acc a;
    a.count = (uint32_t)L.count[l];
    a.shift = L.shift;
    a.s1 = L.s1[l];
    a.s2 = L.s2[l];
    a.e = L.e[l];
    m[l] = ist_fo_lane_finish(&a);
  }
  ist_fo_tree(m, IST_FO_LANES);
  return m[0];
}

/* A chunk's partial, its mean relative to the plane's shift k. */
static void chunk_f32(imgstat_partial *p, const float *x, uint64_t first,
                      uint32_t n, double k) {
  f32_pass1 acc;
  memset(&acc, 0, sizeof acc);
  float blo[SUB_BLOCKS], bhi[SUB_BLOCKS];
  uint8_t fin_block[SUB_BLOCKS];
  uint32_t blocks = (n + SUB_BLOCK - 1) / SUB_BLOCK;
  uint32_t padded = 0, finite_before = 0;
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
    uint32_t finite_now = 0;
    for (int j = 0; j < F32_LANES; j++)
      finite_now += acc.finite[j];
    fin_block[k] = finite_now - finite_before == m;
    finite_before = finite_now;
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
  for (int l = 0; l < F32_LANES; l++) {
    count += acc.finite[l];
    nans += acc.nan[l];
  }
  nans -= padded;
  p->count = count;
  p->nan_count = nans;
  p->inf_count = n - count - nans;
  if (count == 0)
    return;

  ist_fo_moments mo =
      f32_moments(x, (uint32_t)(first % IST_FO_CHUNK), n, k, fin_block);
  p->mean = mo.mean;
  p->m2 = mo.m2;

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

/* A scan's result so far: integer chunks merge straight into p (exact, any
 * order), float chunks go through the chunk tree of float_order.h, their
 * means relative to k (added back at the end when add_k). */
typedef struct scan_acc {
  imgstat_partial *p;
  ist_fo_stack tree;
  double k;
  int add_k;
} scan_acc;

static void scan_begin(scan_acc *a, imgstat_partial *p, double k, int add_k) {
  a->p = p;
  a->k = k;
  a->add_k = add_k;
  ist_fo_stack_init(&a->tree);
}

static void scan_end(scan_acc *a, imgstat_sample sample) {
  if (sample != IMGSTAT_F32 || a->tree.leaves == 0)
    return;
  imgstat_partial root = ist_fo_stack_root(&a->tree);
  if (a->add_k)
    ist_fo_add_shift(&root, a->k);
  imgstat_partial_merge(a->p, &root, sample);
}

/* One chunk's partial, into the scan; x is its first sample, `at` its
 * raster index. */
static void scan_chunk(scan_acc *acc, const void *x, imgstat_sample sample,
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
    chunk_f32(&c, x, at, len, acc->k);
    break;
  default:
    return;
  }
  if (sample == IMGSTAT_F32)
    ist_fo_stack_push(&acc->tree, &c);
  else
    imgstat_partial_merge(acc->p, &c, sample);
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
  /* K from probes over raster samples 0 .. first + n - 1 (the plane holds
   * them; a dense plane read as rows of 16) */
  double k = sample == IMGSTAT_F32 && n > 0
                 ? ist_fo_plane_shift(plane, 16, 64, first + n)
                 : 0.0;
  scan_acc acc;
  scan_begin(&acc, p, k, 1);
  uint64_t end = first + n;
  uint64_t at = first;
  while (at < end) {
    uint64_t chunk_end = chunk_end_of(at, end);
    scan_chunk(&acc, (const unsigned char *)plane + at * (size_t)sample, sample,
               at, (uint32_t)(chunk_end - at));
    at = chunk_end;
  }
  scan_end(&acc, sample);
}

_Static_assert(IMGSTAT_SCAN_CHUNK * 4 <= IST_SCAN_SCRATCH_BYTES,
               "a chunk of float samples fits the scratch");

void ist_partial_scan_rows(imgstat_partial *p, const void *plane, size_t stride,
                           uint32_t width, imgstat_sample sample,
                           uint64_t first, uint64_t n, void *scratch,
                           const double *k) {
  const size_t row = (size_t)width * (size_t)sample;
  if ((stride == row || width == 0) && !k) {
    imgstat_partial_scan(p, plane, sample, first, n);
    return;
  }
  if (sample != IMGSTAT_U8 && sample != IMGSTAT_U16 && sample != IMGSTAT_F32)
    return;
  if (width == 0 || n == 0)
    return;
  double shift = k ? *k
                 : sample == IMGSTAT_F32
                     ? ist_fo_plane_shift(plane, width, stride, first + n)
                     : 0.0;
  /* The same chunks as in a dense plane, each gathered from its rows. */
  const unsigned char *base = plane;
  unsigned char *buf = scratch;
  const int dense = stride == row;
  scan_acc acc;
  scan_begin(&acc, p, shift, !k);
  uint64_t end = first + n;
  uint64_t at = first;
  while (at < end) {
    uint64_t chunk_end = chunk_end_of(at, end);
    if (dense) {
      scan_chunk(&acc, base + at * sample, sample, at,
                 (uint32_t)(chunk_end - at));
      at = chunk_end;
      continue;
    }
    size_t got = 0;
    for (uint64_t i = at; i < chunk_end;) {
      uint64_t y = i / width, x = i % width;
      uint64_t take = width - x < chunk_end - i ? width - x : chunk_end - i;
      memcpy(buf + got, base + y * stride + x * sample, take * sample);
      got += take * sample;
      i += take;
    }
    scan_chunk(&acc, buf, sample, at, (uint32_t)(chunk_end - at));
    at = chunk_end;
  }
  scan_end(&acc, sample);
}

int imgstat_partial_same(const imgstat_partial *a, const imgstat_partial *b,
                         imgstat_sample sample) {
  if (a->count != b->count || a->nan_count != b->nan_count ||
      a->inf_count != b->inf_count || a->min != b->min || a->max != b->max ||
      a->min_index != b->min_index || a->max_index != b->max_index)
    return 0;
  if (sample != IMGSTAT_F32)
    return a->sum == b->sum && a->sumsq == b->sumsq;
  return memcmp(&a->mean, &b->mean, sizeof a->mean) == 0 &&
         memcmp(&a->m2, &b->m2, sizeof a->m2) == 0;
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
  return (double)ist_std_of_scaled_m2((long double)d, count, ddof);
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
