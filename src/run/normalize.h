/*
 * The normalize run (src/run/normalize.c), internal: what imgstat_run does
 * when its options ask to normalize (imgstat_run_options.normalize). The
 * run (run.c) makes it, runs it and asks it for its list, pool and plan.
 */
#ifndef IMGSTAT_RUN_NORMALIZE_H
#define IMGSTAT_RUN_NORMALIZE_H

#include "imgstat/run.h"

typedef struct ist_norm_run ist_norm_run;

/* Checks the options, walks the inputs whole and checks the output plan
 * (imgstat_run_create's words); fills the run's info, which must outlive
 * the normalize run. *out is NULL on failure. */
imgstat_status ist_norm_run_create(const imgstat_run_options *opts,
                                   imgstat_run_info *info, ist_norm_run **out,
                                   imgstat_error *err);

void ist_norm_run_destroy(ist_norm_run *run);

/* Runs once (imgstat_run_execute's words); cb is not NULL and report is
 * zeroed. */
imgstat_status ist_norm_run_execute(ist_norm_run *run,
                                    const imgstat_run_callbacks *cb,
                                    imgstat_run_report *report,
                                    imgstat_error *err);

const imgstat_input_list *ist_norm_run_list(const ist_norm_run *run);
const imgstat_dataset_result *ist_norm_run_pooled(const ist_norm_run *run);
const imgstat_norm_options *ist_norm_run_norm(const ist_norm_run *run);
/* The engine, once execute has made it; else NULL. */
imgstat_engine *ist_norm_run_engine(const ist_norm_run *run);

#endif
