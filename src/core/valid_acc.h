/*
 * The fused reduction of integer valid samples (8- and 16-bit; int16 as its
 * planes store it): the figures of many regions (an image under its mask,
 * each label of a label image) and channels in one pass over the image,
 * with no compaction. Compiles as C and as CUDA (every function
 * __host__ __device__): cuda/valid.cu's kernel uses it, and the host test
 * (tests/core/test_valid_acc.c) plays the kernel's orders with it.
 *
 * Every figure of an integer partial (imgstat_partial: count, exact sum and
 * sum of squares, min and max with their first raster positions) and every
 * histogram count is independent of the order the samples come in, so a
 * region's figures can be gathered by any number of threads in any order:
 *  - a thread takes its samples in increasing raster order into a run
 *    (ist_vrun): counts and sums add, and a strictly smaller (larger) value
 *    replaces the min (max), so the run keeps each extreme's first position;
 *  - runs are folded into the region's accumulator (ist_vacc) by additions
 *    and by keeping the largest key, a key being the bitwise complement of
 *    (value << 32 | position) for the min and of ((65535 - value) << 32 |
 *    position) for the max: the largest key is the smallest value (largest,
 *    for the max) at its smallest position, whatever the order of folding.
 *    All-zero is the empty accumulator (no key is 0: positions are below
 *    2^32 - 1);
 *  - ist_vacc_partial gives the partial the CPU computes from the region's
 *    samples compacted in raster order (imgstat_valid_compact, its scan,
 *    imgstat_valid_raster_pair): the values and sums are exact integers,
 *    mean and m2 unused (0), an empty region the empty partial.
 * Positions are raster indices below 2^32 (imgstat_gpu_valid_stats refuses
 * larger channels).
 */
#ifndef IST_VALID_ACC_H
#define IST_VALID_ACC_H

#include "merge.h"

#include <stdint.h>

/* One thread's samples of one region, in increasing raster order. */
typedef struct ist_vrun {
  uint64_t count, nodata, sum, sumsq;
  uint32_t lo, hi;       /* min and max (count > 0) */
  uint32_t lo_at, hi_at; /* their first raster indices */
} ist_vrun;

/* A region's figures, gathered from any number of runs in any order. */
typedef struct ist_vacc {
  uint64_t count, nodata, sum, sumsq;
  uint64_t min_key, max_key; /* 0: none */
} ist_vacc;

/* The accumulator's fields, in order, as 64-bit words (the device folds
 * them one word at a time). */
#define IST_VACC_WORDS 6

IST_HD static inline void ist_vrun_init(ist_vrun *r) {
  r->count = 0;
  r->nodata = 0;
  r->sum = 0;
  r->sumsq = 0;
  r->lo = 0;
  r->hi = 0;
  r->lo_at = 0;
  r->hi_at = 0;
}

/* The valid sample v at raster index at (after every earlier one of the
 * run). */
IST_HD static inline void ist_vrun_add(ist_vrun *r, uint32_t v, uint32_t at) {
  if (r->count == 0 || v < r->lo) {
    r->lo = v;
    r->lo_at = at;
  }
  if (r->count == 0 || v > r->hi) {
    r->hi = v;
    r->hi_at = at;
  }
  r->count++;
  r->sum += v;
  r->sumsq += (uint64_t)v * v;
}

IST_HD static inline uint64_t ist_vkey_min(uint32_t v, uint32_t at) {
  return ~(((uint64_t)v << 32) | at);
}

IST_HD static inline uint64_t ist_vkey_max(uint32_t v, uint32_t at) {
  return ~(((uint64_t)(0xFFFFu - v) << 32) | at);
}

/* The run's keys (count > 0). */
IST_HD static inline uint64_t ist_vrun_min_key(const ist_vrun *r) {
  return ist_vkey_min(r->lo, r->lo_at);
}
IST_HD static inline uint64_t ist_vrun_max_key(const ist_vrun *r) {
  return ist_vkey_max(r->hi, r->hi_at);
}

/* Folds a run into an accumulator (the host's fold; the device does the
 * same with atomic additions and maxima). */
IST_HD static inline void ist_vacc_fold(ist_vacc *a, const ist_vrun *r) {
  a->count += r->count;
  a->nodata += r->nodata;
  a->sum += r->sum;
  a->sumsq += r->sumsq;
  if (r->count) {
    uint64_t lo = ist_vrun_min_key(r), hi = ist_vrun_max_key(r);
    a->min_key = lo > a->min_key ? lo : a->min_key;
    a->max_key = hi > a->max_key ? hi : a->max_key;
  }
}

/* Folds accumulator b into a (the same rule). */
IST_HD static inline void ist_vacc_add(ist_vacc *a, const ist_vacc *b) {
  a->count += b->count;
  a->nodata += b->nodata;
  a->sum += b->sum;
  a->sumsq += b->sumsq;
  a->min_key = b->min_key > a->min_key ? b->min_key : a->min_key;
  a->max_key = b->max_key > a->max_key ? b->max_key : a->max_key;
}

/* The region's partial, as the CPU computes it. */
IST_HD static inline imgstat_partial ist_vacc_partial(const ist_vacc *a) {
  imgstat_partial p = ist_partial_empty();
  if (a->count == 0)
    return p;
  const uint64_t lo = ~a->min_key, hi = ~a->max_key;
  p.count = a->count;
  p.sum = a->sum;
  p.sumsq = a->sumsq;
  p.min = (double)(uint32_t)(lo >> 32);
  p.min_index = (uint32_t)lo;
  p.max = (double)(0xFFFFu - (uint32_t)(hi >> 32));
  p.max_index = (uint32_t)hi;
  return p;
}

/* ---- one thread of the fused pass -------------------------------------
 * A thread takes its pixels in increasing raster order: each into the run
 * of region 0 (the image under its mask) when inside, and into the run of
 * its label's region (cur: 1 + the label's place; 0: none). When the label
 * changes, the run of the label left is folded into its region's
 * accumulator first (ist_vthread_leaving names it), and a new run starts;
 * at the thread's end both runs are folded. A nodata sample is counted in
 * its regions' runs and enters no other figure (nor a histogram). */
typedef struct ist_vthread {
  ist_vrun whole, label;
  uint32_t cur;
} ist_vthread;

IST_HD static inline void ist_vthread_init(ist_vthread *th) {
  ist_vrun_init(&th->whole);
  ist_vrun_init(&th->label);
  th->cur = 0;
}

/* The region whose run must be folded before a pixel of region t is taken
 * (0: none). */
IST_HD static inline uint32_t ist_vthread_leaving(const ist_vthread *th,
                                                  uint32_t t) {
  return t != th->cur ? th->cur : 0u;
}

/* Pixel at (raster index) of value v: inside region 0 or not, nodata or
 * not, of label region t (0: none); after ist_vthread_leaving's fold. */
IST_HD static inline void ist_vthread_take(ist_vthread *th, uint32_t v,
                                           uint32_t at, int inside, int nd,
                                           uint32_t t) {
  if (inside) {
    if (nd)
      th->whole.nodata++;
    else
      ist_vrun_add(&th->whole, v, at);
  }
  if (t != th->cur) {
    ist_vrun_init(&th->label);
    th->cur = t;
  }
  if (t) {
    if (nd)
      th->label.nodata++;
    else
      ist_vrun_add(&th->label, v, at);
  }
}

#endif /* IST_VALID_ACC_H */
