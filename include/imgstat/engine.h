/*
 * imgstat's job layer: one input's work as a value.
 *
 * An engine holds what a run shares: the backend policy (auto / cpu / gpu),
 * the GPU context (started on a thread of its own so that CUDA's start-up
 * overlaps the first decode) and the options of every item. Each item --
 * the statistics of one image (with histograms, and with --verify both
 * backends' partials), or one normalization -- is one call that returns a
 * result value: its status, the reason in words, what it computed, which
 * backend computed it and the warnings to show. Nothing here prints: the
 * caller shows the warnings and the error, in the order of the items.
 *
 * The backend policy, in one place:
 *  - cpu: the CPU only; the GPU is never started.
 *  - gpu (or verify): the GPU is needed. When it cannot be started, every
 *    item fails with "--backend gpu needs a usable GPU: REASON" (verify:
 *    "--verify needs a usable GPU: REASON"); once that is known, items fail
 *    without decoding their input. A GPU failure on one item fails that
 *    item only ("GPU failed: REASON"; verify: "--verify: GPU failed:
 *    REASON"); the context stays for the next.
 *  - auto: the CPU until the cost rule below picks the GPU; then the GPU
 *    once it has started, else the CPU: quietly when there is no
 *    device (IMGSTAT_ERR_NODEVICE), with one engine warning "GPU unusable
 *    (REASON); using the CPU" when there is one that fails. A GPU failure on
 *    one item gives the warning "GPU failed (REASON); using the CPU" about
 *    that item, and the item is computed again on the CPU.
 *  - A GPU refusal of the item itself (IMGSTAT_ERR_ARG: options that do not
 *    fit the image) is not a GPU failure: the item fails with the reason, as
 *    the CPU would refuse it too.
 *  - Histograms are computed where the statistics were; a GPU failure there
 *    follows the same rule (auto: a warning, then the CPU).
 * The texts name the options as the command line spells them.
 *
 * An engine may be used from several threads: the start-up is waited for
 * once, and GPU calls are made one at a time.
 */
#ifndef IMGSTAT_ENGINE_H
#define IMGSTAT_ENGINE_H

#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"
#include "imgstat/norm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum imgstat_backend {
  IMGSTAT_BACKEND_AUTO = 0, /* the GPU when one is usable, else the CPU */
  IMGSTAT_BACKEND_CPU,
  IMGSTAT_BACKEND_GPU
} imgstat_backend;

/* "auto", "cpu" or "gpu". */
const char *imgstat_backend_name(imgstat_backend backend);

/* The backend named name ("auto", "cpu" or "gpu"): returns 1 and sets *out,
 * or 0 and leaves it. */
int imgstat_backend_from_name(const char *name, imgstat_backend *out);

/* ---- auto's cost rule
 * -------------------------------------------------------- With backend auto
 * the engine starts CUDA only when the work in hand can repay it. Until then,
 * and for a run that never repays it (one photo, a handful), every item runs on
 * the CPU and CUDA is never touched.
 *
 * The rule compares, for the bytes of samples still to come (G GB), the
 * wall time of the work that differs between the two backends:
 *   CPU: G * cpu_s_per_gb / workers        (every worker computes)
 *   GPU: fixed_s + G * gpu_s_per_gb / min(workers, devices)
 *        (each device takes one item at a time: the upload of host pixels,
 *         the kernels and the results)
 * and picks the GPU when its time is the smaller. Decoding costs the same
 * either way and is left out. The figures are measured per kind of work
 * and sample type (imgstat_cost_model_measured, docs/benchmarks.md says
 * where and how); G is the current item's bytes times the items expected
 * to remain (imgstat_engine_set_workload; unknown: as many as seen so
 * far). Once picked, the GPU stays; the items that arrive while CUDA starts
 * (on a thread of its own) run on the CPU. */

typedef enum imgstat_work_kind {
  IMGSTAT_WORK_STATS = 0,  /* the statistics */
  IMGSTAT_WORK_HISTOGRAMS, /* the statistics and histograms */
  IMGSTAT_WORK_NORMALIZE,  /* a normalization */
  /* The statistics of a JPEG decoded where they are computed: the CPU's
   * figures include TurboJPEG's decode, the GPU's nvJPEG's, with no upload
   * (the pixels are made on the device); per GB of decoded samples. */
  IMGSTAT_WORK_JPEG_DECODE,
  IMGSTAT_WORK_KINDS
} imgstat_work_kind;

