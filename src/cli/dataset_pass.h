/*
 * The command line's side of the passes over the inputs
 * (imgstat_dataset.h): the float range pass of `imgstat --dataset
 * --histogram` (src/cli/dataset_pass.c). Part of the program: it prints its
 * errors.
 */
#ifndef IMGSTAT_CLI_DATASET_PASS_H
#define IMGSTAT_CLI_DATASET_PASS_H

#include "imgstat_dataset.h"
#include "imgstat_pipeline.h"
#include "progress.h"

/* Runs the float range pass over the inputs of an iterator (its items are
 * freed as they are done) and, when float images have finite samples, sets
 * ds->have_range, ds->lo and ds->hi to their common range; progress (NULL:
 * none) counts the inputs done and draws its line, the last one kept.
 * Returns -1 to go on, or the exit status of an error it printed (or of a
 * cancel). */
int ist_dataset_range_pass(imgstat_inputs *inputs,
                           const imgstat_load_options *load, int workers,
                           uint64_t budget, imgstat_dataset_options *ds,
                           ist_progress *progress);

/* The same over a pass already set up (its next, ctx and options). */
int ist_dataset_range_run(const imgstat_dataset_pass *p,
                          imgstat_dataset_options *ds);

#endif
