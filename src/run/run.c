/*
 * The run over many inputs (imgstat_run.h): inputs to the decode stage, the
 * engine (the GPU offer of JPEGs included), the dataset accumulator and the
 * caller's callbacks in input order; the float range pass; under MPI the
 * one input list sent by rank 0, each rank's share and the merge of the
 * accumulators on rank 0.
 */
#include "imgstat/run.h"

#include "dataset_extra.h"
#include "dataset_reduce.h"
#include "env.h"
#include "mask_pair.h"
#include "normalize.h"
#include "run_inputs.h"
#include "stats_stream.h"

#include "gpu_jpeg.h"
#include "imgstat/cuda.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct imgstat_run {
  imgstat_run_options opt; /* engine: threads and workers set here */
  imgstat_run_info info;
  imgstat_inputs *inputs;
  /* the whole list, when walked whole; rank 0 dealing the names
   * (list_release): its entries from list_base on, those before dealt
   * and let go (release_dealt) */
  imgstat_input_list list;
  int have_list;
  uint64_t list_base;
  int list_release;
  size_t list_peak; /* the most entries list held at once */
  /* the inputs the passes read: list, or with --sample a view of the
   * sampled items of list (its own array, list's items) */
  imgstat_input_list pass;
  int jpeg_stage; /* JPEGs streamed to nvJPEG: more workers, a wider window */
  int needs_gpu;  /* --backend gpu, --verify or nvJPEG: decided first */
  imgstat_engine *engine;
  imgstat_dataset *ds;
  const imgstat_run_callbacks *cb;
  imgstat_run_progress progress;
  /* MPI: this rank's share of the inputs, [share_first, share_end) */
  int share;
  uint64_t share_first, share_end, fed;
  /* MPI, dealt (info.mpi_dealt): the chunk being fed [chunk_at, chunk_end),
   * the iterator's next item (pos); deal_done: told that none is left (or
   * quit). Rank 0 deals [deal_next, deal_total), deal_fixed items a chunk
   * (0: guided, smaller as the list runs out), to the deal_open ranks that
   * may still ask; deal_stop: it deals no more (its run stopped). */
  uint64_t chunk_at, chunk_end, pos;
  int deal_done, deal_open, deal_stop;
  /* dealt with the names: ranks > 0 get no list, only their chunks' items
   * (rank 0 packs them); not when every rank needs the list (--sample's
   * draw, the float range pass, outputs checked against it) */
  int deal_names;
  uint64_t deal_next, deal_total, deal_fixed;
  /* rank 0 letting go of the dealt entries: the most it walks ahead of
   * the deal (the names undealt at which the guided chunks reach their
   * largest) */
  uint64_t ahead_max;
  /* dealt with the names, rank 0 deals while it walks (IMGSTAT_MPI_DEAL
   * not walk-first): walker, its walk (NULL once ended), takes the inputs
   * into list a part at a time (list_cap its room; pass follows list);
   * deal_total is the count walked so far, walk_done once it is all.
   * walk_failed: the walk ran out of memory (walk_err), rank 0's run
   * fails with it. walk_dealt: the inputs dealt to the other ranks before
   * the walk ended; work_t0: the start of the work, the walk's too. */
  int walking, walk_done;
  imgstat_inputs *walker;
  size_t list_cap;
  imgstat_status walk_failed;
  imgstat_error walk_err;
  uint64_t walk_dealt;
  struct timespec work_t0;
  size_t walk_ahead; /* names walked between rank 0's own inputs */
  int stage_times;   /* IMGSTAT_STAGE_TIMES: time the reading and delivery */
  int stream_stats;  /* statistics as a file is read (stats_stream.h) */
  struct timespec created;   /* imgstat_run_create */
  imgstat_run_mpi_times mpi; /* MPI: where this rank's time went */
  atomic_uint_fast64_t read_ns, deliver_ns;
  uint64_t walk_ns; /* the walk's time on the thread that feeds the inputs */
  int executed;
  ist_norm_run *norm; /* a normalize run (opts->normalize) */
  size_t reread;      /* the second read's next item in pass */
  uint64_t sample_of; /* --sample: the inputs it was drawn from */
  ist_pairs *masks;   /* --mask: each input's, every pass's */
  ist_pairs *labels;  /* --labels */
};

/* ---- set-up -------------------------------------------------------------- */

/* Seconds from a to now (CLOCK_MONOTONIC). */
static double run_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) +
         1e-9 * (double)(b.tv_nsec - a->tv_nsec);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Under MPI: whether any rank has a nonzero flag (every rank learns it); a
 * failed collective counts as one. Without: the flag. */
static int any_rank(const imgstat_run *run, int flag) {
  if (!run->opt.mpi)
    return flag;
  uint64_t v = flag != 0;
  imgstat_error err;
  if (imgstat_mpi_allreduce_u64(run->opt.mpi, &v, 1, IMGSTAT_MPI_MAX, &err) !=
      IMGSTAT_OK)
    return 1;
  return v != 0;
}

imgstat_status ist_run_inputs_make(const imgstat_run_source *sources,
                                   int nsources, int null_lists, int follow,
                                   uint64_t max_member, const char *exclude_dir,
                                   imgstat_inputs **out, imgstat_error *err) {
  imgstat_inputs_options io = {follow, max_member, 0};
  /* IMGSTAT_WALKERS: the threads reading folders ahead of the walk (a
   * network filesystem may want more than the default) */
  io.walkers = (int)ist_env_count("IMGSTAT_WALKERS", 0, 0, INT_MAX);
  imgstat_status s = imgstat_inputs_create(&io, out, err);
  if (s == IMGSTAT_OK && exclude_dir)
    s = imgstat_inputs_exclude_dir(*out, exclude_dir, err);
  for (int k = 0; k < nsources && s == IMGSTAT_OK; k++)
    s = sources[k].is_list
            ? imgstat_inputs_add_list(*out, sources[k].text,
                                      null_lists ? '\0' : '\n', err)
            : imgstat_inputs_add_path(*out, sources[k].text, err);
  if (s != IMGSTAT_OK && s != IMGSTAT_ERR_ARG && !err->message[0])
    imgstat_error_set(err, s, "out of memory");
  return s;
}

static imgstat_status make_inputs(imgstat_run *run, imgstat_error *err) {
  const imgstat_run_options *o = &run->opt;
  return ist_run_inputs_make(o->sources, o->nsources, o->null_lists, o->follow,
                             o->engine.load.max_memory, NULL, &run->inputs,
                             err);
}

/* The whole input list, walked once: under MPI by rank 0 alone (it reads
 * the lists and walks the folders: a FIFO or standard input is read once),
 * and its bytes sent to the other ranks, so that every rank shares out the
 * same list. run->inputs becomes an iterator over it. Every rank returns
 * alike (an empty message where another rank failed). */
