/* The float range pass on the command line (dataset_pass.h). */
#include "dataset_pass.h"
#include "progress.h"

#include "cli_util.h"

#include <string.h>

int ist_dataset_range_run(const imgstat_dataset_pass *p,
                          imgstat_dataset_options *ds) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int found = 0, cancelled = 0;
  double lo, hi;
  if (imgstat_dataset_float_range(p, &found, &lo, &hi, &cancelled, &err) !=
      IMGSTAT_OK) {
    ist_cli_error("--dataset: %s",
                  err.message[0] ? err.message : "out of memory");
    return 1;
  }
  if (cancelled && ist_cli_cancel_status() >= 0)
    return ist_cli_cancel_status();
  if (found) {
    ds->have_range = 1;
    ds->lo = lo;
    ds->hi = hi;
  }
  return -1;
}

typedef struct range_inputs {
  imgstat_inputs *inputs;
  ist_progress *progress; /* NULL: none */
} range_inputs;

static imgstat_status next_item(void *ctx, const imgstat_input **item,
                                imgstat_error *err) {
  range_inputs *r = ctx;
  imgstat_input *in = NULL;
  imgstat_status s = imgstat_inputs_next(r->inputs, &in, err);
  *item = in;
  return s;
}

static void release_item(void *ctx, const imgstat_input *item) {
  range_inputs *r = ctx;
  if (r->progress) {
    r->progress->done++;
    if (item->size_known)
      r->progress->bytes_in += item->size;
    uint64_t total = 0;
    int known = imgstat_inputs_total(r->inputs, &total);
    ist_progress_draw(r->progress, total, known, 0);
  }
  imgstat_input_free((imgstat_input *)item);
}

int ist_dataset_range_pass(imgstat_inputs *inputs,
                           const imgstat_load_options *load, int workers,
                           uint64_t budget, imgstat_dataset_options *ds,
                           ist_progress *progress) {
  range_inputs r = {inputs, progress};
  imgstat_dataset_pass p;
  memset(&p, 0, sizeof p);
  p.ctx = &r;
  p.next = next_item;
  p.release = release_item;
  p.load = load;
  p.workers = workers;
  p.budget = budget;
  p.cancel = ist_cli_cancel_on_signals();
  int status = ist_dataset_range_run(&p, ds);
  if (progress) { /* the pass's total stays on screen */
    uint64_t total = 0;
    int known = imgstat_inputs_total(inputs, &total);
    ist_progress_draw(progress, total, known, 1);
  }
  return status;
}