typedef struct imgstat_cost_model {
  /* CUDA's start-up and its tear-down at the end of the process, s */
  double fixed_s;
  /* seconds per GB of samples by kind and sample type (u8, u16, f32): the
   * CPU on one core; one GPU device fed from host memory */
  double cpu_s_per_gb[IMGSTAT_WORK_KINDS][3];
  double gpu_s_per_gb[IMGSTAT_WORK_KINDS][3];
} imgstat_cost_model;

/* The model measured on the GPU host (docs/benchmarks.md, "auto's rule"). */
const imgstat_cost_model *imgstat_cost_model_measured(void);

/* The rule: 1 when the GPU repays its fixed cost over gb GB of samples of
 * the given kind and type with `workers` CPU workers and `devices` GPUs;
 * model NULL: the measured one. */
int imgstat_cost_gpu_pays(const imgstat_cost_model *model,
                          imgstat_work_kind kind, imgstat_sample sample,
                          double gb, int workers, int devices);

/* Where JPEG inputs are decoded (--jpeg-decoder). */
typedef enum imgstat_jpeg_decoder {
  /* the CPU decoders, as IMGSTAT_JPEG_DECODER_CPU: nvJPEG's start-up
   * repays itself only on very large runs, and a decoder picked by the
   * run's size would change a photo's record with its neighbours */
  IMGSTAT_JPEG_DECODER_AUTO = 0,
  IMGSTAT_JPEG_DECODER_CPU,
  /* the GPU: needed as backend gpu needs it ("--jpeg-decoder gpu needs a
   * usable GPU with nvJPEG: REASON"); not with backend cpu */
  IMGSTAT_JPEG_DECODER_GPU
} imgstat_jpeg_decoder;

/* "auto", "cpu" or "gpu". */
const char *imgstat_jpeg_decoder_name(imgstat_jpeg_decoder d);
int imgstat_jpeg_decoder_from_name(const char *name, imgstat_jpeg_decoder *out);

/* The most GPUs an engine uses. */
#define IMGSTAT_MAX_DEVICES 16

typedef struct imgstat_engine_options {
  imgstat_backend backend;
  /* Statistics on both backends: the CPU's partials are the result, the
   * GPU's are returned beside them for comparison. Needs a usable GPU. */
  int verify;
  int kernel;  /* the GPU statistics kernel: 0 (fast) or 1..7 (ladder) */
  int threads; /* CPU threads; <= 0: one per online core */
  imgstat_load_options load; /* for inputs given by path */
  /* The GPUs: ndevices > 0: the devices listed; -1: every device present;
   * 0: the default device. Items are dealt to one context per device;
   * their results do not depend on which device computed them. */
  int ndevices;
  int devices[IMGSTAT_MAX_DEVICES];
  int workers; /* items computed at once (auto's rule); <= 0: one per core */
  const imgstat_cost_model *cost; /* auto's rule; NULL: the measured one */
  imgstat_jpeg_decoder jpeg_decoder;
  /* JPEGs decoded on the GPU at once, at most (<= 0: 64; in the streaming
   * stage, imgstat_engine_stats_decoder_async: 128, and a batch holds
   * 256 Mpx at most) */
  int jpeg_batch;
  /* what is checked before nvJPEG, besides the CPU decoder's open */
  imgstat_jpeg_check jpeg_check;
  /* The streaming stage's lanes per device: batches in flight at once
   * (<= 0: 2; at most 8) */
  int jpeg_lanes;
  /* 1: each lane makes nvJPEG handles of its own instead of sharing its
   * GPU's (a measurement's knob: results are the same) */
  int jpeg_own_handles;
  /* 1: the caller ends the process right after the run (the command line's
   * _exit): the streaming stage's lanes leave their nvJPEG decoders to the
   * process's end instead of destroying them (one process is no shorter
   * for it: its end frees them in about the time their destruction took;
   * MPI ranks, which leave that way too now, are: docs/benchmarks.md). A
   * library that goes on after the run keeps 0. */
  int leave_to_exit;
} imgstat_engine_options;

