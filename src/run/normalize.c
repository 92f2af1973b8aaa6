/*
 * The normalize run (imgstat_normrun.h): the whole input list, the output
 * plan (outputs.c) checked on it, the engine's decision, the dataset's
 * pooling pass and plan, then the batch: each worker decodes an input
 * within the budget, converts it (--as), normalizes it through the engine
 * and writes it atomically; the results are delivered in input order.
 */
#include "imgstat/normrun.h"

#include "run_inputs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct imgstat_normrun {
  imgstat_normrun_options opt;
  imgstat_normrun_info info;
  imgstat_output_plan plan;
  imgstat_input_list list; /* the whole list, walked once */
  size_t next;
  int workers; /* the batch's: 0 one per core */
  imgstat_engine *engine;
  const imgstat_normrun_callbacks *cb;
  imgstat_normrun_progress progress;
  /* the options every input is normalized with: the caller's, and with
   * dataset the pooled figures (norm.measured) */
  imgstat_norm_options norm;
  imgstat_norm_measure measure;
  imgstat_dataset_result pooled;
  int have_pooled;
  size_t next_pooled; /* the pooling passes' place in list */
  int executed;
};

/* Whether the options make float32 output (zscore, given mean and std). */
static int float_mode(const imgstat_norm_options *n) {
  return n->mode == IMGSTAT_NORM_ZSCORE || n->mode == IMGSTAT_NORM_GIVEN;
}

/* The output format when the options fix it (AUTO: by the output's sample
 * type). */
static imgstat_file_format fixed_format(const imgstat_normrun_options *o,
                                        int folder) {
  if (o->format)
    return o->format;
  if (!folder)
    return imgstat_file_format_from_path(o->out);
  if (float_mode(&o->norm) || o->norm.out_sample == IMGSTAT_F32)
    return IMGSTAT_FILE_NPY;
  if (o->norm.out_sample)
    return IMGSTAT_FILE_PNG;
  return IMGSTAT_FILE_AUTO;
}

/* The options that do not go together (the command line says so in its own
 * words while parsing). */
static imgstat_status check_options(const imgstat_normrun_options *o,
                                    imgstat_error *err) {
  const imgstat_norm_options *n = &o->norm;
  if (o->dataset &&
      (n->mode == IMGSTAT_NORM_GIVEN || n->mode == IMGSTAT_NORM_RANGE))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "a dataset's plan pools the figures of minmax, "
                             "clip or zscore: not of given figures or a range");
  if (n->linked && n->mode != IMGSTAT_NORM_MINMAX &&
      n->mode != IMGSTAT_NORM_CLIP)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "linked applies to minmax and clip");
  if (float_mode(n) && n->out_sample && n->out_sample != IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "zscore and given mean and std write float32");
  if (float_mode(n) && (o->format == IMGSTAT_FILE_PNG ||
                        (!o->format && imgstat_file_format_from_path(o->out) ==
                                           IMGSTAT_FILE_PNG)))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "zscore and given mean and std write float32, "
                             "which PNG cannot hold: write .npy or .pfm");
  return IMGSTAT_OK;
}

void imgstat_normrun_error_clear(imgstat_normrun_error *e) {
  imgstat_output_problem_clear(&e->problem);
  memset(e, 0, sizeof *e);
}

static imgstat_status fail(imgstat_normrun_error *e, imgstat_normrun_cause c,
                           imgstat_status s) {
  e->cause = c;
  e->err.status = s;
  if (!e->err.message[0])
    snprintf(e->err.message, sizeof e->err.message, "out of memory");
  return s;
}

