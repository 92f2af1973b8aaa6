/*
 * What a normalize run does (imgstat_run.h, opts->normalize): the whole
 * input list, the output plan (outputs.c) checked on it, the engine's
 * decision, the dataset's pooling pass and plan, then the batch: each
 * worker decodes an input within the budget, converts it (the dataset's
 * layout), normalizes it through the engine and writes it atomically; the
 * results are delivered in input order.
 */
#include "normalize.h"

#include "mask_pair.h"
#include "run_inputs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ist_norm_run {
  imgstat_run_options run; /* the sources, workers, engine, cancel */
  imgstat_run_normalize opt;
  imgstat_run_info *info; /* the run's */
  imgstat_output_plan plan;
  imgstat_input_list list; /* the whole list, walked once */
  /* the pass's inputs: copies of list's items, an archive's members read as
   * they are handed out (NULL: out of memory making it) */
  imgstat_inputs *feed;
  int workers; /* the batch's: 0 one per core */
  imgstat_engine *engine;
  const imgstat_run_callbacks *cb;
  imgstat_run_progress progress;
  /* the options every input is normalized with: the caller's, and with
   * dataset the pooled figures (norm.measured) */
  imgstat_norm_options norm;
  imgstat_norm_measure measure;
  imgstat_dataset_result pooled;
  int have_pooled;
  size_t next_pooled; /* the pooling passes' place in list */
  /* --sample: the inputs the pooling passes take (NULL: every one), how
   * many, and how many they were drawn from */
  unsigned char *pool_take;
  uint64_t pool_count, sample_of;
  ist_pairs *masks; /* --mask: each input's */
};

/* Whether the options make float32 output (zscore, given mean and std). */
static int float_mode(const imgstat_norm_options *n) {
  return n->mode == IMGSTAT_NORM_ZSCORE || n->mode == IMGSTAT_NORM_GIVEN;
}

/* The output format when the options fix it (AUTO: by the output's sample
 * type). */
static imgstat_file_format fixed_format(const imgstat_run_normalize *o,
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
static imgstat_status check_options(const imgstat_run_options *r,
                                    imgstat_error *err) {
  const imgstat_run_normalize *o = r->normalize;
  const imgstat_norm_options *n = &o->norm;
  if (r->dataset || r->request.histograms || r->request.npercentiles || r->mpi)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "a normalize run takes no statistics request, "
                             "dataset record or MPI");
  if (o->as == IMGSTAT_AS_GRAY && r->request.nnodata > 0) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "nodata values are not applied to a conversion to "
                      "gray: a luma is not nodata where a colour sample is "
                      "(as=gray)");
    return imgstat_error_cause(err, IMGSTAT_CAUSE_SETTING, 0, 0, "as=gray");
  }
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

/* A failure at a step of the run: where it stopped, and its words
 * ("out of memory" when it has none). */
static imgstat_status fail(imgstat_error *err, imgstat_run_step *at,
                           imgstat_run_step step, imgstat_status s) {
  if (at)
    *at = step;
  err->status = s;
  if (!err->message[0])
    snprintf(err->message, sizeof err->message, "out of memory");
  return s;
}