typedef struct imgstat_engine imgstat_engine;

/* The one worker policy of a run of inputs. jobs: the caller's (> 0 that
 * many workers, 0 one per core, < 0 one per core when the run may have
 * several inputs, else one); cores: the CPUs the run may use (> 0).
 * Returns the workers and sets, in engine, threads (0: one input alone on
 * the caller's thread, the CPU backend's threads on every core; else 1,
 * each worker computing on one thread) and workers (the CPU's lanes for
 * auto's rule: the workers, at most one per core). */
int imgstat_engine_plan_workers(int jobs, int several, int cores,
                                imgstat_engine_options *engine);

/* Makes an engine with a copy of opts (NULL: all defaults, backend auto)
 * and, when the policy may use the GPU (backend auto or gpu, or verify),
 * starts the GPU context on a thread of its own. Returns IMGSTAT_ERR_NOMEM
 * (or IMGSTAT_ERR_ARG for a NULL out) and sets *out to NULL on failure. */
imgstat_status imgstat_engine_create(const imgstat_engine_options *opts,
                                     imgstat_engine **out, imgstat_error *err);

/* Waits for the start-up if it still runs and frees everything; NULL is a
 * no-op. */
void imgstat_engine_destroy(imgstat_engine *engine);

/* The GPU side of imgstat_engine_destroy, timed (imgstat_engine_times):
 * the device stage's lanes joined and closed, the decoders and contexts
 * destroyed. The engine takes no item after it; destroy then frees the
 * rest. Safe to call more than once. */
void imgstat_engine_shutdown(imgstat_engine *engine);

/* No item will be handed over any more (every call of
 * imgstat_engine_stats_decoder_async has returned and none will come):
 * the device stage runs what is queued without waiting for fuller
 * batches, and each lane closes (its decoder destroyed on its own thread)
 * as soon as nothing is left for it, instead of at the engine's
 * destruction. */
void imgstat_engine_input_end(imgstat_engine *engine);

/* The number of items the caller expects to give in all (0: unknown), for
 * auto's rule; may be called again as the number becomes known. */
void imgstat_engine_set_workload(imgstat_engine *engine, uint64_t items);

/* Whether the engine has used a GPU so far (for tests and reports). */
int imgstat_engine_gpu_started(imgstat_engine *engine);

/* ---- results ---------------------------------------------------------------
 */

#define IMGSTAT_JOB_MAX_WARNINGS 4

typedef struct imgstat_job_warning {
  /* 1: about the item's input (show it after the input's name); 0: about
   * the engine (the GPU start-up), shown once, by the first item that
   * waited for it. */
  int about_input;
  /* 1: the decoder's word on the input's data (imgstat_image.warning),
   * which the item's record carries too; 0: about how it was computed. */
  int from_decoder;
  char text[IMGSTAT_ERROR_MAX];
} imgstat_job_warning;

/* Where an item failed. */
typedef enum imgstat_job_stage {
  IMGSTAT_STAGE_NONE = 0, /* it did not */
  IMGSTAT_STAGE_LOAD,     /* reading or decoding the input */
  IMGSTAT_STAGE_GPU,      /* the GPU the policy needs is not usable */
  IMGSTAT_STAGE_COMPUTE   /* statistics, histograms or normalization */
} imgstat_job_stage;

/* The statistics of one label's pixels (imgstat_stats_request's
 * labels_path):
 * as the image's own in imgstat_job_result. */
/* The per-channel arrays of a result or a label of more channels than
 * IMGSTAT_INLINE_CHANNELS: one heap block, each array `channels` long
 * (imgstat_job_result_channels). */
typedef struct imgstat_job_wide {
  int channels;
  imgstat_partial *partial;
  imgstat_partial *gpu_partial;
  double *nodata;
  uint64_t *nodata_count;
  imgstat_histogram *hist;
  imgstat_hist_figures *hist_figures;
} imgstat_job_wide;

/* Channel array F (partial, gpu_partial, nodata, nodata_count, hist,
 * hist_figures) of a result or a label R: its own up to
 * IMGSTAT_INLINE_CHANNELS channels, else the heap block's. */
