/*
 * The range a channel's histogram is built over, one rule for both backends
 * (imgstat_histogram_compute on the CPU, the GPU's histograms): the bins the
 * options ask for (0: the default), and for f32 the options' [lo, hi] when
 * they have one, else the channel's finite range, which each backend measures
 * its own way; u8 and u16 have no range (every value has its bin).
 */
#ifndef IMGSTAT_HIST_RANGE_H
#define IMGSTAT_HIST_RANGE_H

#include "imgstat/hist.h"

/* Sets *bins and *lo, *hi from opts (which may be NULL); returns 1 when the
 * caller must still measure the channel's finite range into *lo, *hi (left
 * 0, 0: what a channel with no finite sample keeps). */
static inline int ist_hist_range(const imgstat_hist_options *opts,
                                 imgstat_sample sample, uint32_t *bins,
                                 double *lo, double *hi) {
  *bins = opts ? opts->float_bins : 0;
  *lo = 0;
  *hi = 0;
  if (sample != IMGSTAT_F32)
    return 0;
  if (opts && opts->have_range) {
    *lo = opts->lo;
    *hi = opts->hi;
    return 0;
  }
  return 1;
}

/* Adds b's counts, total, NaN and Inf counts into a (same bins and range:
 * the caller knows), reading b's occupied bins alone; a's hint on its
 * occupied bins covers b's after, or is none (imgstat_histogram_add, the
 * dataset's pooled histograms). */
void ist_histogram_add_counts(imgstat_histogram *a, const imgstat_histogram *b);

#endif /* IMGSTAT_HIST_RANGE_H */