imgstat_status imgstat_normrun_create(const imgstat_normrun_options *opts,
                                      imgstat_normrun **out,
                                      imgstat_normrun_error *e) {
  memset(e, 0, sizeof *e);
  *out = NULL;
  if (!opts || opts->nsources <= 0 || !opts->sources || !opts->out ||
      !*opts->out) {
    imgstat_error_set(&e->err, IMGSTAT_ERR_ARG, "no inputs, or no output");
    return fail(e, IMGSTAT_NORMRUN_INPUTS, IMGSTAT_ERR_ARG);
  }
  if (check_options(opts, &e->err) != IMGSTAT_OK)
    return fail(e, IMGSTAT_NORMRUN_OPTIONS, IMGSTAT_ERR_ARG);
  imgstat_normrun *run = calloc(1, sizeof *run);
  if (!run) /* fail() words it */
    return fail(e, IMGSTAT_NORMRUN_NOMEM, IMGSTAT_ERR_NOMEM);
  run->opt = *opts;
  const imgstat_normrun_options *o = &run->opt;
  int folder = imgstat_output_plan_folder(
      o->out, ist_run_several(o->sources, o->nsources), o->format);
  run->plan.out = o->out;
  run->plan.folder = folder;
  run->plan.format = fixed_format(o, folder);
  run->info.folder = folder;
  /* an output folder inside an input folder holds no inputs (earlier
   * runs' outputs) */
  imgstat_inputs *inputs = NULL;
  imgstat_status s =
      ist_run_inputs_make(o->sources, o->nsources, o->null_lists, o->follow,
                          folder ? o->out : NULL, &inputs, &e->err);
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_collect(inputs, &run->list, &e->err);
  imgstat_inputs_destroy(inputs);
  /* the pooling pass and the writing pass each read every input: refused
   * before either reads anything */
  const imgstat_input *once = s == IMGSTAT_OK && o->dataset
                                  ? imgstat_input_list_read_once(&run->list)
                                  : NULL;
  if (once)
    s = imgstat_error_set(&e->err, IMGSTAT_ERR_ARG,
                          "%s can be read only once (a pipe, FIFO or "
                          "device), and --dataset reads every input twice: "
                          "save it to a file first",
                          once->kind == IMGSTAT_INPUT_STDIN ? "standard input"
                                                            : once->path);
  if (s != IMGSTAT_OK) {
    imgstat_normrun_destroy(run);
    return fail(e, IMGSTAT_NORMRUN_INPUTS, s);
  }
  s = imgstat_output_plan_check(&run->plan, &run->list, &e->problem, &e->err);
  if (s != IMGSTAT_OK) {
    imgstat_normrun_destroy(run);
    return fail(e, IMGSTAT_NORMRUN_OUTPUTS, s);
  }
  run->info.inputs = run->list.count;
  /* Workers: jobs (0: one per core). One input alone (no jobs) runs in the
   * caller's thread with the CPU backend's threads on every core; with
   * several workers, each normalizes on one thread. */
  run->workers = o->jobs >= 0 ? o->jobs : run->list.count > 1 ? 0 : 1;
  run->opt.engine.threads = run->workers == 1 && o->jobs < 0 ? 0 : 1;
  run->info.cores = imgstat_cpu_cores();
  run->info.workers = run->workers ? run->workers : run->info.cores;
  run->info.float_range = o->dataset && o->norm.mode == IMGSTAT_NORM_CLIP;
  *out = run;
  return IMGSTAT_OK;
}

void imgstat_normrun_destroy(imgstat_normrun *run) {
  if (!run)
    return;
  imgstat_engine_destroy(run->engine);
  for (size_t k = run->next; k < run->list.count; k++)
    imgstat_input_free(run->list.items[k]);
  free(run->list.items);
  imgstat_dataset_result_free(&run->pooled);
  free(run);
}

const imgstat_normrun_info *imgstat_normrun_get_info(const imgstat_normrun *r) {
  return &r->info;
}

const imgstat_input_list *imgstat_normrun_input_list(const imgstat_normrun *r) {
  return &r->list;
}

const imgstat_dataset_result *
imgstat_normrun_dataset(const imgstat_normrun *run) {
  return run->have_pooled ? &run->pooled : NULL;
}

const imgstat_norm_options *imgstat_normrun_norm(const imgstat_normrun *run) {
  return &run->norm;
}

/* ---- the batch: inputs fed in order, worked on by any worker, delivered in
 * order */

/* What a worker hands back for one input. */
typedef struct item_result {
  imgstat_job_result res; /* status, warnings (the output already written
                             and freed) */
  int skipped;            /* skip_existing: the output is there */
  int cancelled;          /* the run was cancelled before or during it */
  char *out_path;         /* the output written, or that failed */
  imgstat_error write_err;
} item_result;

static imgstat_status next_input(void *ctx, void **item, imgstat_error *err) {
  imgstat_normrun *run = ctx;
  (void)err;
  *item = run->next < run->list.count ? run->list.items[run->next] : NULL;
  if (*item)
    run->list.items[run->next++] = NULL; /* delivered items are freed there */
  return IMGSTAT_OK;
}

