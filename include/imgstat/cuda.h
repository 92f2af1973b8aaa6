/*
 * The GPU backend's C API. Implemented in cuda/ when imgstat is built with
 * CUDA, and by src/nocuda/gpu_none.c (every call answers
 * IMGSTAT_ERR_NODEVICE with "built without CUDA support") otherwise. Never
 * prints or exits.
 *
 * A context (imgstat_gpu) owns every device action: each call runs on the
 * context's device, whatever the calling thread's current device was (each
 * call makes it current, as cudaSetDevice does), on the context's streams
 * and buffers. The context has IMGSTAT_GPU_SLOTS slots, each what one image's
 * work needs (streams, pinned staging, scratch, device planes); a submitted
 * statistics job or a device image holds one slot until its wait or
 * release. Calls are thread-safe: several threads may submit, wait and work
 * on device images at once, each image on its own slot. A call that needs a
 * slot while all are held waits until one is given back, so a thread must
 * not hold every slot and then ask for another.
 */
#ifndef IMGSTAT_CUDA_H
#define IMGSTAT_CUDA_H

#include "imgstat/hist.h"
#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel choice: 0 is the fused default ("fast"); 1..7 the classic ladder. */
#define IMGSTAT_KERNEL_FAST 0
#define IMGSTAT_KERNEL_LADDER_MIN 1
#define IMGSTAT_KERNEL_LADDER_MAX 7

/* Slots of a context: images in flight at once (submitted jobs and device
 * images together). */
#define IMGSTAT_GPU_SLOTS 4

/* 1 when this build contains the CUDA backend, 0 otherwise. */
int imgstat_gpu_compiled(void);

typedef struct imgstat_gpu imgstat_gpu;

/* The number of CUDA devices into *count. Status as imgstat_gpu_create's:
 * IMGSTAT_ERR_NODEVICE when there is no driver or no device (*count 0),
 * IMGSTAT_ERR_DEVICE when the driver cannot serve this build. */
imgstat_status imgstat_gpu_device_count(int *count, imgstat_error *err);

/*
 * Initialises CUDA on device `device` (-1: the calling thread's current
 * device) and returns a context holding its slots (streams, pinned staging
 * buffers, scratch and device buffers, grown as images need and reused).
 * Status: IMGSTAT_ERR_NODEVICE when there is no driver or device (auto falls
 * back quietly), IMGSTAT_ERR_DEVICE when a device is present but unusable
 * (driver too old, init failed: auto falls back with a warning). Safe to call
 * from a thread other than the one that later uses the context.
 */
imgstat_status imgstat_gpu_create(int device, imgstat_gpu **out,
                                  imgstat_error *err);
/* Waits for the context's work and frees everything it holds. Tickets must
 * have been waited for and device images released before. */
void imgstat_gpu_destroy(imgstat_gpu *gpu);

/* Short description of the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90)". */
const char *imgstat_gpu_device_name(const imgstat_gpu *gpu);

/* The context's CUDA device ordinal (-1 for NULL). */
int imgstat_gpu_device(const imgstat_gpu *gpu);

/*
 * Computes one partial per channel of img on the device with the given kernel
 * (IMGSTAT_KERNEL_FAST or 1..7): the same fields imgstat_cpu_stats fills,
 * bit-identical to it for every sample type (f32 planes follow the canonical
 * float order of docs/float-order.md, whatever the kernel).
 * Images larger than the free device memory are reduced in ranges. The
 * image's row stride is honoured. The same as imgstat_gpu_stats_submit
 * followed by imgstat_gpu_stats_wait.
 */
imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel, imgstat_partial *out,
                                 imgstat_error *err);

/* A submitted statistics job. Its fields are the context's business. */
typedef struct imgstat_gpu_ticket {
  int slot;
  uint64_t serial;
} imgstat_gpu_ticket;

/*
 * The statistics of imgstat_gpu_stats in two steps, so that several images
 * can be in flight: submit takes a slot (waiting for one when all are
 * held), uploads img and starts the reductions, and returns at once with a
 * ticket; wait blocks until that job is done, fills out[0..channels-1] and
 * gives the slot back. Each successful submit must be waited for exactly
 * once, from any thread; img must stay valid and unchanged until then
 * (planes in pinned memory are read by the device directly, while the job
 * runs). A failed submit holds nothing. A wait reports the job's own
 * errors; a ticket that is not pending is IMGSTAT_ERR_ARG.
 */