static imgstat_status whole_list(imgstat_run *run, imgstat_error *err) {
  imgstat_mpi *m = run->opt.mpi;
  int rank = run->info.at.rank;
  imgstat_status s = IMGSTAT_OK;
  run->have_list = 1;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uint64_t w0 = run->stage_times ? now_ns() : 0;
  if (run->walking) { /* rank 0 walks as it deals, in the run */
    if (rank == 0) {
      run->walker = run->inputs;
      run->inputs = NULL;
    }
  } else if (!m || rank == 0) {
    s = imgstat_inputs_collect(run->inputs, &run->list, err);
  }
  if (run->stage_times)
    run->walk_ns += now_ns() - w0;
  if (m && !run->walking) {
    unsigned char *bytes = NULL;
    size_t size = 0;
    if (s == IMGSTAT_OK && rank == 0 && !run->deal_names)
      s = imgstat_input_list_pack(&run->list, &bytes, &size, err);
    run->mpi.list_s = run_since(&t0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!any_rank(run, s != IMGSTAT_OK) && run->deal_names) {
      /* the names go out with the chunks: the other ranks learn the
       * count alone */
      uint64_t n = rank == 0 ? (uint64_t)run->list.count : 0;
      void *data = &n;
      size = sizeof n;
      s = imgstat_mpi_bcast(m, &data, &size, err);
      if (s == IMGSTAT_OK && rank > 0) {
        memcpy(&n, data, sizeof n);
        free(data);
      }
      run->deal_total = n;
      run->mpi.bcast_s = run_since(&t0);
    } else if (!any_rank(run, s != IMGSTAT_OK)) {
      void *data = bytes;
      s = imgstat_mpi_bcast(m, &data, &size, err);
      if (s == IMGSTAT_OK && rank > 0)
        s = imgstat_input_list_unpack(data, size, &run->list, err);
      if (s == IMGSTAT_OK && rank > 0) /* the limit of rank 0's list */
        run->list.max_member = run->opt.engine.load.max_memory;
      if (rank > 0)
        free(data);
      run->mpi.bcast_s = run_since(&t0);
    } else if (s == IMGSTAT_OK) {
      s = imgstat_error_set(err, IMGSTAT_ERR_IO,
                            "rank 0 could not send the input list");
    }
    free(bytes);
  }
  imgstat_inputs_destroy(run->inputs);
  run->inputs = NULL;
  run->list_peak = run->list.count;
  /* --sample: every rank draws it from the one list alike; the whole list
   * stays (the outputs are checked against every input) */
  run->pass = run->list;
  if (s == IMGSTAT_OK && run->opt.sample)
    s = ist_run_sample(&run->list, run->opt.sample, run->opt.seed, &run->pass,
                       &run->sample_of, err);
  /* rank 0 dealing the names copies each chunk of its own from the list
   * as it takes it (deal_take), not the whole list at once */
  imgstat_input_list none = {NULL, 0, run->list.max_member};
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_from_list(
        run->deal_names && rank == 0 ? &none : &run->pass, &run->inputs, err);
  if (s != IMGSTAT_OK && !err->message[0])
    imgstat_error_set(err, s, "out of memory");
  if (!any_rank(run, s != IMGSTAT_OK))
    return IMGSTAT_OK;
  if (s == IMGSTAT_OK) { /* another rank failed */
    err->status = IMGSTAT_ERR_IO;
    err->message[0] = '\0';
    s = IMGSTAT_ERR_IO;
  }
  return s;
}

/* The cores this process may use (imgstat_cpu_cores). Under MPI, ranks
 * left unbound on one host (--bind-to none) take their share of its cores;
 * info says when a rank is bound to fewer than its share. */
static int rank_cores(imgstat_run_info *info, int mpi) {
  imgstat_cpu_info cpu;
  imgstat_cpu_info_get(&cpu);
  int ranks = info->at.local_size > 0 ? info->at.local_size : 1;
  if (!mpi)
    return cpu.cores;
  int share = cpu.offered / ranks > 0 ? cpu.offered / ranks : 1;
  info->cores_short = cpu.cores < share;
  info->cores_share = share;
  info->cores_offered = cpu.offered;
  info->local_ranks = ranks;
  if (cpu.affinity >= cpu.offered && ranks > 1 && cpu.cores > share)
    return share; /* unbound: the host's cores shared out */
  return cpu.cores;
}

/* A GPU for this rank, when the backend may use one: the local rank's turn
 * among the devices listed, else among the host's (info->gpus_shared: the
 * devices' count when the host's ranks outnumber them and nvJPEG decodes). */
static void mpi_pick_device(imgstat_engine_options *e, imgstat_run_info *info) {
  const int local_rank = info->at.local_rank;
  if (e->backend == IMGSTAT_BACKEND_CPU && !e->verify)
    return;
  int n = e->ndevices, list[IMGSTAT_MAX_DEVICES];
  if (n > 0) {
    memcpy(list, e->devices, sizeof(int) * (size_t)n);
  } else {
    imgstat_error err;
    if (imgstat_gpu_device_count(&n, &err) != IMGSTAT_OK || n <= 0)
      return; /* the engine says what it makes of no GPU */
    n = n < IMGSTAT_MAX_DEVICES ? n : IMGSTAT_MAX_DEVICES;
    for (int k = 0; k < n; k++)
      list[k] = k;
  }
  e->ndevices = 1;
  e->devices[0] = list[local_rank % n];
  if (e->jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU && info->at.local_size > n)
    info->gpus_shared = n;
}

