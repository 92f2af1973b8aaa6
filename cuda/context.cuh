/*
 * The GPU context and its slots: the internal interface of context.cu, for
 * gpu_backend.cu (statistics), histogram.cu, normalize.cu and the
 * benchmark (programs/bench/).
 *
 * A context owns every device action. Each entry point first makes the
 * context's device current (ist_gpu_enter) and works on a slot: what one
 * image's work needs.
 *  - streams: `stream` carries the uploads, the histograms, normalization
 *    and the copies back, in order (the slot's own stream, or the caller's
 *    for an image wrapped on it); the statistics' reduction of plane c
 *    runs on compute[c] as soon as the plane has landed (event uploaded[c])
 *    and is joined back into `stream` (event joined[c]);
 *  - two pinned staging buffers used in turn for pageable uploads (the host
 *    fills one while the other's copy is in flight: event staged[k]);
 *  - device buffers, one per purpose: the image's planes, the reductions'
 *    scratch and partials, the histogram's bins and scan, normalize's output
 *    and tables. Each grows when an image needs more and is kept for the
 *    next (ist_devbuf); nothing is allocated per call once they are large
 *    enough.
 * A slot is taken for a job (a submitted statistics job, or a device image
 * from upload or wrap to release) and given back at its end. Taking is
 * thread-safe (the context's lock); a slot belongs to its holder only, so
 * several images are in flight at once on several slots, from several
 * threads. Slot 0 is made ready by imgstat_gpu_create; the others get their
 * streams when first taken and their buffers when first needed.
 */
#ifndef IMGSTAT_CONTEXT_CUH
#define IMGSTAT_CONTEXT_CUH

#include "cuda_check.cuh"
#include "imgstat/cuda.h"

#include <atomic>
#include <pthread.h>

/* Bytes of one staging buffer. */
constexpr size_t kIstStagingBytes = (size_t)4 << 20;

/* Streams a slot reduces planes on, side by side; more planes take them in
 * turn (planes on one stream follow each other). */
#define IST_COMPUTE_STREAMS IMGSTAT_INLINE_CHANNELS

struct ist_slot {
  int index;
  bool busy;       /* held by a job or a device image (under the lock) */
  uint64_t serial; /* jobs that took the slot so far: tickets name one */
  bool ready;      /* streams and events created */
  /* where the slot's work is queued: its own stream, or, for a device image
   * wrapped on the caller's stream (imgstat_gpu_image_wrap_on), that stream
   * until the image's release gives the slot back */
  cudaStream_t stream;
  cudaStream_t own; /* the slot's own stream */
  /* plane c's reduction runs on compute[c % IST_COMPUTE_STREAMS] */
  cudaStream_t compute[IST_COMPUTE_STREAMS];
  /* work was queued on compute[] since the last drain (those streams are
   * synchronized by ist_slot_drain only then) */
  bool compute_used;
  cudaEvent_t staged[2];
  cudaEvent_t uploaded[IST_COMPUTE_STREAMS];
  cudaEvent_t joined[IST_COMPUTE_STREAMS];
  unsigned turn; /* the staging buffer used next */
  ist_pinbuf staging[2];
  ist_pinbuf h_out;  /* partials copied back */
  ist_devbuf d_out;  /* partials on the device */
  ist_devbuf planes; /* the image's planes */
  ist_devbuf scratch;
  ist_devbuf hist_bins, hist_small, hist_scan;
  ist_devbuf norm_out, norm_lut;
  /* valid samples (valid.cu): the mask, a channel's flags, its compacted
   * samples and their raster indices, CUB's temporary storage */
  ist_devbuf valid_mask, valid_flags, valid_vals, valid_idx, valid_temp;
  ist_devbuf valid_labels; /* each pixel's label's place + 1 (0: none) */
  /* a submitted statistics job (imgstat_gpu_stats_submit) */
  bool job;         /* pending: wait() may collect it */
  bool job_on_host; /* results already in job_out (empty or by ranges) */
  int job_channels;
  imgstat_partial job_out[IMGSTAT_MAX_CHANNELS];
};

