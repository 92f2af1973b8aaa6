/*
 * The clip measure (internal to the library): the one home of what clip
 * measures of a histogram, for one image's histograms (normalize.c) and a
 * dataset's pooled ones (src/dataset/dataset_pass.c). The GPU backend
 * computes the same two percentiles on the device (cuda/normalize.cu).
 */
#ifndef IMGSTAT_NORM_CLIP_H
#define IMGSTAT_NORM_CLIP_H

#include "imgstat/imgstat.h"
#include "imgstat/norm.h"

/* The range clip maps to the full scale: h's o->clip_low and o->clip_high
 * percentiles (imgstat_histogram_percentile) into *lo and *hi. Returns
 * whether h has values (0: nothing measured). */
int ist_norm_clip_range(const imgstat_histogram *h,
                        const imgstat_norm_options *o, double *lo, double *hi);

#endif
