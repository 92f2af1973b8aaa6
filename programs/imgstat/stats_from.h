/*
 * `imgstat normalize --stats-from FILE`: the means and standard deviations
 * of a record of `imgstat --json` (programs/imgstat/stats_from.c). Part of the
 * program: it prints its errors.
 */
#ifndef IMGSTAT_STATS_FROM_H
#define IMGSTAT_STATS_FROM_H

#include "imgstat/norm.h"

/* Reads the file at path, records of `imgstat --json` (JSON Lines): the
 * last dataset record (`--dataset`; with --scale unit its 0..1 figures are
 * taken back to the units of its one depth, refused for mixed depths), else
 * its one image record (several without a dataset record are an error that
 * says so), into o->mean, o->std and o->nstats (one per channel, in
 * order). Returns
 * 0, or the exit status of the error it printed ("imgstat: PATH: reason";
 * 2 for a file that cannot be read or is not such a record, 1 when out of
 * memory). */
int ist_stats_from_read(const char *path, imgstat_norm_options *o);

#endif /* IMGSTAT_STATS_FROM_H */