struct imgstat_gpu {
  int device;
  int sm_count;
  char name[320];
  std::atomic<size_t> memory_limit{0}; /* 0: as much as the device gives */
  pthread_mutex_t lock;
  pthread_cond_t freed; /* a slot was given back */
  bool lock_ready;
  ist_slot slots[IMGSTAT_GPU_SLOTS];
};

/* A device image: dense planes on the context's device, and the slot its
 * operations run on. */
struct imgstat_gpu_image {
  imgstat_gpu *gpu;
  ist_slot *slot;
  uint32_t width, height;
  int channels;
  imgstat_sample sample;
  const char *format;
  const void *planes[IMGSTAT_MAX_CHANNELS];
  /* A dense interleaved (HWC) image wrapped as it is: its data, while the
   * planes are not gathered yet (nullptr once they are, or for others).
   * Statistics read it directly (ist_reduce_stats_hwc); every operation
   * that reads planes first calls ist_gpu_image_planes. */
  const void *hwc;
  /* Nothing is queued on the slot's streams: set when the statistics'
   * final wait returned (imgstat_gpu_image_stats), cleared by every other
   * operation; the release then has nothing to wait for. */
  bool quiet;
  /* a strided wrap's source (imgstat_gpu_image_wrap_strided) */
  struct {
    const void *data;
    size_t row_pitch, pixel_pitch, channel_pitch;
  } strided;
};

/* Makes the context's device the calling thread's current one (every entry
 * point calls it first; it is left current, as cudaSetDevice does). */
cudaError_t ist_gpu_enter(const imgstat_gpu *gpu);

/* Takes a free slot (waiting while all are held) and makes its streams and
 * events. On failure the slot is given back. */
imgstat_status ist_slot_take(imgstat_gpu *gpu, ist_slot **out,
                             imgstat_error *err);
/* Gives a slot back (its job, if any, is forgotten). */
void ist_slot_give(imgstat_gpu *gpu, ist_slot *s);
/* Waits for everything queued on the slot's streams, ignoring errors:
 * after a failure, so that nothing in flight touches buffers the next job
 * reuses. */
void ist_slot_drain(ist_slot *s);
/* The slot's pinned staging buffer for the next host-to-device copy,
 * reserved if needed, once the copy that last read it has finished: *k says
 * which; record it with ist_slot_staged after queuing the copy. */
cudaError_t ist_slot_staging(ist_slot *s, unsigned *k, unsigned char **buf);
cudaError_t ist_slot_staged(ist_slot *s, unsigned k);

/*
 * Copies bytes [first, first + nbytes) of a host plane, counted as if it
 * were dense (rows of row_bytes back to back), to d_dst on the slot's
 * stream; the plane's rows are `stride` bytes apart (0: row_bytes). Pinned
 * planes are copied directly (cudaMemcpy2DAsync for whole rows of a strided
 * one); pageable ones are gathered row piece by row piece into the pinned
 * staging buffers, one copy per buffer, the host filling one while the
 * other is in flight. Returns when the host has read its part of the plane
 * (pageable) or has queued the copy (pinned).
 */
cudaError_t ist_slot_upload(ist_slot *s, void *d_dst, const void *h_plane,
                            size_t row_bytes, size_t stride, uint64_t first,
                            uint64_t nbytes);

/* A piece of host memory for ist_slot_upload_pieces: nbytes of a plane
 * counted as if dense (rows of row_bytes, `stride` bytes apart; 0:
 * row_bytes), to byte `at` of the device range. */
struct ist_upload_piece {
  uint64_t at;
  const void *src;
  size_t row_bytes, stride;
  uint64_t nbytes;
};

/*
 * Copies n pieces (in increasing order of `at`, not overlapping) into the
 * device range [d_dst, d_dst + total) on the slot's stream, through the
 * pinned staging buffers: each buffer filled with the pieces' bytes of its
 * part of the range (the gaps between pieces left as they are), one copy
 * per buffer, the host filling one while the other is in flight (many
 * small pieces in few copies). Returns when the host has read the pieces.
 */
