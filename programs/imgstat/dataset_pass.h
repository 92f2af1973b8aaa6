/*
 * The command line's side of the passes over the inputs
 * (imgstat_dataset.h): the float range pass of `imgstat --dataset
 * --histogram` (programs/imgstat/dataset_pass.c). Part of the program: it
 * prints its errors.
 */
#ifndef IMGSTAT_CLI_DATASET_PASS_H
#define IMGSTAT_CLI_DATASET_PASS_H

#include "imgstat/batch.h"
#include "imgstat/dataset.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "imgstat/run.h"

/* Runs the float range pass set up in p (its next, ctx and options) and,
 * when float images have finite samples, sets ds->have_range, ds->lo and
 * ds->hi to their common range. Returns -1 to go on, or the exit status of
 * an error it printed (or of a cancel). */
int ist_dataset_range_run(const imgstat_dataset_pass *p,
                          imgstat_dataset_options *ds);

#endif
