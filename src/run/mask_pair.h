/*
 * The mask or label image of each input, for the run (internal to the
 * library): the index of --mask or --labels made from the run's options.
 * The pairing itself and the loading are the engine's (src/engine/masks.h,
 * the one home of masks and label images).
 */
#ifndef IMGSTAT_MASK_PAIR_H
#define IMGSTAT_MASK_PAIR_H

#include "imgstat/run.h"
#include "masks.h"

/* The index of what ("mask", "labels") at where (o's mask or labels: a
 * file, or a folder paired by stem, with o's mask_suffix) into *out; *out
 * is NULL when where is NULL. Nothing is read yet. */
imgstat_status ist_pairs_create(const imgstat_run_options *o, const char *where,
                                const char *what, ist_pairs **out,
                                imgstat_error *err);

#endif
