/*
 * The valid-sample figures of pixel-interleaved 8- and 16-bit samples
 * reduced where they lie, without splitting them into planes (image_rows.h:
 * ist_ilv_*). The same predicate as valid.c's walk (a sample is nodata when
 * its band has a nodata value and the sample equals it; no mask here) and
 * the same figures: exact integer count, sum and sum of squares, min and
 * max with the first raster position of each.
 *
 * With C bands and vectors of 16 samples, the band of lane j of the vector
 * at sample offset 16 v of a run (a run starts at band 0) is
 * (16 v + j) mod C: it repeats every P = lcm(C, 16) / 16 vectors. A run is
 * taken a piece at a time (whole periods, about 16 KiB of samples); for
 * each of the P positions k of a period, the vectors k, k + P, k + 2P ...
 * of the piece are reduced in registers (per-lane min, max, nodata count,
 * 32-bit sums, and the sums of squares as 32-bit sums of their low and high
 * 16 bits, exact), and then folded into the bands by a table of lanes. The
 * piece's minimum (maximum) of a band is searched for its first position only
 * when it beats the band's figure so far, or equals it where the piece may come
 * first in raster order. What is left of a run after the pieces (less than
 * a period), and everything on a CPU without AVX2, is reduced one sample
 * at a time by the scalar loop, which gives the same figures.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"

#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define IST_ILV_AVX2 1
#include <immintrin.h>
#endif

#define ILV_LANES 16u
/* samples of a piece, at least one period */
#define ILV_PIECE 8192u

struct ist_ilv {
  int channels;
  int u8;
  uint16_t flip;       /* int16: the top bit flipped as the planes hold it */
  int any_nodata;      /* some band has a nodata value */
  int all_nodata;      /* every band has one */
  int simd;            /* the AVX2 pieces */
  uint16_t *ndv;       /* a band's nodata value (stored form) */
  uint8_t *has;        /* whether the band has one */
  uint32_t period;     /* P: vectors in a period */
  uint32_t period_px;  /* pixels in a period */
  uint32_t piece_px;   /* pixels in a piece */
  uint32_t *lane_band; /* P * 16: the band of each lane */
  uint16_t *lane_nd;   /* its nodata value, */
  uint16_t *lane_has;  /* 0xffff where it has one */
  uint16_t *plo, *phi, *pnd; /* a piece's lanes */
  uint16_t *blo, *bhi;       /* a piece's bands */
  uint32_t *bnd;
  uint64_t *lsum, *lsq; /* P * 16: the vectors' sums so far, a lane each */
  /* the figures so far, a band each (the lanes' sums apart) */
  uint64_t pixels;
  uint64_t *nd, *sum, *sq, *lo_at, *hi_at;
  uint32_t *lo, *hi;
};

void ist_ilv_free(ist_ilv *a) {
  if (!a)
    return;
  free(a->ndv);
  free(a->has);
  free(a->lane_band);
  free(a->lane_nd);
  free(a->lane_has);
  free(a->plo);
  free(a->phi);
  free(a->pnd);
  free(a->blo);
  free(a->bhi);
  free(a->bnd);
  free(a->lsum);
  free(a->lsq);
  free(a->nd);
  free(a->sum);
  free(a->sq);
  free(a->lo_at);
  free(a->hi_at);
  free(a->lo);
  free(a->hi);
  free(a);
}

