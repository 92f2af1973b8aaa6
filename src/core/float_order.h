/*
 * The canonical order of the float32 statistics of a plane
 * (docs/float-order.md): every backend (the CPU scan, the GPU's kernels, the
 * batched kernels) computes count / mean / M2 of a float plane exactly as
 * written here, so the results have the same bits everywhere. Compiles as C
 * and as CUDA (every function is __host__ __device__); the operations are
 * rounded one by one (IST_DADD ... in merge.h), never contracted.
 *
 *  0. The plane's shift K (ist_fo_plane_shift): the lower median of the
 *     finite samples among 16 probes spread over the plane (probe j is its
 *     raster sample j * (n / 16); a plane of fewer than 16 samples probes
 *     them all), 0 when none is finite. Every sum and mean below is
 *     relative to K until step 5: the lanes' sums of squares stay at the
 *     scale of the plane's spread, not of its offset (10^6 + noise keeps its
 *     M2), and one outlier cannot become the reference (the plane's first
 *     sample could).
 *  1. Chunks: the plane (raster order, samples 0 .. n-1) is cut into chunks
 *     of IST_FO_CHUNK samples; chunk k holds samples k * IST_FO_CHUNK ...
 *  2. Lanes: sample i of a chunk (0 <= i < IST_FO_CHUNK) goes to lane
 *     ist_fo_lane(i) = (i / 4) mod 256, i.e. lane l holds the 4-sample groups
 *     l, l + 256, l + 512, ... (one 16-byte vector of thread l of a 256-thread
 *     block per step). A lane takes its groups in increasing order
 *     (ist_fo_group_add): s1 adds each finite sample's d = x - K in order;
 *     the group's sum of squares g = (q0 + q1) + (q2 + q3), q = d * d for a
 *     finite sample, +0 for another (or one outside the scan), goes into s2
 *     with Kahan's compensation e; a group with no finite sample changes
 *     nothing. ist_fo_lane_finish turns the sums into (count, mean - K, M2),
 *     M2 = (s2 - e) - s1 * (s1 / count). NaN and +-Inf are only counted
 *     (integers: any order). Why compensated: squares of float32 samples
 *     have fixed low bits (an odd integer squared is 1 mod 8), so a plain
 *     running sum of a few hundred of them rounds the same way again and
 *     again: a bias of a few 1e-15, where the compensated sum errs by one
 *     rounding.
 *  3. The 256 lane results are merged by the fixed tree ist_fo_tree (a
 *     perfect binary tree, neighbours first: level s merges slot i + s into
 *     slot i for i a multiple of 2s), with Chan's merge (merge.h).
 *  4. The chunk results of the plane are merged by the same tree over the
 *     chunk indices (padded with empty partials to a power of two: merging an
 *     empty partial changes no bit). Subtrees are aligned blocks of 2^k
 *     chunks, so a device can fold them level by level in parallel, and a
 *     plane cut into aligned ranges of 2^k chunks merges its range results
 *     by the same tree (ist_fo_stack does that on the fly).
 *  5. The plane's mean is K + the root's (ist_fo_add_shift); M2 as it is.
 *
 * min / max / positions and the NaN / Inf counts do not depend on the order
 * (merge.h), so they are free to be computed in any partition.
 */
#ifndef IST_FLOAT_ORDER_H
#define IST_FLOAT_ORDER_H

#include <stdint.h>

#include "merge.h"

#define IST_FO_CHUNK 65536u /* samples per chunk */
#define IST_FO_LANES 256u   /* lanes per chunk */
#define IST_FO_GROUP 4u     /* consecutive samples a lane takes at a time */
#define IST_FO_ROW (IST_FO_LANES * IST_FO_GROUP) /* one group of every lane */

/* The lane of sample i of a chunk. */
IST_HD static inline uint32_t ist_fo_lane(uint32_t i) {
  return (i / IST_FO_GROUP) % IST_FO_LANES;
}

/* A lane's running sums. Start: all zero but the shift, the plane's. */
typedef struct ist_fo_acc {
  uint32_t count; /* finite samples so far */
  double shift;   /* the plane's shift K (ist_fo_plane_shift) */
  double s1;      /* sum of (x - c) */
  double s2;      /* sum of (x - c)^2, less e */
  double e;       /* Kahan's compensation of s2 */
} ist_fo_acc;