#define IMGSTAT_JOB_CH(R, F) ((R)->wide ? (R)->wide->F : (R)->F)

typedef struct imgstat_job_label {
  uint32_t label;
  uint64_t pixels; /* the label's pixels (inside the mask) */
  imgstat_partial partial[IMGSTAT_INLINE_CHANNELS];
  uint64_t nodata_count[IMGSTAT_INLINE_CHANNELS];
  imgstat_histogram hist[IMGSTAT_INLINE_CHANNELS];
  imgstat_hist_figures hist_figures[IMGSTAT_INLINE_CHANNELS];
  imgstat_job_wide *wide; /* more channels than those: the arrays */
} imgstat_job_label;

/* One item's result. Owns its histograms and its output image: free it with
 * imgstat_job_result_free before it is used for the next item. */
typedef struct imgstat_job_result {
  imgstat_status status; /* IMGSTAT_OK: everything asked for is here */
  imgstat_job_stage failed_stage;
  /* The reason (error.status == status), as shown after the input's name;
   * "" when status is IMGSTAT_OK. */
  imgstat_error error;
  /* Warnings, in the order they arose, before the error if any. */
  int nwarnings;
  imgstat_job_warning warning[IMGSTAT_JOB_MAX_WARNINGS];

  /* The input, once decoded (width 0 before). */
  uint32_t width;
  uint32_t height;
  int channels;
  imgstat_colour colour; /* the channels' model (imgstat.h) */
  imgstat_sample sample;
  /* sample IMGSTAT_U16 holding int16 samples offset by IMGSTAT_INT16_OFFSET:
   * the partials, histograms, nodata values and percentiles of the result
   * are in the stored (offset) units; the record takes them back */
  int int16;
  const char *format; /* static string: "PNG", "JPEG", ... */
  /* A multi-page input (TIFF): its pages and the one decoded (--page);
   * 0 and 0 for single-image formats. */
  uint32_t pages;
  uint32_t page;

  /* Statistics: what computed them (CPU or GPU; verify: CPU), and one
   * partial per channel. With verify, gpu_partial holds the GPU's. */
  imgstat_backend backend;
  imgstat_partial partial[IMGSTAT_INLINE_CHANNELS];
  int verified;
  imgstat_partial gpu_partial[IMGSTAT_INLINE_CHANNELS];

  /* Histograms (when asked for): one per channel, with their figures (the
   * median, the requested percentiles, entropy, skewness, kurtosis), and
   * what computed them. */
  int has_histograms;
  imgstat_backend hist_backend;
  imgstat_histogram hist[IMGSTAT_INLINE_CHANNELS];
  imgstat_hist_figures hist_figures[IMGSTAT_INLINE_CHANNELS];

  /* Valid samples (imgstat_stats_request): has_nodata, a nodata value was
   * applied, nodata[c] to channel c (nodata_count[c] samples equal to it,
   * inside the mask, left out); masked, a mask was applied (mask_pixels
   * pixels inside it). The partials and histograms are then those of the
   * valid samples. */
  int has_nodata;
  double nodata[IMGSTAT_INLINE_CHANNELS];
  uint64_t nodata_count[IMGSTAT_INLINE_CHANNELS];
  int masked;
  uint64_t mask_pixels;
  /* A label image's labels (labels_path): nlabels of them, by increasing
   * label, owned by the result; has_labels even when there is none. */
  int has_labels;
  uint32_t nlabels;
  imgstat_job_label *labels;
  /* An image of more than IMGSTAT_INLINE_CHANNELS channels: the arrays
   * above, all of its channels (NULL: the arrays above are used; read them
   * through IMGSTAT_JOB_CH). Freed with the result. */
  imgstat_job_wide *wide;
  /* The input's band descriptions (imgstat_image.band_names), taken from
   * the decoded image and owned by the result; NULL: none. */
  char *band_names;

  /* Normalization: the output image (backend says what made it). */
  imgstat_image output;

  /* The decoder that made the pixels, when the job layer decoded a JPEG
   * (IMGSTAT_DECODER_*, a static string); NULL when the caller decoded the
   * input (then the decoder table's row for its format did). */
  const char *decoder;
} imgstat_job_result;