static uint32_t gcd_u32(uint32_t a, uint32_t b) {
  while (b) {
    uint32_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int ist_ilv_simd(void) {
#ifdef IST_ILV_AVX2
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  return 0;
#endif
}

ist_ilv *ist_ilv_create(int channels, imgstat_sample sample, int int16,
                        const imgstat_valid *v, int simd) {
  if (channels < 1 || (sample != IMGSTAT_U8 && sample != IMGSTAT_U16))
    return NULL;
  ist_ilv *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  size_t n = (size_t)channels;
  a->channels = channels;
  a->u8 = sample == IMGSTAT_U8;
  a->flip = int16 && !a->u8 ? 0x8000u : 0;
  a->simd = simd && ist_ilv_simd();
  uint32_t c = (uint32_t)channels;
  a->period = c / gcd_u32(c, ILV_LANES);
  a->period_px = a->period * ILV_LANES / c;
  uint32_t periods = ILV_PIECE / (a->period * ILV_LANES);
  a->piece_px = (periods ? periods : 1) * a->period_px;
  size_t lanes = (size_t)a->period * ILV_LANES;
  a->ndv = calloc(n, sizeof *a->ndv);
  a->has = calloc(n, sizeof *a->has);
  a->lane_band = malloc(lanes * sizeof *a->lane_band);
  a->lane_nd = malloc(lanes * sizeof *a->lane_nd);
  a->lane_has = malloc(lanes * sizeof *a->lane_has);
  a->plo = malloc(lanes * sizeof *a->plo);
  a->phi = malloc(lanes * sizeof *a->phi);
  a->pnd = malloc(lanes * sizeof *a->pnd);
  a->blo = malloc(n * sizeof *a->blo);
  a->bhi = malloc(n * sizeof *a->bhi);
  a->bnd = malloc(n * sizeof *a->bnd);
  a->nd = calloc(n, sizeof *a->nd);
  a->lsum = calloc(lanes, sizeof *a->lsum);
  a->lsq = calloc(lanes, sizeof *a->lsq);
  a->sum = calloc(n, sizeof *a->sum);
  a->sq = calloc(n, sizeof *a->sq);
  a->lo_at = malloc(n * sizeof *a->lo_at);
  a->hi_at = malloc(n * sizeof *a->hi_at);
  a->lo = malloc(n * sizeof *a->lo);
  a->hi = malloc(n * sizeof *a->hi);
  if (!a->ndv || !a->has || !a->lane_band || !a->lane_nd || !a->lane_has ||
      !a->plo || !a->phi || !a->pnd || !a->blo || !a->bhi || !a->bnd ||
      !a->lsum || !a->lsq || !a->nd || !a->sum || !a->sq || !a->lo_at ||
      !a->hi_at || !a->lo || !a->hi) {
    ist_ilv_free(a);
    return NULL;
  }
  for (int b = 0; b < channels; b++) {
    if (v && b < IMGSTAT_MAX_CHANNELS && v->has_nodata[b]) {
      a->has[b] = 1;
      a->ndv[b] = (uint16_t)v->nodata[b];
      a->any_nodata = 1;
    }
    a->lo_at[b] = a->hi_at[b] = UINT64_MAX;
    a->lo[b] = a->hi[b] = 0;
  }
  a->all_nodata = 1;
  for (int b = 0; b < channels; b++)
    a->all_nodata &= a->has[b];
  for (size_t l = 0; l < lanes; l++) {
    uint32_t b = (uint32_t)(l % n);
    a->lane_band[l] = b;
    a->lane_nd[l] = a->ndv[b];
    a->lane_has[l] = a->has[b] ? 0xffffu : 0;
  }
  return a;
}

/* Sample s (of band b) at raster index at, valid: into the minimum and the
 * maximum of b. */
static inline void ilv_extreme(ist_ilv *a, uint32_t b, uint32_t s,
                               uint64_t at) {
  if (a->lo_at[b] == UINT64_MAX || s < a->lo[b] ||
      (s == a->lo[b] && at < a->lo_at[b])) {
    a->lo[b] = s;
    a->lo_at[b] = at;
  }
  if (a->hi_at[b] == UINT64_MAX || s > a->hi[b] ||
      (s == a->hi[b] && at < a->hi_at[b])) {
    a->hi[b] = s;
    a->hi_at[b] = at;
  }
}

/* The raster index of pixel i of a run whose pixel 0 is at raster index
 * first, in rows of cols pixels of an image width wide. */
static inline uint64_t ilv_at(uint64_t i, uint64_t first, uint32_t cols,
                              uint32_t width) {
  return first + i / cols * width + i % cols;
}

/* Pixels i0 .. i1 - 1 of the run px, one sample at a time. */
static void ilv_scalar(ist_ilv *a, const void *px, uint64_t i0, uint64_t i1,
                       uint64_t first, uint32_t cols, uint32_t width) {
  const uint32_t c = (uint32_t)a->channels;
  for (uint64_t i = i0; i < i1; i++) {
    uint64_t at = ilv_at(i, first, cols, width);
    for (uint32_t b = 0; b < c; b++) {
      uint32_t s =
          a->u8 ? ((const uint8_t *)px)[i * c + b]
                : (uint32_t)(((const uint16_t *)px)[i * c + b] ^ a->flip);
      if (a->has[b] && s == a->ndv[b]) {
        a->nd[b]++;
        continue;
      }
      a->sum[b] += s;
      a->sq[b] += (uint64_t)s * s;
      ilv_extreme(a, b, s, at);
    }
  }
  a->pixels += i1 - i0;
}

#ifdef IST_ILV_AVX2
/* The first valid sample of band b equal to s among pixels i0 .. i1 - 1
 * (one is there): its pixel. s is a valid value, so a sample equal to it
 * is not the nodata value. */
static uint64_t ilv_find(const ist_ilv *a, const void *px, uint64_t i0,
                         uint64_t i1, uint32_t b, uint32_t s) {
  const uint32_t c = (uint32_t)a->channels;
  for (uint64_t i = i0; i < i1; i++) {
    uint32_t t = a->u8
                     ? ((const uint8_t *)px)[i * c + b]
                     : (uint32_t)(((const uint16_t *)px)[i * c + b] ^ a->flip);
    if (t == s)
      return i;
  }
  return i1; /* not reached */
}

/* 16-bit lanes summed in 32-bit lanes, three operations a vector: t adds
 * the whole 32-bit lanes (the even lane plus 2^16 times the odd one, modulo
 * 2^32), o the odd lanes alone; the even lanes' sums are t - 2^16 o modulo
 * 2^32, exact while every lane's sum stays below 2^32 (ILV_MAX_NP). */
#define ILV_MAX_NP (ILV_PIECE / ILV_LANES)
_Static_assert((uint64_t)ILV_MAX_NP * 65535u < (1ull << 32),
               "a piece's 32-bit lane sums overflow");

__attribute__((target("avx2"), always_inline)) static inline void
ilv_add16(__m256i *t, __m256i *o, __m256i v) {
  *t = _mm256_add_epi32(*t, v);
  *o = _mm256_add_epi32(*o, _mm256_srli_epi32(v, 16));
}

/* The 16 lanes' sums of ilv_add16's t and o into s[0 .. 15]. */
__attribute__((target("avx2"), always_inline)) static inline void
ilv_lanes16(__m256i t, __m256i o, uint32_t *s) {
  uint32_t tt[8], oo[8];
  _mm256_storeu_si256((__m256i *)tt, t);
  _mm256_storeu_si256((__m256i *)oo, o);
  for (int j = 0; j < 8; j++) {
    s[2 * j] = tt[j] - (oo[j] << 16);
    s[2 * j + 1] = oo[j];
  }
}

/* The vectors of position k of the period in np periods from x (samples),
 * into the piece's lanes k * 16 .. and the bands' sums. The square of a
 * sample is its low and high 16 bits (_mm256_mullo_epi16,
 * _mm256_mulhi_epu16; u8 squares have no high half), summed apart and
 * joined in 64 bits at the end: sq = lo + 2^16 hi, exact. */
__attribute__((target("avx2"), always_inline)) static inline void
ilv_position(ist_ilv *a, const unsigned char *x, const unsigned char *next,
             uint32_t np, uint32_t k, const int u8, const int nodata,
             const int flipped, const int every) {
  const size_t step = (size_t)a->period * ILV_LANES * (u8 ? 1 : 2);
  const unsigned char *p = x + (size_t)k * ILV_LANES * (u8 ? 1 : 2);
  const __m256i flip = _mm256_set1_epi16((short)0x8000);
  const __m256i ndk =
      _mm256_loadu_si256((const __m256i *)(a->lane_nd + k * ILV_LANES));
  const __m256i hk =
      _mm256_loadu_si256((const __m256i *)(a->lane_has + k * ILV_LANES));
  __m256i mn = _mm256_set1_epi16(-1), mx = _mm256_setzero_si256();
  __m256i nd = _mm256_setzero_si256();
  __m256i st = _mm256_setzero_si256(), so = st, lt = st, lo = st;
  __m256i ht = st, ho = st;
  const size_t vec = u8 ? 16 : 32;
  const unsigned char *ahead = next + (size_t)k * np * vec;
  for (uint32_t i = 0; i < np; i++, p += step, ahead += vec) {
    __m256i s;
    /* the next piece, a vector's bytes at each step: the strided loads
     * of the next positions find it in the cache */
    _mm_prefetch((const char *)ahead, _MM_HINT_T0);
    if (u8)
      s = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
    else if (flipped)
      s = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), flip);
    else
      s = _mm256_loadu_si256((const __m256i *)p);
    if (nodata) {
      /* every: all the bands have a nodata value (hk all ones) */
      __m256i m = _mm256_cmpeq_epi16(s, ndk);
      if (!every)
        m = _mm256_and_si256(m, hk);
      nd = _mm256_sub_epi16(nd, m);
      mn = _mm256_min_epu16(mn, _mm256_or_si256(s, m));
      s = _mm256_andnot_si256(m, s);
    } else {
      mn = _mm256_min_epu16(mn, s);
    }
    mx = _mm256_max_epu16(mx, s);
    ilv_add16(&st, &so, s);
    ilv_add16(&lt, &lo, _mm256_mullo_epi16(s, s));
    if (!u8)
      ilv_add16(&ht, &ho, _mm256_mulhi_epu16(s, s));
  }
  _mm256_storeu_si256((__m256i *)(a->plo + k * ILV_LANES), mn);
  _mm256_storeu_si256((__m256i *)(a->phi + k * ILV_LANES), mx);
  _mm256_storeu_si256((__m256i *)(a->pnd + k * ILV_LANES), nd);
  uint32_t sv[16], sl[16], sh[16];
  ilv_lanes16(st, so, sv);
  ilv_lanes16(lt, lo, sl);
  if (!u8)
    ilv_lanes16(ht, ho, sh);
  uint64_t *restrict ls = a->lsum + k * ILV_LANES;
  uint64_t *restrict lq = a->lsq + k * ILV_LANES;
  for (int j = 0; j < 16; j++) {
    ls[j] += sv[j];
    lq[j] += sl[j] + (u8 ? 0 : (uint64_t)sh[j] << 16);
  }
}