imgstat_status imgstat_gpu_stats_submit(imgstat_gpu *gpu,
                                        const imgstat_image *img, int kernel,
                                        imgstat_gpu_ticket *ticket,
                                        imgstat_error *err);
imgstat_status imgstat_gpu_stats_wait(imgstat_gpu *gpu,
                                      imgstat_gpu_ticket ticket,
                                      imgstat_partial *out, imgstat_error *err);

/*
 * A device image: an image's planes on the context's device, for several
 * operations without a second upload (imgstat_gpu_image_stats here,
 * imgstat_gpu_image_histogram / _normalize / _norm_apply in
 * imgstat_cuda_norm.h). It holds one slot of the context from upload or
 * wrap until release; its operations run in order on that slot's stream,
 * each returning when its results are on the host.
 */
typedef struct imgstat_gpu_image imgstat_gpu_image;

/* Uploads img (any row stride) into the slot's device planes (dense, each
 * at a 256-byte boundary) and returns the handle in *out. Planes in pinned
 * host memory are copied directly (cudaMemcpy2DAsync), others through the
 * slot's pinned staging buffers; img must stay unchanged until the first
 * operation on the handle (or its release) returns. */
imgstat_status imgstat_gpu_image_upload(imgstat_gpu *gpu,
                                        const imgstat_image *img,
                                        imgstat_gpu_image **out,
                                        imgstat_error *err);

/*
 * Wraps planes already on the context's device (e.g. a GPU decoder's
 * output), owned by the caller: d_planes[0..channels-1], each of height
 * rows of width samples, `pitch` bytes from one row's start to the next (0:
 * dense, width * sample). Dense planes are used in place (any alignment
 * that suits the sample type); pitched ones are copied once into the slot's
 * dense planes (cudaMemcpy2DAsync, device to device). The work that wrote
 * the planes must be finished (its stream synchronized) before this call;
 * they must stay valid until the handle is released. Images made from the
 * handle (normalize's output) report the format "device".
 */
imgstat_status imgstat_gpu_image_wrap(imgstat_gpu *gpu, uint32_t width,
                                      uint32_t height, int channels,
                                      imgstat_sample sample,
                                      void *const d_planes[], size_t pitch,
                                      imgstat_gpu_image **out,
                                      imgstat_error *err);

/*
 * Wraps a strided image already on the context's device, owned by the
 * caller: sample c of pixel x of row y at d_data + y * row_pitch +
 * x * pixel_pitch + c * channel_pitch bytes. An interleaved HWC array (e.g.
 * a CUDA tensor of height x width x channels) has pixel_pitch channels
 * samples and channel_pitch one sample; any other view with non-negative
 * strides (every other column, the first three channels of RGBA, a crop,
 * a broadcast) is described the same way. The data and the pitches must be
 * whole numbers of samples (IMGSTAT_ERR_ARG otherwise). Dense planes (rows
 * of whole samples back to back: HW, CHW) are used where they are; dense
 * interleaved u8 / u16 data of 2 to 4 channels at a 16-byte boundary is
 * kept as it is for the statistics (an interleaved kernel reads it); any
 * other layout, and HWC when an operation reads planes, is gathered by one
 * device kernel into the slot's dense planes: the planes
 * imgstat_gpu_image_wrap makes of the same pixels, so every operation on
 * the handle gives the same bits as on those planes (and as the CPU's on
 * the same image). Nothing goes through the host. The work that wrote the
 * data must be finished before this call (imgstat_gpu_wait_stream); the
 * data is read on the slot's stream by the operations on the handle, and
 * must stay valid until the release.
 */
imgstat_status imgstat_gpu_image_wrap_strided(
    imgstat_gpu *gpu, uint32_t width, uint32_t height, int channels,
    imgstat_sample sample, const void *d_data, size_t row_pitch,
    size_t pixel_pitch, size_t channel_pitch, imgstat_gpu_image **out,
    imgstat_error *err);

/*
 * imgstat_gpu_image_wrap_strided on the stream the data's producer queued
 * its work on: `stream` as imgstat_gpu_wait_stream takes it (a cudaStream_t
 * of the context's device, 1 the legacy default stream, 2 the per-thread
 * one), or 0 for none (then as imgstat_gpu_image_wrap_strided). Every
 * operation on the handle, the gathering included, is queued on that
 * stream instead of the slot's own, so it follows the producer's work on
 * the device, with no wait on the host and no launch latency between the
 * two; each operation still returns with its results (the statistics
 * wait for that stream), and the release waits for it. The producer's
 * work need not be finished; the stream must stay valid until the release.
 */