imgstat_status ist_run_sample(const imgstat_input_list *list, uint64_t n,
                              uint64_t seed, imgstat_input_list *view,
                              uint64_t *of, imgstat_error *err) {
  size_t size = list->count ? list->count : 1;
  unsigned char *take = malloc(size);
  view->items = malloc(size * sizeof *view->items);
  view->count = 0;
  if (!take || !view->items) {
    free(take);
    free(view->items);
    view->items = NULL;
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  imgstat_input_list_sample(list, n, seed, take, of);
  for (size_t k = 0; k < list->count; k++)
    if (take[k])
      view->items[view->count++] = list->items[k];
  free(take);
  return IMGSTAT_OK;
}

void ist_run_sample_note(imgstat_dataset_result *r, uint64_t n, uint64_t seed,
                         uint64_t of) {
  r->sample = n;
  r->sample_seed = seed;
  r->sample_of = n ? of : 0;
}

int ist_run_several(const imgstat_run_source *sources, int nsources) {
  if (nsources != 1 || sources[0].is_list)
    return 1;
  struct stat sb;
  return strcmp(sources[0].text, "-") != 0 && stat(sources[0].text, &sb) == 0 &&
         (S_ISDIR(sb.st_mode) || imgstat_inputs_is_archive(sources[0].text));
}

/* Workers: jobs (0: one per core this rank may use). One input alone
 * (jobs -1) runs in the caller's thread with the CPU backend's threads on
 * every core; with several workers, each computes on one thread (the
 * figures are bit-identical for any thread count). */
static void plan_workers(imgstat_run *run) {
  imgstat_run_options *o = &run->opt;
  imgstat_run_info *info = &run->info;
  int cores = rank_cores(info, o->mpi != NULL);
  info->several = ist_run_several(o->sources, o->nsources);
  int workers =
      imgstat_engine_plan_workers(o->jobs, info->several, cores, &o->engine);
  /* JPEGs sent to nvJPEG: the workers read and check them and hand them to
   * the device stage without waiting for the decode, one per core as for
   * the CPU decoders (four per core, when the workers waited for their
   * decode, took the cores that nvJPEG's start-up and its lanes' host
   * work need: docs/benchmarks.md). */
  run->jpeg_stage = imgstat_gpu_jpeg_compiled() &&
                    o->engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU &&
                    !o->engine.verify;
  if (o->mpi)
    mpi_pick_device(&o->engine, info);
  run->needs_gpu = o->engine.backend == IMGSTAT_BACKEND_GPU ||
                   o->engine.verify ||
                   o->engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
  info->workers = workers;
  info->cores = cores;
}

imgstat_status imgstat_run_create(const imgstat_run_options *opts,
                                  imgstat_run **out, imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "imgstat_run_create: NULL");
  *out = NULL;
  if (!opts || opts->nsources < 0 || (opts->nsources && !opts->sources))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no inputs");
  imgstat_run *run = calloc(1, sizeof *run);
  if (!run)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  run->opt = *opts;
  run->info.at = imgstat_mpi_where(opts->mpi);
  clock_gettime(CLOCK_MONOTONIC, &run->created);
  atomic_init(&run->read_ns, 0);
  atomic_init(&run->deliver_ns, 0);
  if (opts->sample && !opts->dataset &&
      !(opts->normalize && opts->normalize->dataset)) {
    free(run);
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "sample draws the inputs of a dataset: it needs dataset");
    return imgstat_error_cause(err, IMGSTAT_CAUSE_CONFLICT, 0, 0, "sample");
  }
  if (opts->normalize) {
    imgstat_status s = ist_norm_run_create(opts, &run->info, &run->norm, err);
    if (s != IMGSTAT_OK) {
      free(run);
      return s;
    }
    *out = run;
    return IMGSTAT_OK;
  }
  run->stage_times = getenv("IMGSTAT_STAGE_TIMES") != NULL;
  /* IMGSTAT_TIFF_STREAM=0: every image decoded whole (tests, A/B) */
  const char *stream = getenv("IMGSTAT_TIFF_STREAM");
  run->stream_stats = !(stream && strcmp(stream, "0") == 0);
  imgstat_status s =
      ist_pairs_create(opts, opts->mask, "mask", &run->masks, err);
  if (s == IMGSTAT_OK)
    s = ist_pairs_create(opts, opts->labels, "labels", &run->labels, err);
  if (s == IMGSTAT_OK)
    s = make_inputs(run, err);
  /* float images' pooled histograms without a range: a first pass finds
   * their common range */
  int range = opts->dataset && opts->request.histograms && !opts->ds.have_range;
  /* Whatever needs every input first gets them from one walk (also the
   * second read of exact float percentiles, after the run) */
  int pooled_hist = opts->dataset && opts->request.histograms;
  if (opts->mpi) {
    const char *deal = getenv("IMGSTAT_MPI_DEAL");
    run->info.mpi_dealt =
        !opts->mpi_static_deal && !(deal && strcmp(deal, "static") == 0);
    run->deal_names = run->info.mpi_dealt && !range && !opts->sample &&
                      !opts->whole_list && run->info.at.size > 1;
    run->walking =
        run->deal_names && !(deal && strcmp(deal, "walk-first") == 0);
    /* rank 0 lets go of the entries it has dealt, but for the exact float
     * percentiles' second read of the whole list after the run */
    run->list_release =
        run->deal_names && run->info.at.rank == 0 && !pooled_hist;
  }
  if (s == IMGSTAT_OK &&
      (opts->mpi || opts->whole_list || range || pooled_hist || opts->sample))
    s = whole_list(run, err);
  /* not when an input can be read only once (a pipe, a FIFO): the pass
   * would read it before the run does; float images then get no pooled
   * histogram (the record's histogram_note says why) */
  run->info.range_pass =
      range && s == IMGSTAT_OK && !imgstat_input_list_read_once(&run->list);
  if (s != IMGSTAT_OK) {
    imgstat_run_destroy(run);
    return s;
  }
  plan_workers(run);
  *out = run;
  return IMGSTAT_OK;
}

void imgstat_run_destroy(imgstat_run *run) {
  if (!run)
    return;
  ist_norm_run_destroy(run->norm);
  imgstat_dataset_destroy(run->ds);
  imgstat_engine_destroy(run->engine);
  imgstat_inputs_destroy(run->inputs);
  imgstat_inputs_destroy(run->walker);
  if (run->pass.items != run->list.items)
    free(run->pass.items); /* a view: its items are list's */
  imgstat_input_list_free(&run->list);
  ist_pairs_destroy(run->masks);
  ist_pairs_destroy(run->labels);
  free(run);
}

const imgstat_run_info *imgstat_run_get_info(const imgstat_run *run) {
  return &run->info;
}

const imgstat_input_list *imgstat_run_input_list(const imgstat_run *run) {
  if (run->norm)
    return ist_norm_run_list(run->norm);
  /* dealt with the names, no rank holds the whole list */
  return run->have_list && !run->deal_names ? &run->list : NULL;
}

const imgstat_dataset_result *imgstat_run_pooled(const imgstat_run *run) {
  return run->norm ? ist_norm_run_pooled(run->norm) : NULL;
}

const imgstat_norm_options *imgstat_run_norm(const imgstat_run *run) {
  return run->norm ? ist_norm_run_norm(run->norm) : NULL;
}

/* The run's engine (a normalize run's), once made; else NULL. */
static imgstat_engine *engine_of(const imgstat_run *run) {
  return run->norm ? ist_norm_run_engine(run->norm) : run->engine;
}

/* ---- the float range pass ------------------------------------------------ */

static imgstat_status range_next(void *ctx, const imgstat_input **item,
                                 imgstat_error *err) {
  imgstat_run *run = ctx;
  imgstat_input *in = NULL;
  imgstat_status s = imgstat_inputs_next(run->inputs, &in, err);
  *item = in;
  return s;
}

static void range_progress(imgstat_run *run, int final) {
  if (!run->cb->progress)
    return;
  run->progress.total_known =
      imgstat_inputs_total(run->inputs, &run->progress.total);
  run->progress.final = final;
  run->cb->progress(run->cb->ctx, &run->progress);
}

static void range_release(void *ctx, const imgstat_input *item) {
  imgstat_run *run = ctx;
  run->progress.done++;
  if (item->size_known)
    run->progress.bytes_in += item->size;
  range_progress(run, 0);
  imgstat_input_free((imgstat_input *)item);
}

/* Over a copy of the whole list: sets the options' common float range.
 * *cancelled: the cancel flag stopped it. */
static imgstat_status range_pass(imgstat_run *run, int *cancelled,
                                 imgstat_error *err) {
  imgstat_inputs *later = run->inputs;
  imgstat_status s = imgstat_inputs_from_list(&run->pass, &run->inputs, err);
  if (s == IMGSTAT_OK) {
    memset(&run->progress, 0, sizeof run->progress);
    run->progress.pass = 1;
    imgstat_dataset_pass p;
    memset(&p, 0, sizeof p);
    p.ctx = run;
    p.next = range_next;
    p.release = range_release;
    p.load = &run->opt.engine.load;
    p.workers = run->info.workers;
    p.budget = run->opt.max_inflight;
    p.cancel = run->opt.cancel;
    int found = 0;
    double lo, hi;
    s = imgstat_dataset_float_range(&p, &found, &lo, &hi, cancelled, err);
    if (s != IMGSTAT_OK && !err->message[0]) {
      imgstat_error_set(err, s, "out of memory");
    } else if (s == IMGSTAT_OK && found && !*cancelled) {
      run->opt.ds.have_range = 1;
      run->opt.ds.lo = lo;
      run->opt.ds.hi = hi;
    }
    range_progress(run, 1); /* the pass's total stays shown */
  } else if (!err->message[0]) {
    imgstat_error_set(err, s, "out of memory");
  }
  imgstat_inputs_destroy(run->inputs);
  run->inputs = later;
  return s;
}