__attribute__((target("avx2"))) static void
ilv_piece_avx2(ist_ilv *a, const unsigned char *x, const unsigned char *next,
               uint32_t np) {
  const int every = a->all_nodata;
  for (uint32_t k = 0; k < a->period; k++) {
    if (a->u8 && a->any_nodata)
      ilv_position(a, x, next, np, k, 1, 1, 0, every);
    else if (a->u8)
      ilv_position(a, x, next, np, k, 1, 0, 0, 0);
    else if (a->flip && a->any_nodata)
      ilv_position(a, x, next, np, k, 0, 1, 1, every);
    else if (a->flip)
      ilv_position(a, x, next, np, k, 0, 0, 1, 0);
    else if (a->any_nodata)
      ilv_position(a, x, next, np, k, 0, 1, 0, every);
    else
      ilv_position(a, x, next, np, k, 0, 0, 0, 0);
  }
  /* the lanes in order hold pixel after pixel of bands 0 .. C - 1: folded
   * a pixel at a time, the bands side by side (no branch) */
  const uint32_t c = (uint32_t)a->channels;
  uint16_t *restrict blo = a->blo, *restrict bhi = a->bhi;
  uint32_t *restrict bnd = a->bnd;
  for (uint32_t b = 0; b < c; b++) {
    blo[b] = a->plo[b];
    bhi[b] = a->phi[b];
    bnd[b] = a->pnd[b];
  }
  for (uint32_t q = 1; q < a->period_px; q++) {
    const uint16_t *restrict lo = a->plo + (size_t)q * c;
    const uint16_t *restrict hi = a->phi + (size_t)q * c;
    const uint16_t *restrict nd = a->pnd + (size_t)q * c;
    for (uint32_t b = 0; b < c; b++) {
      blo[b] = lo[b] < blo[b] ? lo[b] : blo[b];
      bhi[b] = hi[b] > bhi[b] ? hi[b] : bhi[b];
      bnd[b] += nd[b];
    }
  }
}
#endif

