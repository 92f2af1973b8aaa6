/*
 * JPEG decoded on the GPU with nvJPEG (cuda/nvjpeg.cu), into planes on a
 * context's device; not installed (the job layer is its user).
 *
 * nvJPEG is optional twice: at build time (the header nvjpeg.h, from the
 * CUDA toolkit or the PyPI wheel nvidia-nvjpeg: IMGSTAT_WITH_NVJPEG) and at
 * run time (libnvjpeg.so.MAJOR is loaded with dlopen on first use, so that a
 * binary on a machine without it still runs on the CPU decoders). Without
 * either, every call answers IMGSTAT_ERR_NODEVICE with the reason.
 *
 * The library to load: $IMGSTAT_NVJPEG_LIBRARY when set (a path or a
 * soname; only that one is tried), else "libnvjpeg.so.MAJOR" through the
 * dynamic linker's search, else the one the build found (the toolkit's or
 * the wheel's). Its major version must be the header's.
 *
 * A decoder belongs to one context (one device) and is used by one thread
 * at a time. Never prints or exits.
 */
#ifndef IMGSTAT_CUDA_JPEG_H
#define IMGSTAT_CUDA_JPEG_H

#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build contains the nvJPEG decoder (CUDA and nvjpeg.h). */
int imgstat_gpu_jpeg_compiled(void);

/* Loads libnvjpeg once per process (thread-safe; later calls return the
 * first outcome): IMGSTAT_OK, or IMGSTAT_ERR_NODEVICE with the reason
 * ("not compiled in", "libnvjpeg.so.13: cannot open shared object file",
 * a version mismatch, a missing symbol). *version (may be NULL) receives
 * "13.0.4" or "". */
imgstat_status imgstat_gpu_jpeg_load(const char **version, imgstat_error *err);

typedef struct imgstat_gpu_jpeg imgstat_gpu_jpeg;

/* A decoder on gpu's device: nvJPEG's hardware backend when the device has
 * JPEG engines (A100, H100, ...), and its GPU-hybrid backend for the images
 * the hardware refuses (or for all, on cards without engines).
 * IMGSTAT_ERR_NODEVICE: nvJPEG is not there; IMGSTAT_ERR_DEVICE: it failed
 * to start. Makes nvJPEG's handles (the long part of its start-up); the
 * decode state is made by imgstat_gpu_jpeg_prepare or the first decode.
 * Also tells the device's default memory pool to keep freed planes. */
imgstat_status imgstat_gpu_jpeg_create(imgstat_gpu *gpu, imgstat_gpu_jpeg **out,
                                       imgstat_error *err);

/* imgstat_gpu_jpeg_create on a device given by its index (-1: the calling
 * thread's current device), without a context: from another thread while
 * the context is being made (the two wait for CUDA's own start, then
 * overlap). strict: nvJPEG's own strict bitstream mode (it then refuses
 * damaged data rather than decoding what it can), for a caller that has not
 * checked the entropy-coded data (imgstat_gpu_jpeg_create's choice); 0
 * behind a check such as --jpeg-check markers, which made it redundant on
 * the damaged corpus and costs the hardware backend 7-19 % of its rate. */
imgstat_status imgstat_gpu_jpeg_create_on(int device, int strict,
                                          imgstat_gpu_jpeg **out,
                                          imgstat_error *err);

/* The device index of a decoder (-1 for NULL). */
int imgstat_gpu_jpeg_device(const imgstat_gpu_jpeg *dec);

/* Another decoder on the device of `of`, sharing its nvJPEG handles (their
 * start-up is not paid again), with a stream and states of its own: for
 * another thread. May be called while `of` decodes on its own thread. The
 * handles live until the last decoder sharing them is destroyed. */
imgstat_status imgstat_gpu_jpeg_create_sibling(const imgstat_gpu_jpeg *of,
                                               imgstat_gpu_jpeg **out,
                                               imgstat_error *err);

/* Makes the decoder's state for its first backend now (the hardware's, else
 * GPU-hybrid's), so that the first decode does not pay it; the decoder's
 * thread. IMGSTAT_ERR_DEVICE: nvJPEG could not make one. */
imgstat_status imgstat_gpu_jpeg_prepare(imgstat_gpu_jpeg *dec,
                                        imgstat_error *err);

void imgstat_gpu_jpeg_destroy(imgstat_gpu_jpeg *dec);

/* Where a decoder's time went, in seconds summed over its decodes (for
 * the per-stage table): the hardware's support test (headers parsed on the
 * host), the planes' allocation, nvJPEG's batched call (its host part:
 * parsing, staging, launches) and the wait for the device; batches is the
 * number of nvJPEG calls. */
