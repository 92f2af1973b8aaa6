/*
 * The CPU backend: every channel cut into fixed chunks, chunk partials
 * computed on all cores, then merged on the calling thread (float planes by
 * the chunk tree of float_order.h, the canonical order the GPU follows too).
 *
 * Chunk boundaries depend only on the plane size, never on the number of
 * threads, and the merge order is fixed, so the result has the same bits for
 * any -j (float mean/m2 included). A strided image (rows with gaps between
 * them) has the same chunks, in raster order, gathered from its rows: the
 * same bits as its dense copy.
 */
#include "float_order.h"
#include "image_rows.h"
#include "imgstat/imgstat.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* The chunk of partial.c's scan (and of the float order), so that this
 * backend and one imgstat_partial_scan over a whole plane agree bit for bit
 * (tests check). */
#define CPU_CHUNK ((uint64_t)IST_FO_CHUNK)

/* More threads than this never pay off for a memory-bound scan. */
#define CPU_MAX_THREADS 256

typedef struct cpu_job {
  const imgstat_image *img;
  size_t stride;
  int dense;
  uint64_t plane_samples;
  uint64_t chunks_per_plane;
  uint64_t total_chunks;
  imgstat_partial *parts;         /* one per chunk, channel-major */
  double k[IMGSTAT_MAX_CHANNELS]; /* f32: each plane's shift K */
  atomic_uint_fast64_t next;
} cpu_job;

/* Takes chunks until none is left; scratch gathers a strided chunk (NULL
 * for a dense image). */
static void cpu_job_run(cpu_job *job, void *scratch) {
  for (;;) {
    uint64_t g = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (g >= job->total_chunks)
      return;
    uint64_t c = g / job->chunks_per_plane;
    uint64_t first = (g % job->chunks_per_plane) * CPU_CHUNK;
    uint64_t n = job->plane_samples - first;
    if (n > CPU_CHUNK)
      n = CPU_CHUNK;
    imgstat_partial_init(&job->parts[g]);
    ist_partial_scan_rows(&job->parts[g], job->img->planes[c], job->stride,
                          job->img->width, job->img->sample, first, n, scratch,
                          &job->k[c]);
  }
}

/* A helper thread; one that cannot get its scratch takes no chunk (the
 * calling thread has its own and finishes them all). */
static void *cpu_job_thread(void *arg) {
  cpu_job *job = arg;
  void *scratch = job->dense ? NULL : malloc(IST_SCAN_SCRATCH_BYTES);
  if (job->dense || scratch)
    cpu_job_run(job, scratch);
  free(scratch);
  return NULL;
}

/* The threads of a scan: those asked (<= 0: the cores), at most
 * CPU_MAX_THREADS and no more than its units of work. */
static int cpu_threads(int asked, uint64_t units) {
  int n = asked > 0 ? asked : imgstat_cpu_cores();
  if (n > CPU_MAX_THREADS)
    n = CPU_MAX_THREADS;
  if ((uint64_t)n > units)
    n = (int)units;
  return n;
}

imgstat_status imgstat_cpu_stats(const imgstat_image *img, int threads,
                                 imgstat_partial *out, imgstat_error *err) {
  if (!img || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image or no output");
  if (img->channels < 1 || img->channels > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "%d channels (1 to %d)",
                             img->channels, IMGSTAT_MAX_CHANNELS);
  if (img->sample != IMGSTAT_U8 && img->sample != IMGSTAT_U16 &&
      img->sample != IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "unknown sample type %d",
                             (int)img->sample);

  uint64_t samples = (uint64_t)img->width * img->height;
  for (int c = 0; c < img->channels; c++) {
    imgstat_partial_init(&out[c]);
    if (samples > 0 && !img->planes[c])
      return imgstat_error_set(err, IMGSTAT_ERR_ARG, "channel %d has no plane",
                               c);
  }
  if (samples == 0)
    return IMGSTAT_OK;

  cpu_job job;
  job.img = img;
  job.stride = ist_image_stride(img);
  job.dense = ist_image_is_dense(img);
  job.plane_samples = samples;
  job.chunks_per_plane = (samples + CPU_CHUNK - 1) / CPU_CHUNK;
  job.total_chunks = job.chunks_per_plane * (uint64_t)img->channels;
  for (int c = 0; c < img->channels; c++)
    job.k[c] = img->sample == IMGSTAT_F32
                   ? ist_fo_plane_shift(img->planes[c], img->width, job.stride,
                                        samples)
                   : 0.0;
  job.parts = job.total_chunks <= SIZE_MAX / sizeof *job.parts
                  ? malloc(job.total_chunks * sizeof *job.parts)
                  : NULL;
  void *scratch = job.dense ? NULL : malloc(IST_SCAN_SCRATCH_BYTES);
  if (!job.dense && !scratch) {
    free(job.parts);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory for a scan of a strided image");
  }
  if (!job.parts) {
    /* The same chunks and merge order, one thread, no partials kept: the
     * same bits. */
    for (int c = 0; c < img->channels; c++)
      ist_partial_scan_rows(&out[c], img->planes[c], job.stride, img->width,
                            img->sample, 0, samples, scratch, NULL);
    free(scratch);
    return IMGSTAT_OK;
  }
  atomic_init(&job.next, 0);

  threads = cpu_threads(threads, job.total_chunks);

  /* The calling thread works too; a thread that cannot be created only means
   * fewer helpers. */
  pthread_t helper[CPU_MAX_THREADS];
  int started = 0;
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&helper[started], NULL, cpu_job_thread, &job) != 0)
      break;
    started++;
  }
  cpu_job_run(&job, scratch);
  for (int t = 0; t < started; t++)
    pthread_join(helper[t], NULL);
  free(scratch);

  for (int c = 0; c < img->channels; c++) {
    imgstat_partial *chunk = &job.parts[c * job.chunks_per_plane];
    if (img->sample == IMGSTAT_F32) {
      ist_fo_tree_partials(chunk, job.chunks_per_plane);
      out[c] = chunk[0];
      ist_fo_add_shift(&out[c], job.k[c]);
    } else {
      for (uint64_t k = 0; k < job.chunks_per_plane; k++)
        imgstat_partial_merge(&out[c], &chunk[k], img->sample);
    }
  }
  free(job.parts);
  return IMGSTAT_OK;
}