/* The count, mean and M2 of a run of finite samples (count 0: empty). */
typedef struct ist_fo_moments {
  uint64_t count;
  double mean;
  double m2;
} ist_fo_moments;

/* Whether a float is finite, on its bits (NaN and +-Inf are not). */
IST_HD static inline int ist_fo_finite(float x) {
  union {
    float f;
    uint32_t u;
  } b;
  b.f = x;
  return (b.u & 0x7fffffffu) < 0x7f800000u;
}

/* The sums of one group: d[j] = x - K of the finite samples (+0 for the
 * others), in order. s1 and s2 start at +0 and never become -0
 * (+0 + -0 = +0), so adding d = +0 for a skipped sample gives the same bits
 * as skipping it: the vector code does that. */
IST_HD static inline void ist_fo_group_sums(ist_fo_acc *a, const double d[4],
                                            uint32_t finite) {
  a->s1 = IST_DADD(a->s1, d[0]);
  a->s1 = IST_DADD(a->s1, d[1]);
  a->s1 = IST_DADD(a->s1, d[2]);
  a->s1 = IST_DADD(a->s1, d[3]);
  double g = IST_DADD(IST_DADD(IST_DMUL(d[0], d[0]), IST_DMUL(d[1], d[1])),
                      IST_DADD(IST_DMUL(d[2], d[2]), IST_DMUL(d[3], d[3])));
  double y = IST_DSUB(g, a->e);
  double t = IST_DADD(a->s2, y);
  a->e = IST_DSUB(IST_DSUB(t, a->s2), y);
  a->s2 = t;
  a->count += finite;
}

/* Adds a group of lane a (its shift set): x[j] for the bits j of `present`
 * (the samples of the group inside the scan), the finite ones. */
IST_HD static inline void ist_fo_group_add(ist_fo_acc *a, const float x[4],
                                           uint32_t present) {
  double d[4];
  uint32_t finite = 0;
  for (int j = 0; j < 4; j++) {
    d[j] = 0.0;
    if (((present >> j) & 1u) && ist_fo_finite(x[j])) {
      d[j] = IST_DSUB((double)x[j], a->shift); /* the widening is exact */
      finite++;
    }
  }
  if (finite > 0)
    ist_fo_group_sums(a, d, finite);
}

#define IST_FO_PROBES 16u /* samples the plane's shift is chosen from */

/* The probes of a plane of n samples: how many, and the distance between
 * two (probe j is raster sample j * step). */
IST_HD static inline uint32_t ist_fo_probe_count(uint64_t n) {
  return n < IST_FO_PROBES ? (uint32_t)n : IST_FO_PROBES;
}
IST_HD static inline uint64_t ist_fo_probe_step(uint64_t n) {
  return n < IST_FO_PROBES ? 1u : n / IST_FO_PROBES;
}

/* The rank of probe j, of value v = p[j] (finite), among the finite probes
 * p[0..np): how many come before it in the order (value, then probe
 * index); -0 and +0 are equal values. */
IST_HD static inline uint32_t ist_fo_probe_rank(const float *p, uint32_t np,
                                                float v, uint32_t j) {
  uint32_t r = 0;
  for (uint32_t k = 0; k < IST_FO_PROBES; k++) /* a fixed count: unrolled */
    if (k < np && ist_fo_finite(p[k]) && (p[k] < v || (p[k] == v && k < j)))
      r++;
  return r;
}

/* The rank K has among `finite` finite probes: the lower median. */
IST_HD static inline uint32_t ist_fo_median_rank(uint32_t finite) {
  return (finite - 1) / 2;
}

/* Step 0 from the probes p[0..np): the lower median of the finite ones,
 * widened exactly; 0 when none is finite. */
IST_HD static inline double ist_fo_shift_of_probes(const float *p,
                                                   uint32_t np) {
  uint32_t finite = 0;
  for (uint32_t k = 0; k < IST_FO_PROBES; k++)
    finite += (uint32_t)(k < np && ist_fo_finite(p[k]));
  if (finite == 0)
    return 0.0;
  for (uint32_t j = 0; j < np; j++)
    if (ist_fo_finite(p[j]) &&
        ist_fo_probe_rank(p, np, p[j], j) == ist_fo_median_rank(finite))
      return (double)p[j];
  return 0.0; /* not reached: exactly one finite probe has each rank */
}