/* ---- exact float percentiles --------------------------------------------- */

static imgstat_status exact_next(void *ctx, const imgstat_input **item,
                                 imgstat_error *err) {
  imgstat_run *run = ctx;
  (void)err;
  *item = run->reread < run->pass.count ? run->pass.items[run->reread++] : NULL;
  return IMGSTAT_OK;
}

/* The samples the pool took of an image, for the second read: its nodata
 * values and its paired mask, as work_input gave them to dataset_work. */
static imgstat_status exact_valid(void *ctx, const imgstat_input *in,
                                  const imgstat_image *img, imgstat_image *out,
                                  imgstat_error *err) {
  imgstat_run *run = ctx;
  imgstat_stats_request req = run->opt.request;
  char *mask = NULL;
  imgstat_status s = ist_pair_path(run->masks, in, &mask, err);
  req.mask_path = mask;
  req.mask_shared = ist_pairs_one_file(run->masks);
  req.labels_path = NULL;
  if (s == IMGSTAT_OK)
    s = imgstat_engine_valid_copy(run->engine, img, &req, out, err);
  free(mask);
  return s;
}

/* After the pool: the exact values of the float pool's median and
 * percentiles by a second read of the inputs (imgstat_dataset_float_exact),
 * or the note why they stay within one bin. Under MPI rank 0 alone reads
 * the whole list again (it walked it; the other ranks' shares are merged
 * into its accumulator), so any rank count gives the same values. The
 * pass shows no progress line of its own. *cancelled: the cancel flag
 * stopped it. */
static imgstat_status exact_pass(imgstat_run *run, int *cancelled,
                                 imgstat_error *err) {
  const imgstat_run_options *o = &run->opt;
  const imgstat_input *once = imgstat_input_list_read_once(&run->pass);
  if (once) {
    char note[160];
    snprintf(note, sizeof note,
             "float percentiles within one bin: %.80s can be read only once",
             once->path);
    imgstat_dataset_set_exact_note(run->ds, note);
    return IMGSTAT_OK;
  }
  imgstat_dataset_pass p;
  memset(&p, 0, sizeof p);
  p.ctx = run;
  p.next = exact_next;
  p.load = &o->engine.load;
  p.workers = run->info.workers;
  p.budget = o->max_inflight;
  p.cancel = o->cancel;
  p.valid = exact_valid;
  run->reread = 0;
  uint64_t limit = o->engine.load.max_memory ? o->engine.load.max_memory
                                             : IMGSTAT_DEFAULT_MAX_MEMORY;
  imgstat_status s = imgstat_dataset_float_exact(
      &p, run->ds, o->request.percentiles, o->request.npercentiles, limit,
      cancelled, err);
  if (s != IMGSTAT_OK && !err->message[0])
    imgstat_error_set(err, s, "out of memory");
  return s;
}

/* ---- one input on a worker ----------------------------------------------- */

/* What a worker hands back for one input. */
typedef struct item_result {
  imgstat_job_result res;
  int cancelled; /* the run was cancelled before the input was decoded */
  /* what the pool takes beside the job's result (dataset_extra.h) */
  ist_dataset_extra ds;
  /* the valid samples of a float image could not be taken (ds_why) */
  int ds_failed;
  char ds_why[IMGSTAT_ERROR_MAX];
  void *extra; /* the image callback's */
  /* handed to the engine's device stage: completed from its thread */
  imgstat_task_pending *pending;
} item_result;

/* The pool's extra work on a decoded image (in the worker); what fails is
 * left out (an image whose luma could not be made fails at its delivery). */
static void dataset_work(const imgstat_run *run, const imgstat_image *img,
                         const imgstat_stats_request *req, item_result *r) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  /* a float image's pooled histograms: of its valid samples alone */
  imgstat_image valid;
  memset(&valid, 0, sizeof valid);
  if (img->sample == IMGSTAT_F32 && run->opt.ds.histograms &&
      imgstat_engine_valid_copy(run->engine, img, req, &valid, &err) !=
          IMGSTAT_OK) {
    r->ds_failed = 1;
    snprintf(r->ds_why, sizeof r->ds_why, "%s",
             err.message[0] ? err.message : "out of memory");
    return;
  }
  ist_dataset_extra_compute(&run->opt.ds, valid.width ? &valid : img,
                            run->engine, req, &r->ds, &err);
  imgstat_image_free(&valid);
}

/* Adds a delivered input to the pool, in input order; a failure's message
 * in it->dataset_error (the pool's words: a front end says it is the
 * dataset's), with its cause. */