/* Pixels i0 .. i0 + n - 1 of the run (whole periods), by vectors. */
static void ilv_piece(ist_ilv *a, const void *px, uint64_t i0, uint32_t n,
                      uint64_t first, uint32_t cols, uint32_t width) {
#ifdef IST_ILV_AVX2
  const uint32_t c = (uint32_t)a->channels;
  const size_t size = a->u8 ? 1 : 2;
  const unsigned char *x = (const unsigned char *)px + i0 * c * size;
  /* the next piece follows: prefetching never faults past the run */
  ilv_piece_avx2(a, x, x + (size_t)n * c * size, n / a->period_px);
  uint64_t start = ilv_at(i0, first, cols, width); /* the piece's first */
  for (uint32_t b = 0; b < c; b++) {
    a->nd[b] += a->bnd[b];
    if (a->bnd[b] == n) /* no valid sample */
      continue;
    uint32_t lo = a->blo[b], hi = a->bhi[b];
    if (a->lo_at[b] == UINT64_MAX || lo < a->lo[b] ||
        (lo == a->lo[b] && start < a->lo_at[b]))
      ilv_extreme(
          a, b, lo,
          ilv_at(ilv_find(a, px, i0, i0 + n, b, lo), first, cols, width));
    if (a->hi_at[b] == UINT64_MAX || hi > a->hi[b] ||
        (hi == a->hi[b] && start < a->hi_at[b]))
      ilv_extreme(
          a, b, hi,
          ilv_at(ilv_find(a, px, i0, i0 + n, b, hi), first, cols, width));
  }
  a->pixels += n;
#else
  ilv_scalar(a, px, i0, i0 + n, first, cols, width);
#endif
}