imgstat_status imgstat_gpu_image_wrap_on(
    imgstat_gpu *gpu, uint32_t width, uint32_t height, int channels,
    imgstat_sample sample, const void *d_data, size_t row_pitch,
    size_t pixel_pitch, size_t channel_pitch, uintptr_t stream,
    imgstat_gpu_image **out, imgstat_error *err);

/* Copies channel c of a device image to host memory (height rows of width
 * samples, back to back) and waits for the copy. */
imgstat_status imgstat_gpu_image_download(imgstat_gpu *gpu,
                                          imgstat_gpu_image *dimg, int c,
                                          void *host, imgstat_error *err);

/* Waits (on the host) for the work queued so far on a stream of the
 * context's device that the caller did not make: `stream` is a
 * cudaStream_t, or 1 for the legacy default stream, 2 for the per-thread
 * default stream (the values of the DLPack and __cuda_array_interface__
 * protocols). A DLPack producer asked for an array without a stream orders
 * its work before the legacy default stream (torch, CuPy): call this with 1
 * before wrapping such an array, since the context's streams do not wait
 * for that stream by themselves. */
imgstat_status imgstat_gpu_wait_stream(imgstat_gpu *gpu, uintptr_t stream,
                                       imgstat_error *err);

/* Device memory on the context's device for the caller (e.g. the output of
 * imgstat_gpu_image_norm_apply_device), `bytes` of it (0: 1) into *p; free
 * it with imgstat_gpu_free (from any thread; the calling thread's current
 * device is left as it was). */
imgstat_status imgstat_gpu_malloc(imgstat_gpu *gpu, size_t bytes, void **p,
                                  imgstat_error *err);
void imgstat_gpu_free(imgstat_gpu *gpu, void *p);

/* Waits for the handle's work, gives its slot back and frees it. NULL is
 * allowed. After this the caller may free wrapped planes. */
void imgstat_gpu_image_release(imgstat_gpu *gpu, imgstat_gpu_image *dimg);

/* The statistics of imgstat_gpu_stats on a device image (no upload). */
imgstat_status imgstat_gpu_image_stats(imgstat_gpu *gpu,
                                       imgstat_gpu_image *dimg, int kernel,
                                       imgstat_partial *out,
                                       imgstat_error *err);

/*
 * The statistics of the valid samples of each channel of img under v
 * (imgstat.h: a mask and nodata values; NULL: every sample), on the device:
 * each channel's valid samples compacted in raster order and reduced as a
 * plane of their own, so that out[c] is bit-identical to imgstat_cpu_stats
 * of imgstat_valid_compact's plane, its min_index and max_index raster
 * indices of img (imgstat_valid_raster_pair); nodata[c] the channel's
 * nodata samples inside the mask. A label's pixel list (v->npixels) is
 * IMGSTAT_ERR_ARG: only the CPU reduces those. 8- and 16-bit samples (int16
 * too) are reduced by one fused pass instead, with no compaction (their
 * figures do not depend on the order of the samples), to the same bits;
 * the environment variable IMGSTAT_GPU_VALID_COMPACT keeps them on the
 * compaction path, to compare.
 */
imgstat_status imgstat_gpu_valid_stats(imgstat_gpu *gpu,
                                       const imgstat_image *img,
                                       const imgstat_valid *v, int kernel,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err);

/*
 * The statistics of each label of a label image on the device, as the CPU
 * reduces label k's pixel list (imgstat_valid.pixels): pixels[start[k],
 * start[k] + count[k]) in raster order (inside the mask already; v's mask
 * and pixel list are not read, its nodata values are), each channel's
 * valid samples among them compacted in that order and reduced, so that
 * out[k * img->channels + c] is bit-identical to the CPU's and
 * nodata[k * img->channels + c] its nodata count (nlabels * channels of
 * each). One upload of the image and of each pixel's label for all the
 * labels.
 */
imgstat_status imgstat_gpu_valid_label_stats(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_error *err);

/*
 * The same two with histograms: hist[c] (imgstat_gpu_valid_stats_hist,
 * img->channels of them) or hist[k * img->channels + c] (the labels'),
 * allocated here (free each with imgstat_histogram_free), the histogram of
 * the same compacted samples, equal to imgstat_histogram_compute of
 * imgstat_valid_compact's plane count for count (integer counts of the
 * same bins: 8- and 16-bit samples, int16 too, only; float samples are
 * IMGSTAT_ERR_UNSUPPORTED, their bins and moments being the CPU's). hist
 * NULL: none, as the functions above. On failure no histogram is kept.
 */