static void dataset_add(imgstat_run *run, const imgstat_input *in,
                        const item_result *r, imgstat_run_item *it) {
  char *why = it->dataset_error;
  size_t size = sizeof it->dataset_error;
  const imgstat_job_result *res = &r->res;
  /* the input's place in the whole list (MPI: not the batch's index) */
  if (res->status != IMGSTAT_OK) {
    imgstat_dataset_add_failed(run->ds, in->index);
    return;
  }
  if ((res->has_nodata || res->masked) && r->ds_failed) {
    snprintf(why, size, "%s", r->ds_why);
    imgstat_dataset_add_failed(run->ds, in->index);
    return;
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (ist_dataset_extra_add(run->ds, in->index, in->path, res, &r->ds, &err) !=
      IMGSTAT_OK) {
    snprintf(why, size, "%s", err.message[0] ? err.message : "out of memory");
    it->dataset_cause = err.cause;
    it->dataset_what = err.what;
    imgstat_dataset_add_failed(run->ds, in->index);
  }
}

/* ---- MPI: the dynamic deal ------------------------------------------------
 */

/* Rank 0's next chunk: deal_fixed items, else guided: an 8 · ranks-th of
 * what is left (at least one, at most DEAL_MAX), so that the chunks are
 * small at the end, where a rank's last chunk decides when it ends, and
 * no first chunk holds so much of the list that the costly files of one
 * folder (the list's order is the paths') fall to one rank: a 2 · ranks-th
 * gave rank 0 of 2 all of 100 large PNGs that led 300 small ones (it ended
 * 5.7 s after rank 1). DEAL_MAX bounds that at scale; rank 0 then answers
 * a request per DEAL_MAX inputs a rank runs (256 cost tiny images a third
 * of a rank's time in the waits for answers on the shared 2-core VM,
 * one worker a rank). */
#define DEAL_MAX 1024
/* Bytes of JPEGs a rank's device stage holds read ahead, a device
 * (see imgstat_run_execute) */
#define MPI_JPEG_AHEAD (UINT64_C(512) << 20)

/* Rank 0, dealing while it walks: takes up to max more walked inputs into
 * the list (the walk reads folders ahead on its threads); at the walk's
 * end the list is whole and the walker goes. Its time counts where it is
 * called from (next_input's walk, deliver_input's delivery). */
static void walk_more(imgstat_run *run, size_t max) {
  if (!run->walker || run->walk_done || max == 0)
    return;
  int done = 0;
  imgstat_status s = imgstat_inputs_collect_more(
      run->walker, &run->list, &run->list_cap, max, &done, &run->walk_err);
  run->pass = run->list;
  run->deal_total = run->list_base + run->list.count;
  if (run->list.count > run->list_peak)
    run->list_peak = run->list.count;
  if (s != IMGSTAT_OK) {
    run->walk_failed = s;
    done = 1;
  }
  if (done) {
    run->walk_done = 1;
    imgstat_inputs_destroy(run->walker);
    run->walker = NULL;
    run->mpi.list_s = run_since(&run->work_t0);
  }
}

/* Rank 0 letting go of the dealt entries (list_release): frees those
 * before deal_next (its own chunks were copied into its iterator, the
 * other ranks' packed and sent) once they are at least DEAL_MAX and an
 * eighth of the entries after them, which move to the front (the moves
 * cost at most eight pointers an entry freed): the list holds what is
 * walked and not yet dealt, an eighth more and a chunk or two, whatever
 * its length. */
static void release_dealt(imgstat_run *run) {
  size_t dealt = (size_t)(run->deal_next - run->list_base);
  size_t rest = run->list.count - dealt;
  if (!run->list_release || dealt < DEAL_MAX || dealt < rest / 8)
    return;
  for (size_t k = 0; k < dealt; k++)
    imgstat_input_free(run->list.items[k]);
  memmove(run->list.items, run->list.items + dealt,
          rest * sizeof *run->list.items);
  run->list.count = rest;
  run->list_base += dealt;
  run->pass = run->list;
}

static void deal_chunk(void *ctx, uint64_t *first, uint64_t *count,
                       void **bytes, size_t *size) {
  imgstat_run *run = ctx;
  release_dealt(run);
  /* while the walk goes on, "what is left" is what it has walked and not
   * dealt; none walked yet (or fewer than a fixed chunk): walk on */
  uint64_t need = run->deal_fixed ? run->deal_fixed : 1;
  while (run->walker && !run->deal_stop &&
         run->deal_total - run->deal_next < need)
    walk_more(run, (size_t)(need - (run->deal_total - run->deal_next)));
  int walked = !run->walking || run->walk_done;
  uint64_t left =
      run->deal_stop || run->walk_failed ? 0 : run->deal_total - run->deal_next;
  uint64_t parts = 8 * (uint64_t)run->info.at.size;
  uint64_t c = run->deal_fixed ? run->deal_fixed : (left + parts - 1) / parts;
  if (!run->deal_fixed && c > DEAL_MAX)
    c = DEAL_MAX;
  if (c > left)
    c = left;
  *first = run->deal_next;
  *count = c;
  run->deal_next += c;
  if (bytes && !walked)
    run->walk_dealt += c;
  if (bytes && run->deal_names && c > 0) { /* the items, for another rank */
    imgstat_input_list view = {run->list.items + (*first - run->list_base),
                               (size_t)c, 0};
    unsigned char *packed = NULL;
    imgstat_error err;
    if (imgstat_input_list_pack(&view, &packed, size, &err) == IMGSTAT_OK)
      *bytes = packed;
    else /* that rank fails for want of its items */
      *size = 0;
  }
}

/* Rank 0 answers the requests waiting now (from the thread that runs the
 * batch's loop: MPI's thread). A failure is left to the final serve. */
static void deal_serve(imgstat_run *run) {
  if (run->info.at.rank != 0 || run->deal_open == 0)
    return;
  imgstat_error err;
  imgstat_mpi_deal_serve(run->opt.mpi, 0, deal_chunk, run, &run->deal_open,
                         &err);
}

/* The batch's idle callback: rank 0 answers while its loop waits. */
static void deal_idle(void *ctx) { deal_serve(ctx); }

/* The next chunk for this rank (rank 0 takes its own); the iterator moved
 * to its first item. deal_done once none is left. */
static imgstat_status deal_take(imgstat_run *run, imgstat_error *err) {
  uint64_t first = 0, count = 0;
  imgstat_status s = IMGSTAT_OK;
  void *bytes = NULL;
  size_t size = 0;
  if (run->info.at.rank == 0)
    deal_chunk(run, &first, &count, NULL, NULL);
  else
    s = imgstat_mpi_deal_ask(run->opt.mpi, 0, &first, &count, &bytes, &size,
                             err);
  if (s == IMGSTAT_OK && count > 0 && run->deal_names &&
      run->info.at.rank == 0) {
    /* its own chunk, from the list (walked so far, while it walks) */
    imgstat_input_list view = {run->list.items + (first - run->list_base),
                               (size_t)count, run->list.max_member};
    imgstat_inputs *next = NULL;
    s = imgstat_inputs_from_list(&view, &next, err);
    if (s == IMGSTAT_OK) {
      imgstat_inputs_destroy(run->inputs);
      run->inputs = next;
      run->pos = first;
    }
  } else if (s == IMGSTAT_OK && count > 0 && run->deal_names &&
             run->info.at.rank > 0) {
    /* the chunk's items, this rank's only list */
    imgstat_input_list chunk = {NULL, 0, 0};
    s = bytes ? imgstat_input_list_unpack(bytes, size, &chunk, err)
              : imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                                  "rank 0 could not send a chunk's inputs");
    if (s == IMGSTAT_OK && chunk.count != count)
      s = imgstat_error_set(err, IMGSTAT_ERR_IO,
                            "a chunk of %llu inputs came with %zu",
                            (unsigned long long)count, chunk.count);
    chunk.max_member = run->opt.engine.load.max_memory;
    imgstat_inputs *next = NULL;
    if (s == IMGSTAT_OK)
      s = imgstat_inputs_from_list(&chunk, &next, err);
    imgstat_input_list_free(&chunk);
    if (s == IMGSTAT_OK) {
      imgstat_inputs_destroy(run->inputs);
      run->inputs = next;
      run->pos = first;
    }
  }
  free(bytes);
  /* told that none is left; a chunk that could not be taken leaves the
   * run (its next_input fails), and deal_end then says it takes no more */
  if (count == 0 && s == IMGSTAT_OK)
    run->deal_done = 1;
  if (s != IMGSTAT_OK || count == 0)
    return s;
  if (first > run->pos) /* other ranks' chunks: not read */
    s = imgstat_inputs_skip(run->inputs, first - run->pos, err);
  run->pos = first;
  run->chunk_at = first;
  run->chunk_end = first + count;
  run->mpi.chunks++;
  return s;
}

/* After this rank's batch: rank 0 answers until every rank has been told
 * that none is left (dealing no more when its own run stopped: stop);
 * a rank that stopped before it was told says it takes no more. */
static imgstat_status deal_end(imgstat_run *run, int stop, imgstat_error *err) {
  if (run->info.at.rank == 0) {
    run->deal_stop = run->deal_stop || stop;
    return imgstat_mpi_deal_serve(run->opt.mpi, 1, deal_chunk, run,
                                  &run->deal_open, err);
  }
  if (run->deal_done)
    return IMGSTAT_OK;
  run->deal_done = 1;
  uint64_t first, count;
  return imgstat_mpi_deal_ask(run->opt.mpi, 1, &first, &count, NULL, NULL, err);
}

/* The inputs of this run so far (under MPI: this rank's share) and whether
 * that is all of them. */
static int inputs_total(const imgstat_run *run, uint64_t *total) {
  if (run->info.mpi_dealt) { /* taken so far */
    *total = run->mpi.items + (run->chunk_end - run->chunk_at);
    return run->deal_done;
  }
  if (run->share) {
    *total = run->share_end - run->share_first;
    return 1;
  }
  return imgstat_inputs_total(run->inputs, total);
}