imgstat_status ist_norm_run_create(const imgstat_run_options *opts,
                                   imgstat_run_info *info, ist_norm_run **out,
                                   imgstat_error *err) {
  memset(err, 0, sizeof *err);
  *out = NULL;
  const imgstat_run_normalize *no = opts->normalize;
  if (opts->nsources <= 0 || !opts->sources || !no->out || !*no->out) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG, "no inputs, or no output");
    return fail(err, NULL, 0, IMGSTAT_ERR_ARG);
  }
  if (check_options(opts, err) != IMGSTAT_OK)
    return fail(err, NULL, 0, IMGSTAT_ERR_ARG);
  ist_norm_run *run = calloc(1, sizeof *run);
  if (!run) /* fail() words it */
    return fail(err, NULL, 0, IMGSTAT_ERR_NOMEM);
  run->run = *opts;
  run->opt = *no;
  run->info = info;
  const imgstat_run_options *ro = &run->run;
  const imgstat_run_normalize *o = &run->opt;
  int folder = imgstat_output_plan_folder(
      o->out, ist_run_several(ro->sources, ro->nsources), o->format);
  run->plan.out = o->out;
  run->plan.folder = folder;
  run->plan.format = fixed_format(o, folder);
  info->folder = folder;
  /* an output folder inside an input folder holds no inputs (earlier
   * runs' outputs) */
  imgstat_inputs *inputs = NULL;
  imgstat_status s = ist_run_inputs_make(
      ro->sources, ro->nsources, ro->null_lists, ro->follow,
      ro->engine.load.max_memory, folder ? o->out : NULL, &inputs, err);
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_collect(inputs, &run->list, err);
  imgstat_inputs_destroy(inputs);
  if (s == IMGSTAT_OK)
    s = ist_pairs_create(ro, ro->mask, "mask", &run->masks, err);
  /* the pooling pass and the writing pass each read every input: refused
   * before either reads anything */
  const imgstat_input *once = s == IMGSTAT_OK && o->dataset
                                  ? imgstat_input_list_read_once(&run->list)
                                  : NULL;
  if (once) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "%s can be read only once (a pipe, FIFO or device), "
                      "and a dataset's plan reads every input twice: save "
                      "it to a file first",
                      once->kind == IMGSTAT_INPUT_STDIN ? "standard input"
                                                        : once->path);
    s = imgstat_error_cause(err, IMGSTAT_CAUSE_DATASET, 0, 0, NULL);
  }
  if (s != IMGSTAT_OK) {
    ist_norm_run_destroy(run);
    return fail(err, NULL, 0, s);
  }
  imgstat_output_problem unused;
  memset(&unused, 0, sizeof unused);
  imgstat_output_problem *why = o->problem ? o->problem : &unused;
  s = imgstat_output_plan_check(&run->plan, &run->list, why, err);
  imgstat_output_problem_clear(&unused);
  run->opt.problem = NULL; /* the caller's, for this call only */
  if (s != IMGSTAT_OK) {
    ist_norm_run_destroy(run);
    return fail(err, NULL, 0, s);
  }
  info->inputs = run->list.count;
  run->pool_count = run->list.count;
  if (o->dataset && ro->sample) { /* the pooling passes read a sample */
    run->pool_take = malloc(run->list.count ? run->list.count : 1);
    if (!run->pool_take) {
      ist_norm_run_destroy(run);
      return fail(err, NULL, 0, IMGSTAT_ERR_NOMEM);
    }
    imgstat_input_list_sample(&run->list, ro->sample, ro->seed, run->pool_take,
                              &run->sample_of);
    run->pool_count = 0;
    for (size_t k = 0; k < run->list.count; k++)
      run->pool_count += run->pool_take[k];
  }
  /* Workers: jobs (0: one per core). One input alone (no jobs) runs in the
   * caller's thread with the CPU backend's threads on every core; with
   * several workers, each normalizes on one thread. */
  info->cores = imgstat_cpu_cores();
  info->workers = imgstat_engine_plan_workers(ro->jobs, run->list.count > 1,
                                              info->cores, &run->run.engine);
  run->workers = info->workers;
  info->several = ist_run_several(ro->sources, ro->nsources);
  info->range_pass = o->dataset && o->norm.mode == IMGSTAT_NORM_CLIP;
  *out = run;
  return IMGSTAT_OK;
}

void ist_norm_run_destroy(ist_norm_run *run) {
  if (!run)
    return;
  imgstat_engine_destroy(run->engine);
  imgstat_inputs_destroy(run->feed);
  imgstat_input_list_free(&run->list);
  free(run->pool_take);
  imgstat_dataset_result_free(&run->pooled);
  ist_pairs_destroy(run->masks);
  free(run);
}

const imgstat_input_list *ist_norm_run_list(const ist_norm_run *run) {
  return &run->list;
}