/* The names of the JPEG decoders in results and records. */
#define IMGSTAT_DECODER_TURBOJPEG "libjpeg-turbo"
#define IMGSTAT_DECODER_NVJPEG_HARDWARE "nvjpeg-hardware"
#define IMGSTAT_DECODER_NVJPEG_HYBRID "nvjpeg-hybrid"

/* Frees the histograms and the output image and zeroes res; safe on a
 * zeroed or already freed result. */
void imgstat_job_result_free(imgstat_job_result *res);

/* The per-channel arrays for an image of `channels` channels: nothing to
 * do up to IMGSTAT_INLINE_CHANNELS (*wide stays NULL), else a zeroed heap
 * block in *wide (which must be NULL). Out of memory: an error. */
imgstat_status imgstat_job_wide_alloc(imgstat_job_wide **wide, int channels,
                                      imgstat_error *err);
/* Frees a block of imgstat_job_wide_alloc and its histograms (NULL: none). */
void imgstat_job_wide_free(imgstat_job_wide *wide);

/* Makes res (zeroed first) the result of an item that failed at stage with
 * status for why's reason: its message ("unknown error" when empty) and its
 * cause with the cause's fields. Returns status. */
imgstat_status imgstat_job_result_fail(imgstat_job_result *res,
                                       imgstat_job_stage stage,
                                       imgstat_status status,
                                       const imgstat_error *why);

/* ---- items -----------------------------------------------------------------
 * Each takes its input either as a path (decoded with the engine's load
 * options) or as an image already decoded (img not NULL: path is then only
 * a name and may be NULL; img is not freed). res is overwritten (it must
 * not hold a previous result that was not freed). The return value is
 * res->status. */

/* What the statistics item computes beside the partials. */
typedef struct imgstat_stats_request {
  int histograms; /* histograms and their figures */
  /* The percentiles of the figures (besides the median, always there),
   * each in [0, 100]. */
  int npercentiles;
  double percentiles[IMGSTAT_MAX_PERCENTILES];
  /* Valid samples (imgstat_valid, imgstat.h), computed on the CPU whatever
   * the backend. nnodata: 0, no nodata value given (the file's own, when
   * it has one, unless no_file_nodata); 1, nodata[0] for every channel;
   * else one per channel (an image of another channel count fails). A
   * value that is not a sample of the image's type fails the image. The
   * nnodata values are the caller's (borrowed, as the paths are): the
   * request stays small to copy for each item. */
  int nnodata;
  const double *nodata;
  int no_file_nodata;
  /* The image's mask (NULL: none): an image of the same size, a pixel
   * inside where any of its channels is non-zero. */
  const char *mask_path;
  /* mask_path is every item's (one mask for a whole run): the engine
   * decodes it once and keeps it for the items after. */
  int mask_shared;
  /* The image's label image (NULL: none): an 8- or 16-bit image of the
   * same size and one channel; the statistics of each distinct non-zero
   * label's pixels (inside the mask, when there is one) are returned
   * beside the image's. */
  const char *labels_path;
} imgstat_stats_request;

/* Normalization of the valid samples (imgstat_engine_normalize with
 * req's nodata values, the file's own and req's mask_path, as the
 * statistics take them): minmax, clip and zscore measure each channel over
 * its valid samples alone (MONAI's nonzero), the plan maps them, and every
 * sample left out is written as it is (its value in the output's type,
 * saturated to its range) or, with has_fill, as fill. On the CPU whatever
 * the backend. Without any sample left out: imgstat_engine_normalize. */
imgstat_status imgstat_engine_normalize_valid(
    imgstat_engine *engine, const char *path, const imgstat_image *img,
    const imgstat_norm_options *opts, const imgstat_stats_request *req,
    int has_fill, double fill, imgstat_job_result *res);

/* A copy of the float image img in which every sample that req's nodata
 * value (or the file's own) or mask leaves out is NaN, into *out (free
 * it): what a pass that takes whole images (a dataset's float histograms)
 * takes of an image with valid samples. *out is left empty (width 0) when
 * img is not float or req leaves no sample out; a failure (a mask that
 * cannot be read, a nodata value that is not a float) says why in err. */
imgstat_status imgstat_engine_valid_copy(imgstat_engine *engine,
                                         const imgstat_image *img,
                                         const imgstat_stats_request *req,
                                         imgstat_image *out,
                                         imgstat_error *err);