imgstat_status
imgstat_gpu_valid_stats_hist(imgstat_gpu *gpu, const imgstat_image *img,
                             const imgstat_valid *v, int kernel,
                             imgstat_partial *out, uint64_t *nodata,
                             imgstat_histogram *hist, imgstat_error *err);
imgstat_status imgstat_gpu_valid_label_stats_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_histogram *hist, imgstat_error *err);

/*
 * Both at once, from one upload of the image: the channels' figures under
 * v (out, nodata, hist: as imgstat_gpu_valid_stats_hist) and those of each
 * label (lout, lnodata, lhist: as imgstat_gpu_valid_label_stats_hist; its
 * pixel lists inside v's mask already). For 8- and 16-bit samples (int16
 * too) every region and channel is reduced by one pass over the image, one
 * launch and one copy back (the order of the samples does not change an
 * integer figure; the compaction path when the regions' histograms exceed
 * its budget); float samples are compacted channel by channel and label by
 * label, in raster order, as above. hist and lhist NULL: no histograms.
 */
imgstat_status imgstat_gpu_valid_regions_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, imgstat_partial *out, uint64_t *nodata, imgstat_histogram *hist,
    uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *lout, uint64_t *lnodata,
    imgstat_histogram *lhist, imgstat_error *err);

/*
 * Many images' valid samples at once: each item is one call of
 * imgstat_gpu_valid_regions_hist (its arguments; status and err its own
 * outcome, as that call's). The items of 8- and 16-bit samples that the
 * fused pass takes whole (every channel in one launch) share one slot:
 * their planes, masks and label places uploaded into one buffer, a table
 * of their arguments, one memset, one launch over every (image, channel)
 * pair, one copy back and one synchronization (more only when their
 * accumulators, bins or bytes exceed the pass's budgets). The others, and
 * every item of a batch whose device work failed, go one by one as
 * imgstat_gpu_valid_regions_hist, so a failing image fails alone. Each
 * item's figures are those of imgstat_gpu_valid_regions_hist, byte for
 * byte. Returns IMGSTAT_OK when every item has its own outcome (an error
 * only for gpu or items NULL).
 */
typedef struct imgstat_gpu_valid_item {
  const imgstat_image *img;
  const imgstat_valid *v;
  imgstat_partial *out;
  uint64_t *nodata;
  imgstat_histogram *hist;
  uint32_t nlabels;
  const uint32_t *pixels;
  const uint64_t *start;
  const uint64_t *count;
  imgstat_partial *lout;
  uint64_t *lnodata;
  imgstat_histogram *lhist;
  imgstat_status status; /* out: this item's outcome */
  imgstat_error err;     /* out: its error */
  int batched;           /* out: 1 when the item went in a batched launch */
} imgstat_gpu_valid_item;

imgstat_status imgstat_gpu_valid_regions_batch(imgstat_gpu *gpu, int kernel,
                                               imgstat_gpu_valid_item *items,
                                               size_t n, imgstat_error *err);

/* nvJPEG as this build and this host offer it: compiled in, its library
 * loaded (its version), and the backend a decoder on the current device
 * gets (CUDA is started there to ask; the context and the decoder are gone
 * on return). What failed says why in err. */
typedef struct imgstat_gpu_jpeg_info {
  int compiled;     /* nvJPEG is in this build */
  int loaded;       /* its library loaded: version set, else err says why */
  int device;       /* a decoder was made: device_name, backend set; else err */
  char version[64]; /* "13.0.4" */
  char device_name[256]; /* as imgstat_gpu_device_name */
  char backend[128];     /* "hardware (N engines) + GPU-hybrid", ... */
  imgstat_error err;
} imgstat_gpu_jpeg_info;

void imgstat_gpu_jpeg_info_get(imgstat_gpu_jpeg_info *out);

#ifdef IMGSTAT_HAVE_CUDA
/* Caps the device memory imgstat_gpu_stats uses for image data (0: no cap,
 * the default); larger images are then reduced in ranges. For tests of that
 * path; only in CUDA builds. */
void imgstat_gpu_set_memory_limit(imgstat_gpu *gpu, size_t bytes);
#endif

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_CUDA_H */