cudaError_t ist_slot_upload_pieces(ist_slot *s, void *d_dst, uint64_t total,
                                   const ist_upload_piece *pieces, size_t n);

/* Copies a dense device plane of rows x row_bytes to a host plane whose
 * rows are `stride` bytes apart (0: dense), on the slot's stream. */
cudaError_t ist_slot_download(ist_slot *s, void *h_plane, size_t stride,
                              const void *d_plane, size_t row_bytes,
                              uint32_t rows);

/* Checks an image for the device paths: channels, sample type, planes, row
 * stride (IMGSTAT_ERR_ARG with the reason). */
imgstat_status ist_gpu_check_image(const imgstat_image *img,
                                   imgstat_error *err);

/* Uploads img into a new device image on a slot of gpu (img checked by
 * ist_gpu_check_image; the caller has entered the context). */
imgstat_status ist_gpu_image_upload(imgstat_gpu *gpu, const imgstat_image *img,
                                    imgstat_gpu_image **out,
                                    imgstat_error *err);

/* Whether p is memory the context's device may read: device memory of
 * that device, or managed memory (the caller has entered the context). */
bool ist_gpu_memory(const imgstat_gpu *gpu, const void *p);

/* Checks that dimg is a device image of gpu (IMGSTAT_ERR_ARG otherwise). */
imgstat_status ist_gpu_image_check(const imgstat_gpu *gpu,
                                   const imgstat_gpu_image *dimg,
                                   imgstat_error *err);

/* Gathers an interleaved device image's planes into the slot (once; a
 * no-op for other images), on the slot's stream. */
imgstat_status ist_gpu_image_planes(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                                    imgstat_error *err);

/* A host image with the device image's size, layout and format and no
 * planes: what the host functions that only read those need. */
imgstat_image ist_gpu_image_shape(const imgstat_gpu_image *dimg);

/* ---- strided and interleaved samples (interleave.cu) ------------------- */

/* Copies a strided image on the device (sample c of pixel x of row y at
 * src + y * row_pitch + x * pixel_pitch + c * channel_pitch; every address
 * a whole number of samples) into `channels` dense planes dst[c] (rows back
 * to back), on stream s: one launch, checked. */
cudaError_t ist_deinterleave(const void *src, size_t row_pitch,
                             size_t pixel_pitch, size_t channel_pitch,
                             void *const dst[], int channels,
                             imgstat_sample sample, uint32_t width,
                             uint32_t height, int sm_count, cudaStream_t s);
/* The reverse for dense output: sample i of plane c to dst[i * channels +
 * c], for n samples per plane, on stream s. */
cudaError_t ist_interleave(const void *const src[], void *dst, int channels,
                           imgstat_sample sample, uint64_t n, int sm_count,
                           cudaStream_t s);

/* ---- statistics (gpu_backend.cu) ---------------------------------------- */

/* Scratch for the statistics of `planes` planes of n samples with `kernel`:
 * reserves it on the slot and returns the bytes of one plane's part. */
imgstat_status ist_stats_prepare(ist_slot *s, imgstat_sample sample, uint64_t n,
                                 int planes, int kernel, size_t *scratch_each,
                                 imgstat_error *err);
/* Starts the statistics of device plane c (after all that is already on the
 * slot's stream) on compute[c], its partial to the slot's h_out[c]. */
imgstat_status ist_stats_launch(ist_slot *s, int c, const void *d_plane,
                                imgstat_sample sample, uint64_t n, int kernel,
                                size_t scratch_each, imgstat_error *err);
/* Joins planes 0..planes-1's reductions back into the slot's stream. */
imgstat_status ist_stats_join(ist_slot *s, int planes, imgstat_error *err);
/* The statistics of device planes, synchronously: prepare, launch, join,
 * wait, copy the partials to out[0..planes-1]. */
imgstat_status ist_stats_planes(ist_slot *s, const void *const *d_planes,
                                int planes, imgstat_sample sample, uint64_t n,
                                int kernel, imgstat_partial *out,
                                imgstat_error *err);

#endif /* IMGSTAT_CONTEXT_CUH */
