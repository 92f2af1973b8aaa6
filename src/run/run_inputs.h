/*
 * The runs' shared set-up (src/run/run.c), internal: the inputs made
 * from the sources, and whether they may be several. Used by the run
 * (imgstat/run.h) for statistics and for normalize (normalize.c).
 */
#ifndef IMGSTAT_RUN_INPUTS_H
#define IMGSTAT_RUN_INPUTS_H

#include "imgstat/run.h"

/* The inputs of the sources in order (lists of NUL-terminated paths with
 * null_lists; links to folders walked with follow), a folder left out of
 * the walks when exclude_dir is not NULL. *out is NULL on failure. */
imgstat_status ist_run_inputs_make(const imgstat_run_source *sources,
                                   int nsources, int null_lists, int follow,
                                   const char *exclude_dir,
                                   imgstat_inputs **out, imgstat_error *err);

/* Whether the run may have several inputs: more than one source, a list,
 * or a directory. */
int ist_run_several(const imgstat_run_source *sources, int nsources);

#endif