/* The statistics of one image (req NULL: partials only). */
imgstat_status imgstat_engine_stats(imgstat_engine *engine, const char *path,
                                    const imgstat_image *img,
                                    const imgstat_stats_request *req,
                                    imgstat_job_result *res);

/* The statistics of an image on the device (d, an image of gpu's context: a
 * caller's device array, a JPEG decoded there), as the engine computes them
 * for its own device images: the partials by the GPU kernel `kernel` (0:
 * fast) into res->partial and, when req asks, the histograms and their
 * figures (the device's counts and percentiles; the moments of the
 * histogram for 8/16-bit samples, of the samples in raster order for float
 * ones: from img's planes, or, img having none, each plane copied from d).
 * img gives the width, height, channels and sample (planes NULL: the image
 * is on the device only). Sets res's backend (and hist_backend) to the GPU
 * and leaves its other fields; no policy: a failure is returned (err), the
 * histograms freed. */
imgstat_status imgstat_device_stats(imgstat_gpu *gpu, imgstat_gpu_image *d,
                                    const imgstat_image *img, int kernel,
                                    const imgstat_stats_request *req,
                                    imgstat_job_result *res,
                                    imgstat_error *err);

/* The normalization of one image into res->output. */
imgstat_status imgstat_engine_normalize(imgstat_engine *engine,
                                        const char *path,
                                        const imgstat_image *img,
                                        const imgstat_norm_options *opts,
                                        imgstat_job_result *res);

/* Whether the engine may decode JPEG inputs on the GPU (nvJPEG compiled in
 * and loaded, the policy allowing it): when 0, imgstat_engine_stats_decoder
 * takes no input, and the caller need not offer any. */
int imgstat_engine_may_decode_jpeg(imgstat_engine *engine);

/* The statistics of an input whose decoder is open (imgstat_decoder_open)
 * when the engine decodes it on the GPU: a JPEG that TurboJPEG's open took
 * and nvJPEG may take, under the policy (jpeg_decoder). Returns 0 when it
 * does not (nothing reserved, res zeroed: the caller decodes d as usual);
 * 1 when it did, with res the item's result; -1 when reserve refused
 * (cancelled). reserve(ctx, bytes) is called once before the big
 * allocation (the file's bytes for the GPU; the decoded size when the file
 * falls back to the CPU decoder, or 0 when the item fails first).
 * Concurrent calls are decoded together, in batches per device. d stays
 * open (the caller closes it). */
int imgstat_engine_stats_decoder(imgstat_engine *engine, imgstat_decoder *d,
                                 const char *path,
                                 const imgstat_stats_request *req,
                                 int (*reserve)(void *ctx, uint64_t bytes),
                                 void *ctx, imgstat_job_result *res);

/*
 * The streaming form of imgstat_engine_stats_decoder (--jpeg-decoder gpu,
 * not verify): the file is checked here, on the caller's thread (a worker),
 * then handed to the engine's device stage (imgstat_stage.h): per device,
 * lanes on threads of their own take the queued JPEGs in batches sized by
 * pixels, decode them with nvJPEG (the hardware backend for the files it
 * supports, the GPU-hybrid one for the others, the CPU decoder for what
 * nvJPEG refuses: per file, decided by the file alone) and reduce a batch's
 * planes in one launch, and their histograms in one more
 * (imgstat_gpu_jpeg_reduce). The stage and its lanes open at the first
 * JPEG, while the GPU starts: workers go on reading and checking
 * meanwhile.
 * Returns 0 (not taken: as imgstat_engine_stats_decoder), 1 (finished here:
 * res is the result, e.g. a file the check refused), 2 (handed over, with a
 * copy of the file's bytes: done(done_ctx, cancelled) is called once, on a
 * lane's thread, when res is final; the caller keeps req, path and res
 * alive until then, and the file at path: a file nvJPEG refuses is opened
 * again there for the CPU decoder), or -1 (reserve refused: cancelled). d
 * stays the caller's in every case (close it on return: the stage holds no
 * file open). reserve(ctx, bytes) is called as in
 * imgstat_engine_stats_decoder, for the file's bytes, which the item holds
 * until the caller releases them (at its delivery).
 */