typedef struct imgstat_gpu_jpeg_times {
  double parse_s, alloc_s, host_s, wait_s;
  uint64_t batches;
  /* imgstat_gpu_jpeg_create_on's phases (a sibling's are 0): libnvjpeg's
   * load (0 when loaded before), cudaSetDevice (CUDA's own start, when
   * another thread makes the context), the handles (nvjpegCreateEx and the
   * engines' query), the decoder's stream and bitstream */
  double load_s, device_s, handles_s, decoder_s;
  /* of handles_s: the hardware handle's nvjpegCreateEx, the engines' query */
  double create_s, info_s;
} imgstat_gpu_jpeg_times;

void imgstat_gpu_jpeg_times_get(const imgstat_gpu_jpeg *dec,
                                imgstat_gpu_jpeg_times *out);

/* "hardware (N engines) + GPU-hybrid" or "GPU-hybrid". */
const char *imgstat_gpu_jpeg_backend(const imgstat_gpu_jpeg *dec);

/* One JPEG of a batch. In: the file's bytes (host memory, unchanged until
 * the decode returns), its size and channels (1: gray, 3: YCbCr made RGB)
 * as the pre-checks found them. Out: status IMGSTAT_OK and planes[0..
 * channels-1], dense device planes (width x height bytes each, in one
 * allocation at planes[0]) that the item owns until
 * imgstat_gpu_jpeg_item_free; or another status with err
 * saying why nvJPEG did not take the file (the CPU decoders then do). */
typedef struct imgstat_gpu_jpeg_item {
  const unsigned char *data;
  size_t size;
  uint32_t width, height;
  int channels;
  imgstat_status status;
  imgstat_error err;
  int hardware; /* decoded by the hardware backend */
  void *planes[3];
} imgstat_gpu_jpeg_item;

/* Decodes n items, in batches of the same channel count: the hardware
 * backend for those it supports, the GPU-hybrid backend for the others; a
 * batch that fails is retried one image at a time, so that a file nvJPEG
 * refuses is the only one left to the CPU. Returns when every decoded plane
 * is complete (the stream synchronized). The return value is the decoder's
 * own failure (the device lost, out of memory for the planes), which also
 * marks the items not decoded. */
imgstat_status imgstat_gpu_jpeg_decode(imgstat_gpu_jpeg *dec,
                                       imgstat_gpu_jpeg_item *items, int n,
                                       imgstat_error *err);

/* The statistics of the decoded items of a batch (status IMGSTAT_OK; the
 * others are left out and their out untouched) in one launch and one fold
 * launch on the decoder's stream, with one synchronisation: out[k *
 * IMGSTAT_INLINE_CHANNELS + c] is channel c of item k, bit for bit what
 * imgstat_gpu_image_stats with the fast kernel gives for the same planes
 * (the same blocks per plane and the same fold: cuda/fast.cu). The
 * decoder's thread only (its stream and buffers, grown as needed and kept
 * for the next batch). */
imgstat_status imgstat_gpu_jpeg_stats(imgstat_gpu_jpeg *dec,
                                      const imgstat_gpu_jpeg_item *items, int n,
                                      imgstat_partial *out, imgstat_error *err);

/* The statistics (out, as imgstat_gpu_jpeg_stats; NULL: none) and the
 * histograms (counts; NULL: none) of the decoded items of a batch, each
 * kind in one launch, with one synchronisation for both: counts[(k *
 * IMGSTAT_INLINE_CHANNELS + c) * 256 + v] is the number of samples equal to v
 * in channel c of item k, exactly the per-image histogram kernel's (and the
 * CPU's) counts of the same plane. Items not decoded are left out, their
 * out and counts untouched. The decoder's thread only. */
imgstat_status imgstat_gpu_jpeg_reduce(imgstat_gpu_jpeg *dec,
                                       const imgstat_gpu_jpeg_item *items,
                                       int n, imgstat_partial *out,
                                       uint64_t *counts, imgstat_error *err);

/* Frees an item's planes (safe on an item without any). */
void imgstat_gpu_jpeg_item_free(imgstat_gpu_jpeg *dec,
                                imgstat_gpu_jpeg_item *item);

/* Copies a decoded item's planes into img (allocated by the caller with the
 * item's size and channels, u8), e.g. for --verify. */
imgstat_status imgstat_gpu_jpeg_item_download(imgstat_gpu_jpeg *dec,
                                              const imgstat_gpu_jpeg_item *item,
                                              imgstat_image *img,
                                              imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_CUDA_JPEG_H */