/* ---- valid samples of integer images -------------------------------------
 * Each channel cut into bands of rows (about CPU_CHUNK samples each), each
 * band's partial by ist_valid_scan_rows on any thread, merged in raster
 * order on the calling thread: integer sums are exact and the merge keeps
 * the first position of an extremum, so the bits do not depend on -j. */

typedef struct valid_job {
  const imgstat_image *img;
  const imgstat_valid *v;
  uint32_t band_rows;
  uint64_t bands_per_plane;
  uint64_t total;
  imgstat_partial *parts;
  uint64_t *nodata;
  atomic_uint_fast64_t next;
} valid_job;

static void *valid_job_run(void *arg) {
  valid_job *job = arg;
  for (;;) {
    uint64_t g = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (g >= job->total)
      return NULL;
    int c = (int)(g / job->bands_per_plane);
    uint64_t y0 = (g % job->bands_per_plane) * job->band_rows;
    uint64_t y1 = y0 + job->band_rows;
    if (y1 > job->img->height)
      y1 = job->img->height;
    ist_valid_scan_rows(job->img, c, job->v, (uint32_t)y0, (uint32_t)y1,
                        &job->parts[g], &job->nodata[g]);
  }
}

imgstat_status imgstat_cpu_valid_stats(const imgstat_image *img,
                                       const imgstat_valid *v, int threads,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err) {
  if (!img || !out || !nodata)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image or no output");
  if (img->channels < 1 || img->channels > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "%d channels (1 to %d)",
                             img->channels, IMGSTAT_MAX_CHANNELS);
  if ((img->sample != IMGSTAT_U8 && img->sample != IMGSTAT_U16) ||
      (v && v->npixels))
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "one pass over valid samples: 8- or 16-bit "
                             "samples under a mask or none");
  for (int c = 0; c < img->channels; c++) {
    imgstat_partial_init(&out[c]);
    nodata[c] = 0;
    if (v && v->has_nodata[c]) {
      imgstat_status st =
          imgstat_valid_check_nodata(v->nodata[c], img->sample, err);
      if (st != IMGSTAT_OK)
        return st;
    }
  }
  if ((uint64_t)img->width * img->height == 0)
    return IMGSTAT_OK;
  for (int c = 0; c < img->channels; c++)
    if (!img->planes[c])
      return imgstat_error_set(err, IMGSTAT_ERR_ARG, "channel %d has no plane",
                               c);
  valid_job job;
  job.img = img;
  job.v = v;
  job.band_rows = (uint32_t)(CPU_CHUNK / img->width);
  if (job.band_rows < 1)
    job.band_rows = 1;
  job.bands_per_plane = (img->height + job.band_rows - 1) / job.band_rows;
  job.total = job.bands_per_plane * (uint64_t)img->channels;
  job.parts = job.total <= SIZE_MAX / sizeof *job.parts
                  ? malloc(job.total * sizeof *job.parts)
                  : NULL;
  job.nodata = job.parts ? malloc(job.total * sizeof *job.nodata) : NULL;
  if (!job.nodata) {
    /* one thread, one band a channel: the same figures */
    free(job.parts);
    for (int c = 0; c < img->channels; c++)
      ist_valid_scan_rows(img, c, v, 0, img->height, &out[c], &nodata[c]);
    return IMGSTAT_OK;
  }
  atomic_init(&job.next, 0);
  threads = cpu_threads(threads, job.total);
  pthread_t helper[CPU_MAX_THREADS];
  int started = 0;
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&helper[started], NULL, valid_job_run, &job) != 0)
      break;
    started++;
  }
  valid_job_run(&job);
  for (int t = 0; t < started; t++)
    pthread_join(helper[t], NULL);
  for (int c = 0; c < img->channels; c++)
    for (uint64_t k = 0; k < job.bands_per_plane; k++) {
      uint64_t g = (uint64_t)c * job.bands_per_plane + k;
      imgstat_partial_merge(&out[c], &job.parts[g], img->sample);
      nodata[c] += job.nodata[g];
    }
  free(job.parts);
  free(job.nodata);
  return IMGSTAT_OK;
}