int imgstat_engine_stats_decoder_async(
    imgstat_engine *engine, imgstat_decoder *d, const char *path,
    const imgstat_stats_request *req, int (*reserve)(void *ctx, uint64_t bytes),
    void *ctx, imgstat_job_result *res,
    void (*done)(void *done_ctx, int cancelled), void *done_ctx);

/* Where the JPEGs' time went (the device stage), for the per-stage table
 * (tests/gpu/checks/jpeg_stage.sh). Read it once the items are finished; the
 * teardown's figures after imgstat_engine_shutdown. Durations (_s without
 * "from") are summed over the threads that spent them; moments are seconds
 * from the engine's creation. */
typedef struct imgstat_engine_times {
  double check_s;       /* the workers' checks before the hand-over */
  double decode_s;      /* imgstat_gpu_jpeg_decode, per lane, of which: */
  double parse_s;       /*   the hardware's support test (headers) */
  double alloc_s;       /*   the planes' allocation */
  double nvjpeg_host_s; /* nvJPEG's batched call (host part) */
  double nvjpeg_wait_s; /* the wait for the device after it */
  double reduce_s;      /* batched statistics and histograms, launch to
                           results */
  double histogram_s;   /* per item on the host: results, figures, frees */
  double cpu_s;         /* files nvJPEG refused, on the CPU decoder */
  double close_s;       /* the lanes' decoders destroyed */
  /* moments, from the engine's creation */
  double context_s; /* the first GPU's context ready */
  double nvjpeg_s;  /* its nvJPEG handles ready */
  /* and what that took (imgstat_gpu_jpeg_times' load_s .. decoder_s) */
  double jpeg_load_s, jpeg_device_s, jpeg_handles_s, jpeg_decoder_s;
  double jpeg_create_s, jpeg_info_s; /* of jpeg_handles_s */
  double ready_s;        /* the first lane ready (its decoder state made) */
  double ready_last_s;   /* the last lane ready */
  double first_submit_s; /* the first batch handed to nvJPEG */
  double first_batch_s;  /* the first batch finished */
  double last_batch_s;   /* the last batch finished */
  double input_end_s;    /* imgstat_engine_input_end */
  double closed_s;       /* the last lane closed */
  double shutdown_s;     /* imgstat_engine_shutdown finished */
  /* imgstat_engine_shutdown's own time: joining (and closing) the lanes,
   * and in all (the GPUs' decoders and contexts destroyed too) */
  double stage_end_s, teardown_s;
  uint64_t items, batches, hardware, hybrid, cpu;
  int max_batch;
  /* per device of the device stage, in the engine's order (ndevices of
   * them; device: its CUDA number): its start-up done (context, nvJPEG
   * handles), its first lane ready, its first batch handed to nvJPEG, its
   * last batch finished (moments from the engine's creation), its items */
  int ndevices;
  int device[IMGSTAT_MAX_DEVICES];
  double device_start_s[IMGSTAT_MAX_DEVICES];
  double device_ready_s[IMGSTAT_MAX_DEVICES];
  double device_first_submit_s[IMGSTAT_MAX_DEVICES];
  double device_last_batch_s[IMGSTAT_MAX_DEVICES];
  uint64_t device_items[IMGSTAT_MAX_DEVICES];
} imgstat_engine_times;

void imgstat_engine_times_get(imgstat_engine *engine,
                              imgstat_engine_times *out);

/* The nvJPEG backend of the engine's first GPU ("hardware (N engines) +
 * GPU-hybrid", "GPU-hybrid"), or NULL when JPEGs are not decoded there
 * (known once the GPU has started). */
const char *imgstat_engine_jpeg_backend(imgstat_engine *engine);

/* Waits for the GPU start-up and applies the policy now rather than at the
 * first item (which does it after decoding its input, to overlap the two).
 * Only the first call (of this or of an item) decides; its warning, if
 * any, goes to res (zeroed first; free it as an item's). Returns
 * IMGSTAT_OK when items can run, or, when the GPU is needed and is not
 * usable, the start-up's status with res->error saying so. */
imgstat_status imgstat_engine_decide(imgstat_engine *engine,
                                     imgstat_job_result *res);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_ENGINE_H */