static imgstat_status next_input(void *ctx, void **item, imgstat_error *err) {
  imgstat_run *run = ctx;
  imgstat_input *in = NULL;
  imgstat_status s = IMGSTAT_OK;
  uint64_t t0 = run->stage_times ? now_ns() : 0;
  if (run->info.mpi_dealt) {
    /* rank 0 walks on between its inputs, so that the chunks grow and
     * the walk ends early: up to walk_ahead names, for about a
     * millisecond at most (a slow folder or list would keep the other
     * ranks' requests waiting) */
    uint64_t w0 = run->walker ? now_ns() : 0;
    for (size_t k = 0;
         k < run->walk_ahead && run->walker &&
         (!run->ahead_max || run->deal_total - run->deal_next < run->ahead_max);
         k++) {
      walk_more(run, 1);
      if (now_ns() - w0 > 1000000)
        break;
    }
    deal_serve(run);
    if (run->chunk_at == run->chunk_end && !run->deal_done)
      s = deal_take(run, err);
    if (s == IMGSTAT_OK && run->walk_failed) {
      *err = run->walk_err;
      s = run->walk_failed;
    }
    if (s == IMGSTAT_OK && run->chunk_at < run->chunk_end) {
      s = imgstat_inputs_next(run->inputs, &in, err);
      run->chunk_at++;
      run->pos++;
      run->mpi.items++;
    }
  } else if (!run->share || run->fed++ < run->share_end - run->share_first) {
    s = imgstat_inputs_next(run->inputs, &in, err);
  }
  /* the walk runs ahead: the progress figures' total, auto's rule */
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_prefetch(run->inputs, 4096, err);
  if (run->stage_times)
    run->walk_ns += now_ns() - t0;
  uint64_t total = 0;
  inputs_total(run, &total);
  if (run->info.mpi_dealt) /* auto's rule: about a rank's part (while
                            * rank 0 walks, of the part walked so far:
                            * at least its chunks' end on the others) */
    total = (run->walking && run->info.at.rank > 0 ? run->chunk_end
                                                   : run->deal_total) /
            (uint64_t)run->info.at.size;
  imgstat_engine_set_workload(run->engine, total);
  *item = in;
  return s;
}

/* The reservation of an input that the engine decodes on the GPU. */
typedef struct gpu_reserve {
  imgstat_task *task;
  uint64_t bytes;
} gpu_reserve;

static int reserve_for_gpu(void *ctx, uint64_t bytes) {
  gpu_reserve *r = ctx;
  r->bytes = bytes;
  return imgstat_task_reserve(r->task, bytes);
}

static int reserve_task(void *ctx, uint64_t bytes) {
  return imgstat_task_reserve(ctx, bytes);
}

/* The engine's device stage finished an item handed to it. */
static void stage_finished(void *ctx, int cancelled) {
  item_result *r = ctx;
  if (cancelled)
    r->cancelled = 1;
  imgstat_task_complete(r->pending);
}

/* A JPEG file the engine may decode on the GPU (nvJPEG): its decoder
 * opened and offered. Returns 1 when the item is done or handed to the
 * engine's device stage (then delivered once the stage completes it), 0
 * when the caller decodes it on the CPU as usual. */
static int offer_to_gpu(imgstat_run *run, imgstat_task *task,
                        const imgstat_input *in, item_result *r) {
  imgstat_job_result *res = &r->res;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_decoder *d = NULL;
  int cancelled;
  uint64_t t0 = run->stage_times ? now_ns() : 0;
  imgstat_status s =
      imgstat_task_open(task, in, &run->opt.engine.load, &d, &cancelled, &err);
  if (run->stage_times)
    atomic_fetch_add(&run->read_ns, now_ns() - t0);
  if (s != IMGSTAT_OK) {
    imgstat_task_reserve(task, 0);
    if (cancelled)
      r->cancelled = 1;
    else
      imgstat_job_result_fail(res, IMGSTAT_STAGE_LOAD, s, &err);
    return 1;
  }
  const imgstat_header *h = imgstat_decoder_header(d);
  int taken = 0;
  /* --dataset --as gray: the CPU makes the luma from host pixels */
  int gray = run->ds && imgstat_dataset_needs_gray(&run->opt.ds, h->channels);
  if (!gray && !run->opt.engine.verify) {
    /* the streaming stage: this worker goes on with the next file */
    r->pending = imgstat_task_defer(task);
    taken = imgstat_engine_stats_decoder_async(run->engine, d, in->path,
                                               &run->opt.request, reserve_task,
                                               task, res, stage_finished, r);
    if (taken != 2) { /* else the engine's stage completes the item */
      imgstat_task_complete(r->pending);
      r->pending = NULL;
    }
    if (taken < 0)
      r->cancelled = 1;
    /* 1, 2: the file's bytes held until the delivery */
  } else if (!gray) {
    gpu_reserve gr = {task, 0};
    taken = imgstat_engine_stats_decoder(
        run->engine, d, in->path, &run->opt.request, reserve_for_gpu, &gr, res);
    if (taken < 0)
      r->cancelled = 1;
    else if (taken)
      imgstat_task_release(task, gr.bytes);
  }
  imgstat_decoder_close(d);
  return taken != 0;
}

/* What a statistics item reduced as its file is read reserves from the
 * budget: the decoded size, at most this (a window of strips or tiles a
 * thread, not the image). */
#define STREAM_RESERVE ((uint64_t)256 << 20)

/* One input on a worker: the header read, the decoded size reserved from
 * the budget, the pixels decoded, then the statistics by the engine (a JPEG
 * that the engine decodes on the GPU: all of it there). */