const imgstat_dataset_result *ist_norm_run_pooled(const ist_norm_run *run) {
  return run->have_pooled ? &run->pooled : NULL;
}

const imgstat_norm_options *ist_norm_run_norm(const ist_norm_run *run) {
  return &run->norm;
}

imgstat_engine *ist_norm_run_engine(const ist_norm_run *run) {
  return run->engine;
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
  ist_norm_run *run = ctx;
  imgstat_input *in = NULL; /* delivered items are freed there */
  imgstat_status s =
      run->feed ? imgstat_inputs_next(run->feed, &in, err)
                : imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  *item = in;
  return s;
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
static imgstat_status write_output(const ist_norm_run *run,
                                   const imgstat_input *in,
                                   const imgstat_image *img, char **path,
                                   imgstat_error *err) {
  const imgstat_run_normalize *o = &run->opt;
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
  wo.cancel = run->run.cancel;
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
  ist_norm_run *run = ctx;
  const imgstat_input *in = item;
  item_result *r = result;
  const imgstat_run_normalize *o = &run->opt;
  const imgstat_run_options *ro = &run->run;
  if (o->skip_existing &&
      (in->kind == IMGSTAT_INPUT_FILE || in->kind == IMGSTAT_INPUT_MEMBER) &&
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
  imgstat_status s = imgstat_task_decode(task, in, &ro->engine.load, out, &img,
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
  /* with dataset, run->norm carries the pooled figures; the valid samples
   * under a mask or nodata value (the file's own too) are the ones mapped */
  imgstat_stats_request req = ro->request;
  char *mask = NULL;
  if (ist_pair_path(run->masks, in, &mask, &err) != IMGSTAT_OK)
    result_failed(&r->res, IMGSTAT_STAGE_LOAD, &err);
  else {
    req.mask_path = mask;
    req.mask_shared = ist_pairs_one_file(run->masks);
    imgstat_engine_normalize_valid(run->engine, in->path, &conv, &run->norm,
                                   &req, o->has_fill, o->fill, &r->res);
  }
  free(mask);
  imgstat_image_free(&conv);
  imgstat_image_free(&img);
  if (r->res.status == IMGSTAT_OK) {
    s = write_output(run, in, &r->res.output, &r->out_path, &r->write_err);
    if (s != IMGSTAT_OK && ro->cancel && *ro->cancel)
      r->cancelled = 1;
    else if (s != IMGSTAT_OK && !r->write_err.message[0])
      imgstat_error_set(&r->write_err, s, "out of memory");
  }
  imgstat_image_free(&r->res.output);
  imgstat_task_release(task, reserved);
}

static int deliver_input(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  ist_norm_run *run = ctx;
  imgstat_input *in = item;
  item_result *r = result;
  (void)index;
  int stop = 0;
  if (ran && !r->cancelled) {
    imgstat_run_progress *p = &run->progress;
    imgstat_run_item it;
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
  ist_norm_run *run = ctx;
  imgstat_input *in = NULL; /* freed by pooled_release */
  *item = NULL;
  if (!run->feed)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  /* --sample: the inputs not in it passed over (an archive's members
   * unread) */
  uint64_t skip = 0;
  while (run->pool_take && run->next_pooled + skip < run->list.count &&
         !run->pool_take[run->next_pooled + skip])
    skip++;
  imgstat_status s = IMGSTAT_OK;
  if (skip) {
    s = imgstat_inputs_skip(run->feed, skip, err);
    run->next_pooled += skip;
  }
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_next(run->feed, &in, err);
  if (in)
    run->next_pooled++;
  *item = in;
  return s;
}

/* The second read's release: the copy freed, no progress line. */
static void reread_release(void *ctx, const imgstat_input *item) {
  (void)ctx;
  imgstat_input_free((imgstat_input *)item); /* a copy (pooled_next) */
}

static void pooled_release(void *ctx, const imgstat_input *item) {
  ist_norm_run *run = ctx;
  run->progress.done++;
  if (item->size_known)
    run->progress.bytes_in += item->size;
  if (run->cb->progress)
    run->cb->progress(run->cb->ctx, &run->progress);
  imgstat_input_free((imgstat_input *)item); /* a copy (pooled_next) */
}

/* The inputs from the first again, for a pass. */
static void restart_feed(ist_norm_run *run) {
  imgstat_error e;
  imgstat_inputs_destroy(run->feed);
  if (imgstat_inputs_from_list(&run->list, &run->feed, &e) != IMGSTAT_OK)
    run->feed = NULL; /* the pass's first input says so */
  run->next_pooled = 0;
}

static void start_pass(ist_norm_run *run, int pass) {
  memset(&run->progress, 0, sizeof run->progress);
  run->progress.pass = pass;
  run->progress.total = pass < 2 ? run->pool_count : run->list.count;
  run->progress.total_known = 1;
  restart_feed(run);
  if (run->cb->pass)
    run->cb->pass(run->cb->ctx, pass);
}

/* The pool's mask of an input (imgstat_dataset_pass.mask_of): paired as the
 * writing pass pairs it. */
static imgstat_status pool_mask_of(void *ctx, const imgstat_input *in,
                                   char **path, int *shared,
                                   imgstat_error *err) {
  ist_norm_run *run = ctx;
  *shared = ist_pairs_one_file(run->masks);
  return ist_pair_path(run->masks, in, path, err);
}

/* Pools every input (the library's pass: the batch runner, the engine, the
 * dataset accumulator) and sets run->norm to one plan for all of them.
 * Inputs that fail here are reported by the writing pass. *cancelled: the
 * cancel flag stopped it. */
static imgstat_status pool_pass(ist_norm_run *run, int *cancelled,
                                imgstat_run_step *at, imgstat_error *err) {
  const imgstat_run_normalize *o = &run->opt;
  const imgstat_run_options *ro = &run->run;
  imgstat_dataset_pass p;
  memset(&p, 0, sizeof p);
  p.ctx = run;
  p.next = pooled_next;
  p.release = pooled_release;
  p.load = &ro->engine.load;
  p.engine = run->engine;
  p.workers = run->workers;
  p.budget = ro->max_inflight;
  p.cancel = ro->cancel;
  /* the valid samples: the writing pass's nodata values and masks */
  p.request = &ro->request;
  p.mask_of = run->masks ? pool_mask_of : NULL;
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
    s = imgstat_dataset_float_range(&p, &found, &lo, &hi, cancelled, err);
    if (s != IMGSTAT_OK)
      return fail(err, at, IMGSTAT_RUN_STEP_RANGE, s);
    if (*cancelled)
      return IMGSTAT_OK;
    if (found) {
      dso.have_range = 1;
      dso.lo = lo;
      dso.hi = hi;
    }
  }
  imgstat_dataset *d = NULL;
  s = imgstat_dataset_create(&dso, &d, err);
  start_pass(run, 1);
  if (s == IMGSTAT_OK)
    s = imgstat_dataset_pool_inputs(&p, d, NULL, cancelled, err);
  run->progress.final = 1; /* the pass's total */
  if (run->cb->progress)
    run->cb->progress(run->cb->ctx, &run->progress);
  if (s == IMGSTAT_OK && *cancelled)
    goto done;
  /* clip of a float pool: its two percentiles exact by a second read
   * (linked: within one bin of the common range, docs/normalize.md) */
  if (s == IMGSTAT_OK && o->norm.mode == IMGSTAT_NORM_CLIP && !o->norm.linked) {
    double clip[2] = {o->norm.clip_low, o->norm.clip_high};
    imgstat_dataset_pass again = p; /* no progress line of its own */
    again.release = reread_release;
    restart_feed(run);
    s = imgstat_dataset_float_exact(&again, d, clip, 2,
                                    ro->engine.load.max_memory
                                        ? ro->engine.load.max_memory
                                        : IMGSTAT_DEFAULT_MAX_MEMORY,
                                    cancelled, err);
    if (s == IMGSTAT_OK && *cancelled)
      goto done;
  }
  if (s == IMGSTAT_OK) {
    s = imgstat_dataset_finish(d, 0, &run->pooled, err);
    run->have_pooled = s == IMGSTAT_OK;
    if (run->have_pooled)
      ist_run_sample_note(&run->pooled, ro->sample, ro->seed, run->sample_of);
  }
  if (s != IMGSTAT_OK) {
    fail(err, at, IMGSTAT_RUN_STEP_POOL, s);
    goto done;
  }
  if (run->pooled.nexcluded > 0) { /* one plan needs one layout and depth */
    s = imgstat_error_set(err, IMGSTAT_ERR_ARG,
                          "%zu of %" PRIu64 " inputs refused: one plan needs "
                          "one layout and depth",
                          run->pooled.nexcluded, (uint64_t)run->pooled.images);
    fail(err, at, IMGSTAT_RUN_STEP_REFUSED, s);
    goto done;
  }
  if (run->pooled.pooled == 0) { /* nothing could be read: pass 2 says why */
    run->norm.measured = NULL;
    goto done;
  }
  int unit = 0;
  s = imgstat_dataset_norm_measure(&run->pooled, &o->norm, &run->measure, &unit,
                                   err);
  if (s != IMGSTAT_OK) {
    fail(err, at, IMGSTAT_RUN_STEP_PLAN, s);
    goto done;
  }
  run->norm.measured = &run->measure;
  run->norm.scale_unit = unit;
done:
  imgstat_dataset_destroy(d);
  return s;
}

/* ---- the run ------------------------------------------------------------- */

imgstat_status ist_norm_run_execute(ist_norm_run *run,
                                    const imgstat_run_callbacks *cb,
                                    imgstat_run_report *report,
                                    imgstat_error *err) {
  memset(err, 0, sizeof *err);
  imgstat_run_step *at = &report->failed_in;
  run->cb = cb;
  const imgstat_run_normalize *o = &run->opt;
  const imgstat_run_options *ro = &run->run;
  /* The GPU's start-up is waited for before the first input: its warning
   * (auto, a device that fails) comes first, and with backend gpu no input
   * is decoded for nothing. */
  imgstat_status s = imgstat_engine_create(&ro->engine, &run->engine, err);
  if (s != IMGSTAT_OK)
    return fail(err, at, IMGSTAT_RUN_STEP_SET_UP, s);
  imgstat_job_result res;
  s = imgstat_engine_decide(run->engine, &res);
  if (s != IMGSTAT_OK) {
    *err = res.error;
    imgstat_job_result_free(&res);
    return fail(err, at, IMGSTAT_RUN_STEP_SET_UP, s);
  }
  if (run->cb->decided)
    run->cb->decided(run->cb->ctx, &res);
  imgstat_job_result_free(&res);
  run->norm = o->norm;
  if (o->dataset) {
    int cancelled = 0;
    s = pool_pass(run, &cancelled, at, err);
    if (s != IMGSTAT_OK || cancelled) {
      report->cancelled = cancelled;
      report->pass = run->progress.pass;
      return s;
    }
  }
  /* a missing output folder is made now (its subfolders as outputs need
   * them), after the pooling pass, which may refuse the run */
  s = imgstat_output_plan_make_folder(&run->plan, err);
  if (s != IMGSTAT_OK)
    return fail(err, at, IMGSTAT_RUN_STEP_SET_UP, s);
  start_pass(run, 2);
  int cancelled = 0;
  s = ist_run_batch(run->workers, ro->max_inflight, sizeof(item_result),
                    ro->cancel, run, next_input, work_input, deliver_input,
                    &cancelled, err);
  report->pass = 2;
  report->cancelled = cancelled;
  report->done = run->progress.done;
  report->failed = run->progress.failed;
  report->skipped = run->progress.skipped;
  if (s != IMGSTAT_OK)
    return fail(err, at, IMGSTAT_RUN_STEP_WORKERS, s);
  run->progress.final = 1;
  return IMGSTAT_OK;
}
