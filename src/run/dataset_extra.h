/*
 * What the dataset accumulator takes of an image beside the engine's result
 * (internal to the library): with --as gray, the luma's partial (and
 * histogram), since a luma's sum of squares does not follow from the colour
 * channels' partials; float images' histograms over the options' common
 * range. The one home of that rule, for the run (run.c) and the pool pass
 * (dataset_pass.c).
 */
#ifndef IMGSTAT_DATASET_EXTRA_H
#define IMGSTAT_DATASET_EXTRA_H

#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"

typedef struct ist_dataset_extra {
  int gray;                   /* partial[0] is the luma's */
  int masked;                 /* of the luma under the image's mask */
  imgstat_partial partial[1]; /* the luma's */
  int hists; /* hist[] made here (the luma's; float over the range) */
  int nhist; /* hist's entries: the image's channels */
  imgstat_histogram *hist;
} ist_dataset_extra;

/* Fills out (zeroed by the caller) for img under the options o; on failure
 * out keeps what was made (free it either way with
 * ist_dataset_extra_free) and err says why. With a mask (req->mask_path,
 * req not NULL), the luma is taken under it: the gray conversion, then
 * the mask (by the engine e, as the statistics take masks). */
imgstat_status ist_dataset_extra_compute(const imgstat_dataset_options *o,
                                         const imgstat_image *img,
                                         struct imgstat_engine *e,
                                         const imgstat_stats_request *req,
                                         ist_dataset_extra *out,
                                         imgstat_error *err);

void ist_dataset_extra_free(ist_dataset_extra *x);

/* Adds an image whose statistics res holds (status IMGSTAT_OK) to d at its
 * ordinal index, with x beside it: the luma's partial under --as gray, and
 * as its histograms x's (the luma's, float ones over the common range), else
 * res's own when they are of integer samples (a float image's histograms
 * from the engine have a range of their own: not pooled). The one home of
 * that rule, for the run and the pool pass. Fails when the luma is missing
 * (it could not be made: out of memory) or the accumulator refuses the
 * image; the caller marks the input failed. */
imgstat_status ist_dataset_extra_add(imgstat_dataset *d, uint64_t index,
                                     const char *name,
                                     const imgstat_job_result *res,
                                     const ist_dataset_extra *x,
                                     imgstat_error *err);

#endif