/* A result that says the input failed at stage with the reason in err. */
static void result_failed(imgstat_job_result *res, imgstat_job_stage stage,
                          const imgstat_error *err) {
  memset(res, 0, sizeof *res);
  res->status = err->status ? err->status : IMGSTAT_ERR_IO;
  res->failed_stage = stage;
  res->error = *err;
  res->error.status = res->status;
  if (!res->error.message[0])
    snprintf(res->error.message, sizeof res->error.message, "unknown error");
}

/* Writes a normalized image to its output (folders made as needed). */
static imgstat_status write_output(const imgstat_normrun *run,
                                   const imgstat_input *in,
                                   const imgstat_image *img, char **path,
                                   imgstat_error *err) {
  const imgstat_normrun_options *o = &run->opt;
  imgstat_file_format f = imgstat_output_plan_format(&run->plan, img->sample);
  imgstat_status s = imgstat_output_plan_path(&run->plan, in, f, path, err);
  if (s != IMGSTAT_OK)
    return s;
  s = imgstat_output_make_parents(*path, err);
  if (s != IMGSTAT_OK)
    return s;
  imgstat_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = f;
  wo.cancel = o->cancel;
  wo.temp_path = o->temp_claim ? o->temp_claim() : NULL;
  wo.png_level = o->png_level;
  wo.layout = o->layout;
  s = imgstat_image_write(*path, img, &wo, err);
  if (o->temp_release)
    o->temp_release(wo.temp_path);
  return s;
}

/* One input on a worker: skipped when its output is there, else decoded
 * within the budget, normalized by the engine and written. */