/* Step 0: the plane's shift K; row_stride in bytes (a dense plane: any
 * width with row_stride = width * 4). */
IST_HD static inline double ist_fo_plane_shift(const float *plane,
                                               uint64_t width,
                                               uint64_t row_stride,
                                               uint64_t n) {
  float p[IST_FO_PROBES];
  const uint32_t np = ist_fo_probe_count(n);
  const uint64_t step = ist_fo_probe_step(n);
  for (uint32_t j = 0; j < np; j++) {
    uint64_t i = j * step;
    const float *row =
        (const float *)(const void *)((const unsigned char *)plane +
                                      (i / width) * row_stride);
    p[j] = row[i % width];
  }
  return ist_fo_shift_of_probes(p, np);
}

/* A lane's (count, mean - K, M2), its shift being K: mean - K = s1 / n,
 * M2 = (s2 - e) - s1 * (s1 / n) (never below 0). */
IST_HD static inline ist_fo_moments ist_fo_lane_finish(const ist_fo_acc *a) {
  ist_fo_moments m;
  m.count = a->count;
  m.mean = 0.0;
  m.m2 = 0.0;
  if (a->count == 0)
    return m;
  double dm = IST_DDIV(a->s1, (double)a->count);
  m.mean = dm;
  double m2 = IST_DSUB(IST_DSUB(a->s2, a->e), IST_DMUL(a->s1, dm));
  m.m2 = m2 > 0.0 ? m2 : 0.0;
  return m;
}

/* Merges b into a (Chan's update, merge.h). */
IST_HD static inline void ist_fo_merge(ist_fo_moments *a,
                                       const ist_fo_moments *b) {
  ist_chan_merge(&a->count, &a->mean, &a->m2, b->count, b->mean, b->m2);
}

/* The tree of steps 3 and 4 over v[0..n), in place; the root ends in v[0]. */
IST_HD static inline void ist_fo_tree(ist_fo_moments *v, uint32_t n) {
  for (uint32_t s = 1; s < n; s *= 2)
    for (uint32_t i = 0; i + s < n; i += 2 * s)
      ist_fo_merge(&v[i], &v[i + s]);
}

/* The same tree over float partials (the extremes merge too). */
IST_HD static inline void ist_fo_tree_partials(imgstat_partial *v, uint64_t n) {
  for (uint64_t s = 1; s < n; s *= 2)
    for (uint64_t i = 0; i + s < n; i += 2 * s)
      ist_partial_merge(&v[i], &v[i + s], 1);
}

/* The tree of step 4 built on the fly, for partials that arrive in chunk
 * order (or in aligned ranges of 2^k chunks, each pushed as one leaf of
 * 2^k): level[k] holds the root of a complete subtree of 2^k leaves. */
typedef struct ist_fo_stack {
  imgstat_partial level[64];
  uint64_t leaves;
} ist_fo_stack;

IST_HD static inline void ist_fo_stack_init(ist_fo_stack *s) { s->leaves = 0; }

/* Adds the next leaf. */
IST_HD static inline void ist_fo_stack_push(ist_fo_stack *s,
                                            const imgstat_partial *p) {
  imgstat_partial cur = *p;
  int k = 0;
  while ((s->leaves >> k) & 1) {
    imgstat_partial left = s->level[k];
    ist_partial_merge(&left, &cur, 1);
    cur = left;
    k++;
  }
  s->level[k] = cur;
  s->leaves++;
}

/* The root of the tree over the leaves pushed (the padded tree: each
 * complete subtree is the left neighbour of everything pushed after it). */
IST_HD static inline imgstat_partial ist_fo_stack_root(const ist_fo_stack *s) {
  imgstat_partial root = ist_partial_empty();
  for (int k = 0; k < 64; k++) {
    if ((s->leaves >> k) & 1) {
      imgstat_partial left = s->level[k];
      ist_partial_merge(&left, &root, 1);
      root = left;
    }
  }
  return root;
}

/* Step 5: the root's mean (relative to K) made absolute. */
IST_HD static inline void ist_fo_add_shift(imgstat_partial *p, double k) {
  if (p->count > 0)
    p->mean = IST_DADD(k, p->mean);
}

#endif /* IST_FLOAT_ORDER_H */
