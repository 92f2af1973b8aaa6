/*
 * The one merge rule of two partials (imgstat_partial), shared by the CPU
 * code (src/core/partial.c) and the device code (cuda/reduce.cuh, fast.cu):
 * compiles as C and as CUDA, where every function is __host__ __device__.
 *
 *  - min / max: the smaller (larger) value wins; on equal values the one
 *    with the smaller key (the raster index of the first occurrence). This
 *    makes the extrema independent of the order of merging, and for f32 the
 *    value kept is the first sample's own (-0.0 and 0.0 compare equal).
 *  - nan_count and inf_count add.
 *  - u8 / u16: count, sum and sum of squares add (exact integers).
 *  - f32: count / mean / m2 follow Chan, Golub and LeVeque's pairwise
 *    update; its rounding depends on the order, which every caller fixes
 *    (float_order.h: the canonical order of a plane). Every operation is
 *    written out and rounded on its own (IST_DADD ...: __dadd_rn on the
 *    device, where nvcc would otherwise fuse a * b + c; the CPU code is
 *    compiled with -ffp-contract=off), so host and device give the same bits.
 *
 * An empty partial (ist_partial_empty: count 0, min +inf, max -inf, indices
 * UINT64_MAX, sums 0) is the identity: merging it changes no bit, and
 * comparing its extrema is harmless (+inf never wins against a value and
 * ties with +inf only in another empty partial, whose index is no smaller).
 */
#ifndef IST_MERGE_H
#define IST_MERGE_H

#include <stdint.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#include "imgstat/imgstat.h"

#ifdef __CUDACC__
#define IST_HD __host__ __device__
#else
#define IST_HD
#endif

/* Double operations rounded one by one (never contracted into an FMA). */
#ifdef __CUDA_ARCH__
#define IST_DADD(a, b) __dadd_rn((a), (b))
#define IST_DSUB(a, b) __dsub_rn((a), (b))
#define IST_DMUL(a, b) __dmul_rn((a), (b))
#define IST_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define IST_DADD(a, b) ((a) + (b))
#define IST_DSUB(a, b) ((a) - (b))
#define IST_DMUL(a, b) ((a) * (b))
#define IST_DDIV(a, b) ((a) / (b))
#endif

/* The empty partial (the same as imgstat_partial_init). */
IST_HD static inline imgstat_partial ist_partial_empty(void) {
  imgstat_partial p;
  p.count = 0;
  p.nan_count = 0;
  p.inf_count = 0;
  p.min = __builtin_huge_val();
  p.max = -__builtin_huge_val();
  p.min_index = UINT64_MAX;
  p.max_index = UINT64_MAX;
  p.sum = 0;
  p.sumsq = 0;
  p.mean = 0.0;
  p.m2 = 0.0;
  return p;
}

/* Whether the candidate v replaces the current minimum cur: a smaller value,
 * or an equal one whose key comes first (key_first: the candidate's key is
 * smaller than the current one's). */
IST_HD static inline int ist_min_wins(double v, double cur, int key_first) {
  return v < cur || (v == cur && key_first);
}

/* The same for the maximum: a larger value, or an equal one keyed first. */
IST_HD static inline int ist_max_wins(double v, double cur, int key_first) {
  return v > cur || (v == cur && key_first);
}

/* Offers (v, index) to the minimum (*min, *min_index) and the maximum. */
IST_HD static inline void ist_min_offer(double *min, uint64_t *min_index,
                                        double v, uint64_t index) {
  if (ist_min_wins(v, *min, index < *min_index)) {
    *min = v;
    *min_index = index;
  }
}

IST_HD static inline void ist_max_offer(double *max, uint64_t *max_index,
                                        double v, uint64_t index) {
  if (ist_max_wins(v, *max, index < *max_index)) {
    *max = v;
    *max_index = index;
  }
}

/* Chan, Golub and LeVeque's pairwise update of (count, mean, m2) by the
 * finite samples of another run (nb, mean_b, m2_b). */
IST_HD static inline void ist_chan_merge(uint64_t *count, double *mean,
                                         double *m2, uint64_t nb, double mean_b,
                                         double m2_b) {
  if (nb == 0)
    return;
  if (*count == 0) {
    *count = nb;
    *mean = mean_b;
    *m2 = m2_b;
    return;
  }
  double na = (double)*count, nbd = (double)nb;
  double n = IST_DADD(na, nbd);
  double delta = IST_DSUB(mean_b, *mean);
  double w = IST_DDIV(nbd, n); /* one division: the trees do many merges */
  *mean = IST_DADD(*mean, IST_DMUL(delta, w));
  double cross = IST_DMUL(IST_DMUL(delta, delta), IST_DMUL(na, w));
  *m2 = IST_DADD(*m2, IST_DADD(m2_b, cross));
  *count += nb;
}

/* Merges b into a (is_float: the partials are of f32 samples). */
IST_HD static inline void
ist_partial_merge(imgstat_partial *a, const imgstat_partial *b, int is_float) {
  ist_min_offer(&a->min, &a->min_index, b->min, b->min_index);
  ist_max_offer(&a->max, &a->max_index, b->max, b->max_index);
  a->nan_count += b->nan_count;
  a->inf_count += b->inf_count;
  if (b->count == 0)
    return;
  if (is_float) {
    ist_chan_merge(&a->count, &a->mean, &a->m2, b->count, b->mean, b->m2);
  } else {
    a->count += b->count;
    a->sum += b->sum;
    a->sumsq += b->sumsq;
  }
}

#ifndef __CUDACC__
/* ---- the deviation of pooled figures (host code, long double) ----------
 * The one home of the standard deviation's last steps over pooled counts:
 * the per-image integer figures (partial.c), the exact pools (pool.c) and
 * the dataset's pools of several depths (src/dataset/) round through these,
 * so a pool of one image gives that image's bits. */

/* sqrt(d / (N * (N - ddof))) for d = N * (sum of squared deviations), the
 * form the exact integer sums give (N * sumsq - sum^2). */
static inline long double ist_std_of_scaled_m2(long double d, uint64_t count,
                                               int ddof) {
  long double den = (long double)count * (long double)(count - (uint64_t)ddof);
  return sqrtl(d / den);
}

/* Pools merged once each one's count, mean and m2 are known: m2 about the
 * grand mean (the pools' sum over their count) gains each pool's m2 about
 * its own mean and its count times the squared distance between the two
 * means (the decomposition Chan's update applies pairwise). */
static inline void ist_pooled_m2_add(long double *m2, long double count_k,
                                     long double mean_k, long double m2_k,
                                     long double mean) {
  long double dm = mean_k - mean;
  *m2 += m2_k + count_k * dm * dm;
}

/* The deviation of a pooled m2 over count samples: sqrt(m2 / (N - ddof)). */
static inline long double ist_pooled_std(long double m2, uint64_t count,
                                         int ddof) {
  return sqrtl(m2 / (long double)(count - (uint64_t)ddof));
}
#endif

#endif /* IST_MERGE_H */