static void work_input(void *ctx, imgstat_task *task, void *item,
                       void *result) {
  imgstat_normrun *run = ctx;
  const imgstat_input *in = item;
  item_result *r = result;
  const imgstat_normrun_options *o = &run->opt;
  if (o->skip_existing && in->kind == IMGSTAT_INPUT_FILE &&
      imgstat_output_plan_present(&run->plan, in)) {
    imgstat_task_reserve(task, 0);
    r->skipped = 1;
    return;
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_image img;
  uint64_t reserved;
  int cancelled;
  /* beside the input: the output image (out_sample's samples, else minmax
   * and clip the input's, the others float32) */
  int as_input =
      o->norm.mode == IMGSTAT_NORM_MINMAX || o->norm.mode == IMGSTAT_NORM_CLIP;
  uint32_t out = o->norm.out_sample
                     ? (uint32_t)imgstat_sample_depth(o->norm.out_sample) / 8
                 : as_input ? IMGSTAT_TASK_EXTRA_AS_INPUT
                            : 4;
  imgstat_status s = imgstat_task_decode(task, in, &o->engine.load, out, &img,
                                         &reserved, &cancelled, &err);
  if (cancelled) {
    r->cancelled = 1;
    return;
  }
  if (s != IMGSTAT_OK) {
    result_failed(&r->res, IMGSTAT_STAGE_LOAD, &err);
    return;
  }
  /* the dataset's conversion (a view of img's planes where it can) */
  imgstat_image conv;
  if (imgstat_dataset_convert(&img, o->as, &conv, &err) != IMGSTAT_OK) {
    imgstat_image_free(&img);
    imgstat_task_release(task, reserved);
    result_failed(&r->res, IMGSTAT_STAGE_COMPUTE, &err);
    return;
  }
  /* with dataset, run->norm carries the pooled figures */
  imgstat_engine_normalize(run->engine, in->path, &conv, &run->norm, &r->res);
  imgstat_image_free(&conv);
  imgstat_image_free(&img);
  if (r->res.status == IMGSTAT_OK) {
    s = write_output(run, in, &r->res.output, &r->out_path, &r->write_err);
    if (s != IMGSTAT_OK && o->cancel && *o->cancel)
      r->cancelled = 1;
    else if (s != IMGSTAT_OK && !r->write_err.message[0])
      imgstat_error_set(&r->write_err, s, "out of memory");
  }
  imgstat_image_free(&r->res.output);
  imgstat_task_release(task, reserved);
}

static int deliver_input(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  imgstat_normrun *run = ctx;
  imgstat_input *in = item;
  item_result *r = result;
  (void)index;
  int stop = 0;
  if (ran && !r->cancelled) {
    imgstat_normrun_progress *p = &run->progress;
    imgstat_normrun_item it;
    memset(&it, 0, sizeof it);
    it.input = in;
    it.skipped = r->skipped;
    it.result = &r->res;
    it.output = r->out_path;
    it.write_error = &r->write_err;
    p->done++;
    if (r->skipped) {
      p->skipped++;
    } else {
      if (in->size_known)
        p->bytes_in += in->size;
      if (r->res.status != IMGSTAT_OK || r->write_err.message[0])
        p->failed++;
    }
    if (run->cb->item)
      stop = run->cb->item(run->cb->ctx, &it, p);
  }
  free(r->out_path);
  imgstat_job_result_free(&r->res);
  imgstat_input_free(in);
  return stop;
}

/* ---- dataset: the pooling pass ------------------------------------------- */

static imgstat_status pooled_next(void *ctx, const imgstat_input **item,
                                  imgstat_error *err) {
  imgstat_normrun *run = ctx;
  (void)err;
  *item = run->next_pooled < run->list.count
              ? run->list.items[run->next_pooled++]
              : NULL;
  return IMGSTAT_OK;
}

static void pooled_release(void *ctx, const imgstat_input *item) {
  imgstat_normrun *run = ctx;
  run->progress.done++;
  if (item->size_known)
    run->progress.bytes_in += item->size;
  if (run->cb->progress)
    run->cb->progress(run->cb->ctx, &run->progress);
}

static void start_pass(imgstat_normrun *run, int pass) {
  memset(&run->progress, 0, sizeof run->progress);
  run->progress.pass = pass;
  run->progress.total = run->list.count;
  run->next_pooled = 0;
  if (run->cb->pass)
    run->cb->pass(run->cb->ctx, pass);
}

/* Pools every input (the library's pass: the batch runner, the engine, the
 * dataset accumulator) and sets run->norm to one plan for all of them.
 * Inputs that fail here are reported by the writing pass. *cancelled: the
 * cancel flag stopped it. */
static imgstat_status pool_pass(imgstat_normrun *run, int *cancelled,
                                imgstat_normrun_error *e) {
  const imgstat_normrun_options *o = &run->opt;
  imgstat_dataset_pass p;
  memset(&p, 0, sizeof p);
  p.ctx = run;
  p.next = pooled_next;
  p.release = pooled_release;
  p.load = &o->engine.load;
  p.engine = run->engine;
  p.workers = run->workers;
  p.budget = o->max_inflight;
  p.cancel = o->cancel;
  imgstat_dataset_options dso;
  memset(&dso, 0, sizeof dso);
  dso.as = o->as; /* the layout the writing pass converts to */
  dso.scale_unit = o->norm.scale_unit;
  dso.histograms = o->norm.mode == IMGSTAT_NORM_CLIP;
  dso.float_bins = o->norm.float_bins;
  imgstat_status s = IMGSTAT_OK;
  if (dso.histograms) { /* float images: the histograms' common range */
    start_pass(run, 0);
    int found = 0;
    double lo, hi;
    s = imgstat_dataset_float_range(&p, &found, &lo, &hi, cancelled, &e->err);
    if (s != IMGSTAT_OK)
      return fail(e, IMGSTAT_NORMRUN_DATASET, s);
    if (*cancelled)
      return IMGSTAT_OK;
    if (found) {
      dso.have_range = 1;
      dso.lo = lo;
      dso.hi = hi;
    }
  }
  imgstat_dataset *d = NULL;
  s = imgstat_dataset_create(&dso, &d, &e->err);
  start_pass(run, 1);
  if (s == IMGSTAT_OK)
    s = imgstat_dataset_pool_inputs(&p, d, NULL, cancelled, &e->err);
  run->progress.final = 1; /* the pass's total */
  if (run->cb->progress)
    run->cb->progress(run->cb->ctx, &run->progress);
  if (s == IMGSTAT_OK && *cancelled)
    goto done;
  if (s == IMGSTAT_OK) {
    s = imgstat_dataset_finish(d, 0, &run->pooled, &e->err);
    run->have_pooled = s == IMGSTAT_OK;
  }
  if (s != IMGSTAT_OK) {
    fail(e, IMGSTAT_NORMRUN_DATASET, s);
    goto done;
  }
  if (run->pooled.nexcluded > 0) { /* one plan needs one layout and depth */
    s = imgstat_error_set(&e->err, IMGSTAT_ERR_ARG,
                          "%zu of %" PRIu64 " inputs refused: one plan needs "
                          "one layout and depth",
                          run->pooled.nexcluded, (uint64_t)run->pooled.images);
    fail(e, IMGSTAT_NORMRUN_DATASET_REFUSED, s);
    goto done;
  }
  if (run->pooled.pooled == 0) { /* nothing could be read: pass 2 says why */
    run->norm.measured = NULL;
    goto done;
  }
  int unit = 0;
  s = imgstat_dataset_norm_measure(&run->pooled, &o->norm, &run->measure, &unit,
                                   &e->err);
  if (s != IMGSTAT_OK) {
    fail(e, IMGSTAT_NORMRUN_DATASET_MEASURE, s);
    goto done;
  }
  run->norm.measured = &run->measure;
  run->norm.scale_unit = unit;
done:
  imgstat_dataset_destroy(d);
  return s;
}

/* ---- the run ------------------------------------------------------------- */

imgstat_status imgstat_normrun_execute(imgstat_normrun *run,
                                       const imgstat_normrun_callbacks *cb,
                                       imgstat_normrun_report *report,
                                       imgstat_normrun_error *e) {
  static const imgstat_normrun_callbacks none;
  memset(e, 0, sizeof *e);
  memset(report, 0, sizeof *report);
  if (!run || run->executed) {
    imgstat_error_set(&e->err, IMGSTAT_ERR_ARG,
                      "imgstat_normrun_execute: no run, or run twice");
    return fail(e, IMGSTAT_NORMRUN_WORKERS, IMGSTAT_ERR_ARG);
  }
  run->executed = 1;
  run->cb = cb ? cb : &none;
  const imgstat_normrun_options *o = &run->opt;
  /* The GPU's start-up is waited for before the first input: its warning
   * (auto, a device that fails) comes first, and with backend gpu no input
   * is decoded for nothing. */
  imgstat_status s = imgstat_engine_create(&o->engine, &run->engine, &e->err);
  if (s != IMGSTAT_OK)
    return fail(e, IMGSTAT_NORMRUN_ENGINE, s);
  imgstat_job_result res;
  s = imgstat_engine_decide(run->engine, &res);
  if (s != IMGSTAT_OK) {
    e->err = res.error;
    imgstat_job_result_free(&res);
    return fail(e, IMGSTAT_NORMRUN_ENGINE, s);
  }
  if (run->cb->decided)
    run->cb->decided(run->cb->ctx, &res);
  imgstat_job_result_free(&res);
  run->norm = o->norm;
  if (o->dataset) {
    int cancelled = 0;
    s = pool_pass(run, &cancelled, e);
    if (s != IMGSTAT_OK || cancelled) {
      report->cancelled = cancelled;
      report->pass = run->progress.pass;
      return s;
    }
  }
  /* a missing output folder is made now (its subfolders as outputs need
   * them), after the pooling pass, which may refuse the run */
  s = imgstat_output_plan_make_folder(&run->plan, &e->err);
  if (s != IMGSTAT_OK)
    return fail(e, IMGSTAT_NORMRUN_OUT_FOLDER, s);
  start_pass(run, 2);
  imgstat_batch_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.workers = run->workers;
  cfg.budget = o->max_inflight;
  cfg.result_size = sizeof(item_result);
  cfg.cancel = o->cancel;
  cfg.ctx = run;
  cfg.next = next_input;
  cfg.work = work_input;
  cfg.deliver = deliver_input;
  imgstat_batch_report br;
  memset(&br, 0, sizeof br);
  s = imgstat_batch_run(&cfg, &br, &e->err);
  report->pass = 2;
  report->cancelled = br.cancelled;
  report->done = run->progress.done;
  report->failed = run->progress.failed;
  report->skipped = run->progress.skipped;
  if (s != IMGSTAT_OK)
    return fail(e, IMGSTAT_NORMRUN_WORKERS, s);
  run->progress.final = 1;
  return IMGSTAT_OK;
}