void ist_ilv_scan(ist_ilv *a, const void *px, uint64_t n, uint64_t first,
                  uint32_t cols, uint32_t width) {
  uint64_t i = 0;
  if (a->simd)
    for (; n - i >= a->period_px; i += a->piece_px) {
      uint64_t left = (n - i) / a->period_px * a->period_px;
      uint32_t take = left < a->piece_px ? (uint32_t)left : a->piece_px;
      ilv_piece(a, px, i, take, first, cols, width);
      if (take < a->piece_px) {
        i += take;
        break;
      }
    }
  if (i < n)
    ilv_scalar(a, px, i, n, first, cols, width);
}

void ist_ilv_finish(const ist_ilv *a, imgstat_partial *part, uint64_t *nodata) {
  const size_t lanes = (size_t)a->period * ILV_LANES;
  for (int b = 0; b < a->channels; b++) {
    imgstat_partial p;
    imgstat_partial_init(&p);
    p.count = a->pixels - a->nd[b];
    if (p.count) {
      p.sum = a->sum[b];
      p.sumsq = a->sq[b];
      /* the lanes of band b: b, b + C, ... */
      for (size_t l = (size_t)b; l < lanes; l += (size_t)a->channels) {
        p.sum += a->lsum[l];
        p.sumsq += a->lsq[l];
      }
      p.min = a->lo[b];
      p.max = a->hi[b];
      p.min_index = a->lo_at[b];
      p.max_index = a->hi_at[b];
    }
    imgstat_partial_merge(&part[b], &p, a->u8 ? IMGSTAT_U8 : IMGSTAT_U16);
    nodata[b] += a->nd[b];
  }
}
