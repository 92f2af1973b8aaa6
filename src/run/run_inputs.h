/*
 * The runs' shared set-up (src/run/run.c), internal: the inputs made
 * from the sources, and whether they may be several. Used by the run
 * (imgstat/run.h) for statistics and for normalize (normalize.c).
 */
#ifndef IMGSTAT_RUN_INPUTS_H
#define IMGSTAT_RUN_INPUTS_H

#include "imgstat/batch.h"
#include "imgstat/run.h"

/* The inputs of the sources in order (lists of NUL-terminated paths with
 * null_lists; links to folders walked with follow; archives' members read
 * into at most max_member bytes, 0: the default), a folder left out of
 * the walks when exclude_dir is not NULL. *out is NULL on failure. */
imgstat_status ist_run_inputs_make(const imgstat_run_source *sources,
                                   int nsources, int null_lists, int follow,
                                   uint64_t max_member, const char *exclude_dir,
                                   imgstat_inputs **out, imgstat_error *err);

/* --sample: *view gets the items of list that imgstat_input_list_sample(list,
 * n, seed) takes, in order (its own array, list's items: free only
 * view->items); *of: the inputs it drew from. */
imgstat_status ist_run_sample(const imgstat_input_list *list, uint64_t n,
                              uint64_t seed, imgstat_input_list *view,
                              uint64_t *of, imgstat_error *err);

/* Writes the sample into a dataset record (n 0: none). */
void ist_run_sample_note(imgstat_dataset_result *r, uint64_t n, uint64_t seed,
                         uint64_t of);

/* Whether the run may have several inputs: more than one source, a list,
 * a directory or an archive. */
int ist_run_several(const imgstat_run_source *sources, int nsources);

/* One pass of the batch runner (imgstat/batch.h) over ctx's inputs:
 * workers, budget, result_size, cancel and the callbacks as
 * imgstat_batch_config takes them (the default window, no drained
 * callback). *cancelled (when not NULL): whether cancel stopped it. The
 * batch set-up of the dataset's passes (dataset_pass.c) and of normalize's
 * (normalize.c). */
static inline imgstat_status
ist_run_batch(int workers, uint64_t budget, size_t result_size,
              const volatile sig_atomic_t *cancel, void *ctx,
              imgstat_status (*next)(void *, void **, imgstat_error *),
              void (*work)(void *, imgstat_task *, void *, void *),
              int (*deliver)(void *, uint64_t, void *, void *, int),
              int *cancelled, imgstat_error *err) {
  imgstat_batch_config cfg = {.workers = workers,
                              .budget = budget,
                              .result_size = result_size,
                              .cancel = cancel,
                              .ctx = ctx,
                              .next = next,
                              .work = work,
                              .deliver = deliver};
  imgstat_batch_report rep = {0};
  imgstat_status s = imgstat_batch_run(&cfg, &rep, err);
  if (cancelled)
    *cancelled = rep.cancelled;
  return s;
}

#endif