static void work_input(void *ctx, imgstat_task *task, void *item,
                       void *result) {
  imgstat_run *run = ctx;
  const imgstat_input *in = item;
  item_result *r = result;
  imgstat_job_result *res = &r->res;
  /* nodata values and masks: the CPU's valid-sample reduction, never
   * nvJPEG's device planes */
  int valid = run->opt.mask || run->opt.labels || run->opt.request.nnodata > 0;
  int gpu_jpeg = !valid && imgstat_engine_may_decode_jpeg(run->engine);
  if (run->needs_gpu && in->kind != IMGSTAT_INPUT_ERROR &&
      !(in->kind == IMGSTAT_INPUT_FILE && gpu_jpeg)) {
    /* no decoding for an item that cannot run (a JPEG offered to the GPU
     * decoder waits for the decision in the engine, after the checks that
     * overlap the GPU's start-up) */
    if (imgstat_engine_decide(run->engine, res) != IMGSTAT_OK) {
      imgstat_task_reserve(task, 0);
      return;
    }
    imgstat_job_result_free(res);
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  /* (the engine reopens a JPEG that nvJPEG refuses on the CPU: not one
   * that can be read only once) */
  if (in->kind == IMGSTAT_INPUT_FILE && !in->read_once && gpu_jpeg &&
      offer_to_gpu(run, task, in, r))
    return;
  imgstat_stats_request req = run->opt.request;
  char *mask = NULL, *labels = NULL;
  if (in->kind != IMGSTAT_INPUT_ERROR &&
      (ist_pair_path(run->masks, in, &mask, &err) != IMGSTAT_OK ||
       ist_pair_path(run->labels, in, &labels, &err) != IMGSTAT_OK)) {
    free(mask);
    imgstat_task_reserve(task, 0);
    imgstat_job_result_fail(res, IMGSTAT_STAGE_LOAD, err.status, &err);
    return;
  }
  req.mask_path = mask;
  req.mask_shared = ist_pairs_one_file(run->masks);
  req.labels_path = labels;
  imgstat_image img;
  uint64_t reserved;
  int cancelled = 0;
  imgstat_decoder *d = NULL;
  imgstat_status s = IMGSTAT_OK;
  /* statistics alone of a file that can be reduced as it is read: without
   * the decoded image (a TIFF page's strips or tiles, on the CPU backend) */
  if (run->stream_stats && in->kind == IMGSTAT_INPUT_FILE && !run->ds &&
      !run->cb->image) {
    s = imgstat_task_open(task, in, &run->opt.engine.load, &d, &cancelled,
                          &err);
    if (s == IMGSTAT_OK && ist_engine_streams(run->engine, d, &req)) {
      /* what a thread's window of strips or tiles may hold, at most */
      const imgstat_header *h = imgstat_decoder_header(d);
      uint64_t bytes = (uint64_t)h->width * h->height * (uint64_t)h->channels *
                       (uint64_t)(imgstat_sample_depth(h->sample) / 8);
      reserved = bytes < STREAM_RESERVE ? bytes : STREAM_RESERVE;
      if (!imgstat_task_reserve(task, reserved)) {
        imgstat_decoder_close(d);
        r->cancelled = 1;
        free(mask);
        free(labels);
        return;
      }
      ist_engine_stats_streamed(run->engine, d, &req, res);
      imgstat_decoder_close(d);
      free(mask);
      free(labels);
      imgstat_task_release(task, reserved);
      return;
    }
  }
  if (d)
    s = ist_task_decode_opened(task, in, d, 0, &img, &reserved, &cancelled,
                               &err);
  else if (s == IMGSTAT_OK)
    s = imgstat_task_decode(task, in, &run->opt.engine.load, 0, &img, &reserved,
                            &cancelled, &err);
  else /* as imgstat_task_decode: nothing reserved, later items go on */
    imgstat_task_reserve(task, 0);
  if (cancelled) {
    r->cancelled = 1;
    free(mask);
    free(labels);
    return;
  }
  if (s != IMGSTAT_OK) {
    imgstat_job_result_fail(res, IMGSTAT_STAGE_LOAD, s, &err);
    free(mask);
    free(labels);
    return;
  }
  int ok = imgstat_engine_stats(run->engine, in->path, &img, &req, res) ==
           IMGSTAT_OK;
  if (ok && run->ds)
    dataset_work(run, &img, &req, r);
  free(mask);
  free(labels);
  if (run->cb->image)
    r->extra = run->cb->image(run->cb->ctx, in, &img, res);
  imgstat_image_free(&img);
  imgstat_task_release(task, reserved);
}

/* The batch runner's word that no work will run any more: the engine's
 * device stage stops waiting for fuller batches and closes its lanes as
 * they run dry. */
static void input_drained(void *ctx) {
  imgstat_run *run = ctx;
  imgstat_engine_input_end(run->engine);
}

static int deliver_input(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  imgstat_run *run = ctx;
  imgstat_input *in = item;
  item_result *r = result;
  (void)index;
  uint64_t t0 = run->stage_times ? now_ns() : 0;
  int stop = 0;
  if (run->info.mpi_dealt)
    deal_serve(run);
  if (ran && !r->cancelled) {
    imgstat_run_item it;
    it.input = in;
    it.result = &r->res;
    it.extra = r->extra;
    it.dataset_error[0] = '\0';
    it.dataset_cause = IMGSTAT_CAUSE_NONE;
    it.dataset_what = NULL;
    if (run->ds)
      dataset_add(run, in, r, &it);
    run->progress.done++;
    if (r->res.status != IMGSTAT_OK)
      run->progress.failed++;
    if (in->size_known)
      run->progress.bytes_in += in->size;
    run->progress.total_known = inputs_total(run, &run->progress.total);
    if (run->cb->item)
      stop = run->cb->item(run->cb->ctx, &it, &run->progress);
  }
  imgstat_job_result_free(&r->res);
  ist_dataset_extra_free(&r->ds);
  if (r->extra && run->cb->free_extra)
    run->cb->free_extra(run->cb->ctx, r->extra);
  imgstat_input_free(in);
  if (run->stage_times)
    atomic_fetch_add(&run->deliver_ns, now_ns() - t0);
  return stop;
}

/* ---- MPI: each rank's share, the merge of the accumulators --------------- */

/* Walks the whole list (names only) and takes this rank's share: the items
 * before it are dropped, next_input stops at its end. */
static imgstat_status take_share(imgstat_run *run, imgstat_error *err) {
  imgstat_status s = imgstat_inputs_prefetch(run->inputs, SIZE_MAX, err);
  uint64_t total = 0;
  imgstat_inputs_total(run->inputs, &total);
  if (run->info.mpi_dealt) { /* chunks as the ranks ask: next_input */
    if (!run->deal_names)    /* else the count rank 0 walked and sent */
      run->deal_total = total;
    run->deal_fixed =
        (uint64_t)ist_env_count("IMGSTAT_MPI_DEAL_CHUNK", 0, 0, INT64_MAX);
    /* letting go of the dealt entries, rank 0 walks ahead no further than
     * the guided chunks need to be their largest (8 · ranks of them) */
    if (run->list_release)
      run->ahead_max = 8 * (uint64_t)run->info.at.size *
                       (run->deal_fixed ? run->deal_fixed : DEAL_MAX);
    /* IMGSTAT_MPI_WALK_AHEAD=N: the names rank 0 walks between its own
     * inputs (0: only as the ranks' chunks need them; for tests and
     * measurements) */
    run->walk_ahead =
        (size_t)ist_env_count("IMGSTAT_MPI_WALK_AHEAD", 256, 0, INT64_MAX);
    run->share = 1;
    return s;
  }
  imgstat_mpi_share(total, run->info.at.rank, run->info.at.size,
                    &run->share_first, &run->share_end);
  if (s == IMGSTAT_OK) /* an archive's members before it are not read */
    s = imgstat_inputs_skip(run->inputs, run->share_first, err);
  run->share = 1;
  return s;
}

/* ---- the run ------------------------------------------------------------- */

imgstat_status imgstat_run_execute(imgstat_run *run,
                                   const imgstat_run_callbacks *cb,
                                   imgstat_run_report *report,
                                   imgstat_error *err) {
  static const imgstat_run_callbacks none;
  imgstat_run_report rep;
  memset(&rep, 0, sizeof rep);
  if (!run || run->executed) {
    if (report)
      *report = rep;
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_run_execute: no run, or run twice");
  }
  run->executed = 1;
  run->cb = cb ? cb : &none;
  if (run->norm) {
    imgstat_status s = ist_norm_run_execute(run->norm, run->cb, &rep, err);
    if (report)
      *report = rep;
    return s;
  }
  const imgstat_run_options *o = &run->opt;
  /* rank 0 deals to every other rank, even when its own set-up fails */
  if (o->mpi && run->info.mpi_dealt && run->info.at.rank == 0)
    run->deal_open = run->info.at.size - 1;
  /* With MPI, a rank whose set-up fails still takes part in the
   * collectives, with nothing to add. */
  imgstat_status s = imgstat_engine_create(&o->engine, &run->engine, err);
  if (s != IMGSTAT_OK) {
    rep.set_up_failed = 1;
    rep.failed_in = IMGSTAT_RUN_STEP_SET_UP;
  }
  if (run->info.range_pass && s == IMGSTAT_OK) {
    int cancelled = 0;
    s = range_pass(run, &cancelled, err);
    if (s != IMGSTAT_OK || cancelled) {
      rep.range_stopped = 1;
      rep.cancelled = cancelled;
      if (s != IMGSTAT_OK)
        rep.failed_in = IMGSTAT_RUN_STEP_RANGE;
      if (report)
        *report = rep;
      return s;
    }
  }
  if (o->dataset && s == IMGSTAT_OK) {
    run->opt.ds.histograms = o->request.histograms;
    s = imgstat_dataset_create(&run->opt.ds, &run->ds, err);
    if (s != IMGSTAT_OK) {
      rep.set_up_failed = 1;
      rep.failed_in = IMGSTAT_RUN_STEP_SET_UP;
    }
  }
  memset(&run->progress, 0, sizeof run->progress);
  run->progress.pass = 2;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (o->mpi && s == IMGSTAT_OK) {
    s = take_share(run, err);
    if (s != IMGSTAT_OK)
      rep.failed_in = IMGSTAT_RUN_STEP_SET_UP;
    run->mpi.share_s = run_since(&t0);
    run->mpi.share_first = run->share_first;
    run->mpi.share_end = run->share_end;
    run->mpi.list_held = run->list_peak;
  }
  clock_gettime(CLOCK_MONOTONIC, &t0);
  run->work_t0 = t0;
  if (s == IMGSTAT_OK) {
    imgstat_batch_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = run->info.workers;
    cfg.budget = o->max_inflight;
    /* JPEGs handed to the device stage wait there in their slots: room for
     * several batches (the budget still bounds their bytes) */
    if (run->jpeg_stage && run->info.workers != 1)
      cfg.window = 4 * (size_t)run->info.workers < 1024
                       ? 1024
                       : 4 * (size_t)run->info.workers;
    /* MPI, dealt: a rank takes its inputs as its workers start them and
     * reads ahead at most MPI_JPEG_AHEAD bytes of JPEGs a device (not the
     * default budget's gigabytes), so that the inputs go to the ranks that
     * use them: rank 0 of two, on its own GPU, took 574 of 600 photos in
     * its first milliseconds and ended 1.0 s after rank 1
     * (docs/benchmarks.md); rank 0 answers requests while it waits.
     * IMGSTAT_MPI_GREEDY=1: the feeding as it was (a measurement's knob) */
    if (run->info.mpi_dealt &&
        ist_env_count("IMGSTAT_MPI_GREEDY", 0, 0, 1) == 0) {
      cfg.queue = 2 * (size_t)(run->info.workers > 0 ? run->info.workers : 1);
      cfg.idle = deal_idle;
      if (run->jpeg_stage && !o->max_inflight)
        cfg.budget =
            MPI_JPEG_AHEAD *
            (uint64_t)(o->engine.ndevices > 1 ? o->engine.ndevices : 1);
    }
    cfg.result_size = sizeof(item_result);
    cfg.ctx = run;
    cfg.next = next_input;
    cfg.work = work_input;
    cfg.deliver = deliver_input;
    cfg.drained = input_drained;
    cfg.cancel = o->cancel;
    imgstat_batch_report br;
    memset(&br, 0, sizeof br);
    s = imgstat_batch_run(&cfg, &br, err);
    if (s != IMGSTAT_OK && !err->message[0])
      imgstat_error_set(err, s, "out of memory");
    if (s != IMGSTAT_OK)
      rep.failed_in = IMGSTAT_RUN_STEP_WORKERS;
    rep.cancelled = br.cancelled;
  }
  if (o->mpi && run->info.mpi_dealt) {
    /* every rank told that none is left, even one whose set-up failed */
    imgstat_error derr;
    memset(&derr, 0, sizeof derr);
    imgstat_status d = deal_end(run, s != IMGSTAT_OK || rep.cancelled, &derr);
    if (d == IMGSTAT_OK && run->walk_failed) { /* the list is not whole */
      derr = run->walk_err;
      d = run->walk_failed;
    }
    if (d != IMGSTAT_OK && s == IMGSTAT_OK) {
      *err = derr;
      s = d;
      rep.failed_in = IMGSTAT_RUN_STEP_WORKERS;
    }
  }
  if (o->mpi) {
    run->mpi.work_s = run_since(&t0);
    run->mpi.list_held = run->list_peak; /* walked in the run, dealt */
    run->mpi.walk_dealt = run->walk_dealt;
    run->mpi.work_end_s = run_since(&run->created);
  }
  rep.dataset_ok = run->ds && s == IMGSTAT_OK;
  if (o->mpi && o->dataset) {
    imgstat_error rerr;
    memset(&rerr, 0, sizeof rerr);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    imgstat_status r =
        ist_run_reduce_dataset(run->opt.mpi, &run->opt.ds, &run->ds, &rerr);
    run->mpi.reduce_s = run_since(&t0);
    if (r != IMGSTAT_OK) {
      rep.dataset_ok = 0;
      rep.merge_failed = 1;
      if (s == IMGSTAT_OK) {
        *err = rerr;
        s = r;
        rep.failed_in = IMGSTAT_RUN_STEP_MERGE;
      }
    }
  }
  if (s == IMGSTAT_OK && rep.dataset_ok && o->request.histograms &&
      !rep.cancelled && (!o->mpi || run->info.at.rank == 0)) {
    int cancelled = 0;
    imgstat_error xerr;
    memset(&xerr, 0, sizeof xerr);
    /* a failure leaves the percentiles within one bin, saying why */
    char note[160];
    if (exact_pass(run, &cancelled, &xerr) != IMGSTAT_OK || cancelled) {
      snprintf(note, sizeof note, "float percentiles within one bin: %.100s",
               cancelled ? "the second read was cancelled" : xerr.message);
      imgstat_dataset_set_exact_note(run->ds, note);
    }
    rep.cancelled = cancelled;
  }
  if (report)
    *report = rep;
  return s;
}

imgstat_status imgstat_run_dataset_finish(const imgstat_run *run, int ddof,
                                          imgstat_dataset_result *out,
                                          imgstat_error *err) {
  if (!run || !run->ds)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "the run has no dataset");
  imgstat_status s = imgstat_dataset_finish(run->ds, ddof, out, err);
  if (s == IMGSTAT_OK)
    ist_run_sample_note(out, run->opt.sample, run->opt.seed, run->sample_of);
  return s;
}

const imgstat_dataset_options *
imgstat_run_dataset_options(const imgstat_run *run) {
  return &run->opt.ds;
}

void imgstat_run_shutdown(imgstat_run *run) {
  if (run && engine_of(run))
    imgstat_engine_shutdown(engine_of(run));
}

int imgstat_run_gpu_started(imgstat_run *run) {
  return run && engine_of(run) && imgstat_engine_gpu_started(engine_of(run));
}

void imgstat_run_times(const imgstat_run *run, imgstat_engine_times *engine,
                       double *read_s, double *deliver_s) {
  imgstat_engine_times_get(engine_of(run), engine);
  *read_s = 1e-9 * (double)atomic_load(&run->read_ns);
  *deliver_s = 1e-9 * (double)atomic_load(&run->deliver_ns);
}

void imgstat_run_mpi_times_get(const imgstat_run *run,
                               imgstat_run_mpi_times *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (run && run->opt.mpi)
    *out = run->mpi;
}

double imgstat_run_walk_seconds(const imgstat_run *run) {
  return 1e-9 * (double)run->walk_ns;
}
