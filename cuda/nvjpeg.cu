/*
 * JPEG decoded on the GPU with nvJPEG (imgstat_cuda_jpeg.h). Compiled when
 * the build found nvjpeg.h (IMGSTAT_HAVE_NVJPEG); libnvjpeg itself is
 * loaded at run time (dlopen), so that nothing here is needed to start.
 *
 * Per device: one nvJPEG handle on the hardware backend when the device
 * has JPEG engines, one on the GPU-hybrid backend (GPU Huffman decoding for
 * large batches) for the rest, shared by the device's decoders (a decoder
 * and its siblings). Per decoder: a batched-decode state per backend, made
 * when first needed or by imgstat_gpu_jpeg_prepare (so that several
 * decoders make theirs at once, each on its own thread), and one stream.
 * The planes of each image are one stream-ordered allocation
 * (cudaMallocAsync from the device's default pool, told to keep the memory
 * for the next batch) owned by the item until it is freed.
 */
#include "cuda_check.cuh"
#include "gpu_fault.h"
#include "gpu_jpeg.h"
#include "norm_internal.cuh"
#include "reduce.cuh"

#include <dlfcn.h>
#include <new>
#include <nvjpeg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the library, loaded once --------------------------------------------
 */

namespace {

struct nvjpeg_api {
  decltype(&nvjpegGetProperty) GetProperty;
  decltype(&nvjpegCreateEx) CreateEx;
  decltype(&nvjpegCreateExV2) CreateExV2; /* optional: NULL when missing */
  decltype(&nvjpegDestroy) Destroy;
  decltype(&nvjpegGetHardwareDecoderInfo) GetHardwareDecoderInfo;
  decltype(&nvjpegJpegStateCreate) JpegStateCreate;
  decltype(&nvjpegJpegStateDestroy) JpegStateDestroy;
  decltype(&nvjpegDecodeBatchedInitialize) DecodeBatchedInitialize;
  decltype(&nvjpegDecodeBatched) DecodeBatched;
  decltype(&nvjpegJpegStreamCreate) JpegStreamCreate;
  decltype(&nvjpegJpegStreamDestroy) JpegStreamDestroy;
  decltype(&nvjpegJpegStreamParseHeader) JpegStreamParseHeader;
  decltype(&nvjpegDecodeBatchedSupported) DecodeBatchedSupported;
};

nvjpeg_api api;
pthread_once_t load_once = PTHREAD_ONCE_INIT;
imgstat_status load_status = IMGSTAT_ERR_NODEVICE;
imgstat_error load_err;
char load_version[32];

#define IST_STR2(x) #x
#define IST_STR(x) IST_STR2(x)
const char *const soname = "libnvjpeg.so." IST_STR(NVJPEG_VER_MAJOR);

void *open_library(void) {
  const char *env = getenv("IMGSTAT_NVJPEG_LIBRARY");
  if (env && *env) {
    void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      imgstat_error_set(&load_err, IMGSTAT_ERR_NODEVICE, "%s", dlerror());
    return h;
  }
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h)
    return h;
  imgstat_error_set(&load_err, IMGSTAT_ERR_NODEVICE, "%s", dlerror());
#ifdef IMGSTAT_NVJPEG_BUILD_LIBRARY
  /* the one the build found (the toolkit's or the wheel's) */
  h = dlopen(IMGSTAT_NVJPEG_BUILD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
#endif
  return h;
}

void load_library(void) {
  void *h = open_library();
  if (!h)
    return; /* load_err says why */
  const char *missing = nullptr;
#define IST_SYM(name)                                                          \
  do {                                                                         \
    api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, "nvjpeg" #name)); \
    if (!api.name && !missing)                                                 \
      missing = "nvjpeg" #name;                                                \
  } while (0)
  IST_SYM(GetProperty);
  IST_SYM(CreateEx);
  IST_SYM(Destroy);
  IST_SYM(GetHardwareDecoderInfo);
  IST_SYM(JpegStateCreate);
  IST_SYM(JpegStateDestroy);
  IST_SYM(DecodeBatchedInitialize);
  IST_SYM(DecodeBatched);
  IST_SYM(JpegStreamCreate);
  IST_SYM(JpegStreamDestroy);
  IST_SYM(JpegStreamParseHeader);
  IST_SYM(DecodeBatchedSupported);
#undef IST_SYM
  api.CreateExV2 =
      reinterpret_cast<decltype(api.CreateExV2)>(dlsym(h, "nvjpegCreateExV2"));
  if (missing) {
    imgstat_error_set(&load_err, IMGSTAT_ERR_NODEVICE,
                      "libnvjpeg has no symbol %s", missing);
    dlclose(h);
    return;
  }
  int major = -1, minor = -1, patch = -1;
  api.GetProperty(MAJOR_VERSION, &major);
  api.GetProperty(MINOR_VERSION, &minor);
  api.GetProperty(PATCH_LEVEL, &patch);
  if (major != NVJPEG_VER_MAJOR) {
    imgstat_error_set(&load_err, IMGSTAT_ERR_NODEVICE,
                      "libnvjpeg is version %d, this imgstat needs %d", major,
                      NVJPEG_VER_MAJOR);
    dlclose(h);
    return;
  }
  snprintf(load_version, sizeof load_version, "%d.%d.%d", major, minor, patch);
  /* the handle stays open for the life of the process */
  load_status = IMGSTAT_OK;
}

const char *nvjpeg_reason(nvjpegStatus_t s) {
  switch (s) {
  case NVJPEG_STATUS_SUCCESS:
    return "success";
  case NVJPEG_STATUS_NOT_INITIALIZED:
    return "not initialized";
  case NVJPEG_STATUS_INVALID_PARAMETER:
    return "invalid parameter";
  case NVJPEG_STATUS_BAD_JPEG:
    return "bad JPEG";
  case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
    return "JPEG not supported";
  case NVJPEG_STATUS_ALLOCATOR_FAILURE:
    return "allocator failure";
  case NVJPEG_STATUS_EXECUTION_FAILED:
    return "execution failed";
  case NVJPEG_STATUS_ARCH_MISMATCH:
    return "architecture mismatch";
  case NVJPEG_STATUS_INTERNAL_ERROR:
    return "internal error";
  case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
    return "implementation not supported";
  case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
    return "incomplete bitstream";
  }
  return "unknown status";
}

imgstat_status nvjpeg_fail(imgstat_error *err, imgstat_status st,
                           nvjpegStatus_t s, const char *what) {
  return imgstat_error_set(err, st, "nvJPEG %s: %s (status %d)", what,
                           nvjpeg_reason(s), (int)s);
}

} // namespace

extern "C" int imgstat_gpu_jpeg_compiled(void) { return 1; }

extern "C" imgstat_status imgstat_gpu_jpeg_load(const char **version,
                                                imgstat_error *err) {
  pthread_once(&load_once, load_library);
  if (version)
    *version = load_version;
  if (load_status != IMGSTAT_OK)
    return imgstat_error_set(err, load_status, "%s",
                             load_err.message[0] ? load_err.message
                                                 : "libnvjpeg not loaded");
  return IMGSTAT_OK;
}

/* ---- a decoder ------------------------------------------------------------
 */

namespace {

double now_s() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* nvJPEG's device memory from the device's stream-ordered pool (the one
 * the planes come from, which keeps what is freed), instead of cudaMalloc
 * and cudaFree (which waits for the device): IMGSTAT_JPEG_ASYNC_ALLOC=1, a
 * measurement's knob (where the pool's memory comes from changes no
 * pixel). Thread-safe as cudaMallocAsync is. */
int pool_malloc(void *, void **p, size_t n, cudaStream_t s) {
  return cudaMallocAsync(p, n ? n : 1, s) == cudaSuccess ? 0 : 1;
}

int pool_free(void *, void *p, size_t, cudaStream_t s) {
  return cudaFreeAsync(p, s) == cudaSuccess ? 0 : 1;
}

/* Pinned memory as nvJPEG's default makes it (the V2 call takes both). */
int pinned_malloc(void *, void **p, size_t n, cudaStream_t) {
  return cudaHostAlloc(p, n ? n : 1, cudaHostAllocDefault) == cudaSuccess ? 0
                                                                          : 1;
}

int pinned_free(void *, void *p, size_t, cudaStream_t) {
  return cudaFreeHost(p) == cudaSuccess ? 0 : 1;
}

bool async_alloc(void) {
  const char *v = getenv("IMGSTAT_JPEG_ASYNC_ALLOC");
  return v && atoi(v) > 0 && api.CreateExV2;
}

/* A backend's handle with nvJPEG's flags. Strict (strict != 0): nvJPEG
 * reports a damaged bitstream rather than decoding what it can; it is asked
 * for only when nothing checked the entropy-coded data before nvJPEG
 * (--jpeg-check none): behind the markers or full check it refused no file
 * of the damaged corpus that the check passed, and cost the hardware 7-19 %
 * of its rate (docs/benchmarks.md). Interpolated upsampling is libjpeg's
 * "fancy" upsampling, which TurboJPEG applies; without it chroma is
 * replicated. Without pipelining the hardware's batched decode ran faster
 * (the same pixels). Each flag is dropped, last first, if the backend
 * refuses it. */
nvjpegStatus_t handle_create(nvjpegBackend_t which, int strict,
                             nvjpegHandle_t *out) {
  const unsigned strict_flag = strict ? NVJPEG_FLAGS_BITSTREAM_STRICT : 0u;
  const unsigned flag_sets[] = {
      strict_flag | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION |
          NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE,
      strict_flag | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, strict_flag,
      NVJPEG_FLAGS_DEFAULT};
  nvjpegDevAllocatorV2_t pool = {pool_malloc, pool_free, nullptr};
  nvjpegPinnedAllocatorV2_t pinned = {pinned_malloc, pinned_free, nullptr};
  const bool v2 = async_alloc();
  nvjpegStatus_t s = NVJPEG_STATUS_NOT_INITIALIZED;
  /* IMGSTAT_JPEG_FLAGS=N: the hardware handle with these flags alone, a
   * measurement's knob (start-up and rate by flag set) */
  const char *forced = getenv("IMGSTAT_JPEG_FLAGS");
  if (forced && which == NVJPEG_BACKEND_HARDWARE) {
    unsigned flags = (unsigned)strtoul(forced, nullptr, 0);
    s = api.CreateEx(which, nullptr, nullptr, flags, out);
    if (s != NVJPEG_STATUS_SUCCESS)
      *out = nullptr;
    return s;
  }
  for (unsigned flags : flag_sets) {
    s = v2 ? api.CreateExV2(which, &pool, &pinned, flags, out)
           : api.CreateEx(which, nullptr, nullptr, flags, out);
    if (s == NVJPEG_STATUS_SUCCESS)
      return s;
    *out = nullptr;
  }
  return s;
}

} // namespace

/* The nvJPEG handles of one device, shared by its decoders: a handle may be
 * used by several threads at once (nvJPEG's thread-safety rules); what is
 * per thread -- the decode states, the parsed bitstream, the stream -- is
 * each decoder's own. Counted; the last decoder destroys them. The
 * GPU-hybrid handle is made when a decoder first needs one (under lock),
 * from the start on a device without JPEG engines. */
struct ist_jpeg_handles {
  pthread_mutex_t lock;
  int refs = 1;
  int strict = 1; /* nvJPEG's BITSTREAM_STRICT on both handles */
  double create_s = 0, info_s = 0; /* the hardware handle's start-up */
  nvjpegHandle_t hw = nullptr;     /* NULL: no JPEG engines */
  unsigned engines = 0;            /* count_engines */
  bool engines_known = false;
  char name[64] = ""; /* imgstat_gpu_jpeg_backend's, once */
  nvjpegHandle_t hybrid = nullptr;
  bool hybrid_tried = false;
  nvjpegStatus_t hybrid_status = NVJPEG_STATUS_SUCCESS;
};

namespace {

/* The GPU-hybrid handle (else nvJPEG's default backend), once. */
nvjpegStatus_t hybrid_handle(ist_jpeg_handles *h, nvjpegHandle_t *out) {
  pthread_mutex_lock(&h->lock);
  if (!h->hybrid_tried) {
    h->hybrid_tried = true;
    h->hybrid_status =
        handle_create(NVJPEG_BACKEND_GPU_HYBRID, h->strict, &h->hybrid);
    if (h->hybrid_status != NVJPEG_STATUS_SUCCESS)
      h->hybrid_status =
          handle_create(NVJPEG_BACKEND_DEFAULT, h->strict, &h->hybrid);
  }
  nvjpegStatus_t s = h->hybrid_status;
  *out = h->hybrid;
  pthread_mutex_unlock(&h->lock);
  return s;
}

void handles_release(ist_jpeg_handles *h) {
  if (!h)
    return;
  pthread_mutex_lock(&h->lock);
  int left = --h->refs;
  pthread_mutex_unlock(&h->lock);
  if (left > 0)
    return;
  if (h->hw)
    api.Destroy(h->hw);
  if (h->hybrid)
    api.Destroy(h->hybrid);
  pthread_mutex_destroy(&h->lock);
  delete h;
}

/* The hardware handle's engine count, once (under the handles' lock by the
 * caller, or before the handles are shared); 0 when nvJPEG cannot say. */
void count_engines(ist_jpeg_handles *h) {
  if (h->engines_known)
    return;
  h->engines_known = true;
  unsigned cores = 0;
  if (api.GetHardwareDecoderInfo(h->hw, &h->engines, &cores) !=
      NVJPEG_STATUS_SUCCESS)
    h->engines = 0;
}

/* The handles of the current device: the hardware backend's when the
 * device has JPEG engines, else the GPU-hybrid one at once. */
imgstat_status handles_create(int strict, ist_jpeg_handles **out,
                              imgstat_error *err) {
  *out = nullptr;
  if (cudaError_t e = ist_cuda_start_gate(IST_GPU_START_HANDLES))
    return ist_cuda_fail(err, e, "nvJPEG's handles");
  ist_jpeg_handles *h = new (std::nothrow) ist_jpeg_handles;
  if (!h)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (pthread_mutex_init(&h->lock, nullptr) != 0) {
    delete h;
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "cannot make a lock");
  }
  h->strict = strict;
  double t0 = now_s();
  /* A device without JPEG engines refuses the hardware backend here
   * (NVJPEG_STATUS_ARCH_MISMATCH). The engines are counted only when a
   * name is asked for (imgstat_gpu_jpeg_backend): nvJPEG's query took 0.26
   * s of the start-up on the H100 (docs/benchmarks.md). IMGSTAT_JPEG_INFO=1
   * queries them here, as before (a measurement's knob). */
  if (handle_create(NVJPEG_BACKEND_HARDWARE, strict, &h->hw) !=
      NVJPEG_STATUS_SUCCESS)
    h->hw = nullptr;
  double t1 = now_s();
  if (h->hw && getenv("IMGSTAT_JPEG_INFO"))
    count_engines(h);
  h->create_s = t1 - t0;
  h->info_s = now_s() - t1;
  nvjpegHandle_t hy = nullptr;
  nvjpegStatus_t s = h->hw ? NVJPEG_STATUS_SUCCESS : hybrid_handle(h, &hy);
  if (s != NVJPEG_STATUS_SUCCESS) {
    handles_release(h);
    return nvjpeg_fail(err, IMGSTAT_ERR_DEVICE, s, "start");
  }
  *out = h;
  return IMGSTAT_OK;
}

/* One backend's batched-decode state in a decoder, set up for the last
 * batch's size and output format; made when first needed (tried once). */
struct backend {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  bool tried = false;
  nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
  int batch = 0;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_UNCHANGED;
};

nvjpegStatus_t backend_ready(backend *b, nvjpegHandle_t handle) {
  if (!b->tried) {
    b->tried = true;
    b->handle = handle;
    b->status = api.JpegStateCreate(handle, &b->state);
    if (b->status != NVJPEG_STATUS_SUCCESS)
      b->state = nullptr;
  }
  return b->status;
}

void backend_destroy(backend *b) {
  if (b->state)
    api.JpegStateDestroy(b->state);
  b->state = nullptr;
}

} // namespace

struct imgstat_gpu_jpeg {
  int device;
  ist_jpeg_handles *h = nullptr;
  backend hw;     /* the hardware's state (h->hw), made by prepare or the
                     first decode; unusable: the files go to GPU-hybrid */
  backend hybrid; /* GPU-hybrid: when a file first needs it */
  nvjpegJpegStream_t parsed = nullptr; /* for the hardware's support test */
  cudaStream_t stream = nullptr;
  imgstat_gpu_jpeg_times times;
  /* the batched reductions' buffers (imgstat_gpu_jpeg_reduce), kept:
   * segments (the statistics' then the histograms', 2 seg_cap), a partial
   * and 256 counts per segment, the block partials */
  int sms = 0;
  int seg_cap = 0;
  uint64_t block_cap = 0;
  ist_segment *h_seg = nullptr, *d_seg = nullptr;
  imgstat_partial *h_out = nullptr, *d_out = nullptr, *d_part = nullptr;
  unsigned long long *h_bins = nullptr, *d_bins = nullptr;
};

namespace {

/* The decoder's first backend ready: with JPEG engines the hardware's
 * state, else the GPU-hybrid handle's (made here the first time). Which
 * backend takes a file must not depend on which decoder (lane) met it: a
 * device with engines whose state cannot be made fails the decoder rather
 * than sending its files elsewhere. */
nvjpegStatus_t first_backend_ready(imgstat_gpu_jpeg *d) {
  if (d->h->hw)
    return backend_ready(&d->hw, d->h->hw);
  nvjpegHandle_t hy = nullptr;
  nvjpegStatus_t s = hybrid_handle(d->h, &hy);
  return s == NVJPEG_STATUS_SUCCESS ? backend_ready(&d->hybrid, hy) : s;
}

/* A decoder on device with handles h (a reference taken by the caller):
 * its stream and parsed bitstream; no state yet. */
imgstat_status decoder_new(int device, ist_jpeg_handles *h,
                           imgstat_gpu_jpeg **out, imgstat_error *err) {
  *out = nullptr;
  imgstat_gpu_jpeg *d = new (std::nothrow) imgstat_gpu_jpeg;
  if (!d) {
    handles_release(h);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  memset(&d->times, 0, sizeof d->times);
  d->device = device;
  d->h = h;
  cudaError_t e = ist_cuda_start_gate(IST_GPU_START_DECODER);
  if (e == cudaSuccess)
    e = cudaSetDevice(d->device);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount,
                               d->device);
  if (e != cudaSuccess) {
    /* The cause first: the clean-up clears a fault's "injected" mark. */
    imgstat_status st = ist_cuda_fail(err, e, "cudaStreamCreate (nvJPEG)");
    imgstat_gpu_jpeg_destroy(d);
    return st;
  }
  nvjpegStatus_t s =
      h->hw ? api.JpegStreamCreate(h->hw, &d->parsed) : NVJPEG_STATUS_SUCCESS;
  if (s != NVJPEG_STATUS_SUCCESS) {
    d->parsed = nullptr;
    imgstat_gpu_jpeg_destroy(d);
    return nvjpeg_fail(err, IMGSTAT_ERR_DEVICE, s, "bitstream");
  }
  *out = d;
  return IMGSTAT_OK;
}

/* The device's default memory pool (where the planes come from,
 * cudaMallocAsync) keeps what is freed: with its default threshold of 0 it
 * would give the planes of every batch back to the driver at the next
 * synchronisation and map them again for the next batch. It never holds
 * more than the planes once in flight at the same time. */
imgstat_status keep_pool(int device, imgstat_error *err) {
  cudaMemPool_t pool = nullptr;
  IST_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device),
               "cudaDeviceGetDefaultMemPool");
  uint64_t keep = UINT64_MAX;
  IST_CUDA_TRY(
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
      "cudaMemPoolSetAttribute");
  return IMGSTAT_OK;
}

} // namespace

extern "C" imgstat_status imgstat_gpu_jpeg_create(imgstat_gpu *gpu,
                                                  imgstat_gpu_jpeg **out,
                                                  imgstat_error *err) {
  if (out)
    *out = nullptr;
  if (!gpu || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  return imgstat_gpu_jpeg_create_on(imgstat_gpu_device(gpu), 1, out, err);
}

extern "C" imgstat_status imgstat_gpu_jpeg_create_on(int device, int strict,
                                                     imgstat_gpu_jpeg **out,
                                                     imgstat_error *err) {
  if (out)
    *out = nullptr;
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output pointer");
  double t0 = now_s();
  imgstat_status st = imgstat_gpu_jpeg_load(nullptr, err);
  if (st != IMGSTAT_OK)
    return st;
  double t1 = now_s();
  if (device < 0)
    IST_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
  IST_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
  if ((st = keep_pool(device, err)) != IMGSTAT_OK)
    return st;
  double t2 = now_s();
  ist_jpeg_handles *h = nullptr;
  if ((st = handles_create(strict, &h, err)) != IMGSTAT_OK)
    return st;
  double t3 = now_s();
  if ((st = decoder_new(device, h, out, err)) != IMGSTAT_OK)
    return st;
  (*out)->times.load_s = t1 - t0;
  (*out)->times.device_s = t2 - t1;
  (*out)->times.handles_s = t3 - t2;
  (*out)->times.create_s = h->create_s;
  (*out)->times.info_s = h->info_s;
  (*out)->times.decoder_s = now_s() - t3;
  return IMGSTAT_OK;
}

extern "C" imgstat_status
imgstat_gpu_jpeg_create_sibling(const imgstat_gpu_jpeg *of,
                                imgstat_gpu_jpeg **out, imgstat_error *err) {
  if (out)
    *out = nullptr;
  if (!of || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder");
  pthread_mutex_lock(&of->h->lock);
  of->h->refs++;
  pthread_mutex_unlock(&of->h->lock);
  return decoder_new(of->device, of->h, out, err);
}

extern "C" imgstat_status imgstat_gpu_jpeg_prepare(imgstat_gpu_jpeg *d,
                                                   imgstat_error *err) {
  if (!d)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder");
  IST_CUDA_TRY(cudaSetDevice(d->device), "cudaSetDevice");
  IST_CUDA_TRY(ist_cuda_start_gate(IST_GPU_START_STATE), "nvJPEG's state");
  nvjpegStatus_t s = first_backend_ready(d);
  return s == NVJPEG_STATUS_SUCCESS
             ? IMGSTAT_OK
             : nvjpeg_fail(err, IMGSTAT_ERR_DEVICE, s, "state");
}

namespace {

/* Frees a pinned host (Pinned) or device buffer and forgets it. */
template <bool Pinned, typename T> void forget(T *&p) {
  if (Pinned)
    cudaFreeHost(p);
  else
    cudaFree(p);
  p = nullptr;
}

/* Frees the per-segment buffers (host and device) and forgets them: the
 * decoder's end, and reduce_buffers before it grows them. */
void free_segment_buffers(imgstat_gpu_jpeg *d) {
  forget<true>(d->h_seg);
  forget<true>(d->h_out);
  forget<true>(d->h_bins);
  forget<false>(d->d_seg);
  forget<false>(d->d_out);
  forget<false>(d->d_bins);
  d->seg_cap = 0;
}

} // namespace

extern "C" void imgstat_gpu_jpeg_destroy(imgstat_gpu_jpeg *d) {
  if (!d)
    return;
  cudaSetDevice(d->device);
  if (d->stream)
    cudaStreamSynchronize(d->stream);
  if (d->parsed)
    api.JpegStreamDestroy(d->parsed);
  backend_destroy(&d->hw);
  backend_destroy(&d->hybrid);
  free_segment_buffers(d);
  cudaFree(d->d_part);
  if (d->stream)
    cudaStreamDestroy(d->stream);
  /* the planes this decoder freed go back to the driver here, on this
   * thread, rather than with the context at the process's exit (a pool
   * still in use by another decoder keeps what that one holds) */
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, d->device) == cudaSuccess)
    cudaMemPoolTrimTo(pool, 0);
  ist_cuda_clear_error();
  handles_release(d->h);
  delete d;
}

extern "C" const char *imgstat_gpu_jpeg_backend(const imgstat_gpu_jpeg *d) {
  if (!d)
    return "none";
  ist_jpeg_handles *h = d->h;
  pthread_mutex_lock(&h->lock);
  if (!h->name[0]) {
    if (h->hw) {
      count_engines(h);
      if (h->engines > 0)
        snprintf(h->name, sizeof h->name, "hardware (%u engines) + GPU-hybrid",
                 h->engines);
      else
        snprintf(h->name, sizeof h->name, "hardware + GPU-hybrid");
    } else {
      snprintf(h->name, sizeof h->name, "GPU-hybrid");
    }
  }
  pthread_mutex_unlock(&h->lock);
  return h->name;
}

extern "C" int imgstat_gpu_jpeg_device(const imgstat_gpu_jpeg *d) {
  return d ? d->device : -1;
}

extern "C" void imgstat_gpu_jpeg_times_get(const imgstat_gpu_jpeg *d,
                                           imgstat_gpu_jpeg_times *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (d)
    *out = d->times;
}

extern "C" void imgstat_gpu_jpeg_item_free(imgstat_gpu_jpeg *d,
                                           imgstat_gpu_jpeg_item *it) {
  if (!d || !it)
    return;
  cudaSetDevice(d->device);
  /* one allocation holds the item's planes (alloc_planes) */
  if (it->planes[0])
    cudaFreeAsync(it->planes[0], d->stream);
  for (void *&p : it->planes)
    p = nullptr;
}

namespace {

/* Planes for every item of the list that has none: one stream-ordered
 * allocation an item, its planes 256 bytes aligned within it. */
imgstat_status alloc_planes(imgstat_gpu_jpeg *d, imgstat_gpu_jpeg_item **list,
                            int n, imgstat_error *err) {
  double t0 = now_s();
  for (int k = 0; k < n; k++) {
    imgstat_gpu_jpeg_item *it = list[k];
    if (it->planes[0])
      continue;
    size_t plane = (size_t)it->width * it->height;
    size_t stride = (plane + 255) / 256 * 256;
    void *block = nullptr;
    IST_CUDA_TRY(
        cudaMallocAsync(&block, stride ? stride * it->channels : 1, d->stream),
        "cudaMallocAsync (JPEG planes)");
    for (int c = 0; c < it->channels; c++)
      it->planes[c] = static_cast<unsigned char *>(block) + stride * c;
  }
  d->times.alloc_s += now_s() - t0;
  return IMGSTAT_OK;
}

/* One batched decode of the n items of list on backend b; nvJPEG's status. */
nvjpegStatus_t decode_batch(imgstat_gpu_jpeg *d, backend *b,
                            imgstat_gpu_jpeg_item **list, int n) {
  nvjpegOutputFormat_t format =
      list[0]->channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB;
  nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
  if (b->batch != n || b->format != format) {
    s = api.DecodeBatchedInitialize(b->handle, b->state, n, 1, format);
    if (s != NVJPEG_STATUS_SUCCESS) {
      b->batch = 0;
      return s;
    }
    b->batch = n;
    b->format = format;
  }
  const unsigned char **data = new (std::nothrow) const unsigned char *[n];
  size_t *lengths = new (std::nothrow) size_t[n];
  nvjpegImage_t *dest = new (std::nothrow) nvjpegImage_t[n];
  if (!data || !lengths || !dest) {
    s = NVJPEG_STATUS_ALLOCATOR_FAILURE;
  } else {
    for (int k = 0; k < n; k++) {
      data[k] = list[k]->data;
      lengths[k] = list[k]->size;
      memset(&dest[k], 0, sizeof dest[k]);
      for (int c = 0; c < list[k]->channels; c++) {
        dest[k].channel[c] = static_cast<unsigned char *>(list[k]->planes[c]);
        dest[k].pitch[c] = list[k]->width;
      }
    }
    double t0 = now_s();
    s = api.DecodeBatched(b->handle, b->state, data, lengths, dest, d->stream);
    double t1 = now_s();
    if (s == NVJPEG_STATUS_SUCCESS &&
        cudaStreamSynchronize(d->stream) != cudaSuccess)
      s = NVJPEG_STATUS_EXECUTION_FAILED;
    d->times.host_s += t1 - t0;
    d->times.wait_s += now_s() - t1;
    d->times.batches++;
  }
  delete[] data;
  delete[] lengths;
  delete[] dest;
  return s;
}

/* The items of list on backend b: the batch, and when it fails each item
 * alone, so that only the files nvJPEG refuses are marked (their status
 * FORMAT, the reason in err). A CUDA failure is the return value. */
imgstat_status decode_on(imgstat_gpu_jpeg *d, backend *b, int hardware,
                         imgstat_gpu_jpeg_item **list, int n,
                         imgstat_error *err) {
  if (n == 0)
    return IMGSTAT_OK;
  imgstat_status st = alloc_planes(d, list, n, err);
  if (st != IMGSTAT_OK)
    return st;
  nvjpegStatus_t s = decode_batch(d, b, list, n);
  if (s == NVJPEG_STATUS_SUCCESS) {
    for (int k = 0; k < n; k++) {
      list[k]->status = IMGSTAT_OK;
      list[k]->hardware = hardware;
    }
    return IMGSTAT_OK;
  }
  ist_cuda_clear_error();
  for (int k = 0; k < n; k++) {
    s = n > 1 ? decode_batch(d, b, &list[k], 1) : s;
    if (s == NVJPEG_STATUS_SUCCESS) {
      list[k]->status = IMGSTAT_OK;
      list[k]->hardware = hardware;
    } else {
      ist_cuda_clear_error();
      nvjpeg_fail(&list[k]->err, IMGSTAT_ERR_FORMAT, s, "decode");
      list[k]->status = IMGSTAT_ERR_FORMAT;
    }
  }
  /* a sticky error (the device lost) fails the decoder */
  cudaError_t e = cudaStreamSynchronize(d->stream);
  return e == cudaSuccess ? IMGSTAT_OK : ist_cuda_fail(err, e, "nvJPEG decode");
}

} // namespace

extern "C" imgstat_status imgstat_gpu_jpeg_decode(imgstat_gpu_jpeg *d,
                                                  imgstat_gpu_jpeg_item *items,
                                                  int n, imgstat_error *err) {
  if (!d || (n > 0 && !items) || n < 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder or items");
  IST_CUDA_TRY(cudaSetDevice(d->device), "cudaSetDevice");
  for (int k = 0; k < n; k++) {
    items[k].status = IMGSTAT_ERR_FORMAT;
    items[k].hardware = 0;
    memset(&items[k].err, 0, sizeof items[k].err);
    imgstat_error_set(&items[k].err, IMGSTAT_ERR_FORMAT, "not decoded");
  }
  /* the decoder's own failure, not the files' */
  nvjpegStatus_t ready = n > 0 ? first_backend_ready(d) : NVJPEG_STATUS_SUCCESS;
  if (ready != NVJPEG_STATUS_SUCCESS) {
    nvjpeg_fail(err, IMGSTAT_ERR_DEVICE, ready, "state");
    for (int k = 0; k < n; k++) {
      items[k].status = IMGSTAT_ERR_DEVICE;
      items[k].err = *err;
    }
    return IMGSTAT_ERR_DEVICE;
  }
  imgstat_gpu_jpeg_item **list =
      new (std::nothrow) imgstat_gpu_jpeg_item *[n > 0 ? 2 * n : 1];
  if (!list)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status st = IMGSTAT_OK;
  /* per channel count (one output format per batch): the hardware's share
   * first, then the GPU-hybrid's */
  const bool hw = d->h->hw != nullptr;
  for (int channels = 1; channels <= 3 && st == IMGSTAT_OK; channels += 2) {
    int nhw = 0, nhy = 0;
    double t0 = now_s();
    for (int k = 0; k < n; k++) {
      imgstat_gpu_jpeg_item *it = &items[k];
      if (it->channels != channels)
        continue;
      int on_hw = 0;
      if (hw && api.JpegStreamParseHeader(d->h->hw, it->data, it->size,
                                          d->parsed) == NVJPEG_STATUS_SUCCESS) {
        int unsupported = 1;
        on_hw = api.DecodeBatchedSupported(d->h->hw, d->parsed, &unsupported) ==
                    NVJPEG_STATUS_SUCCESS &&
                unsupported == 0;
      }
      if (on_hw)
        list[nhw++] = it;
      else
        list[n + nhy++] = it;
    }
    d->times.parse_s += now_s() - t0;
    st = decode_on(d, &d->hw, 1, list, nhw, err);
    /* what the hardware refused, the GPU-hybrid backend tries */
    for (int k = 0; k < nhw && st == IMGSTAT_OK; k++)
      if (list[k]->status != IMGSTAT_OK)
        list[n + nhy++] = list[k];
    nvjpegStatus_t hs = NVJPEG_STATUS_SUCCESS;
    if (nhy > 0 && st == IMGSTAT_OK) {
      nvjpegHandle_t hy = nullptr;
      hs = hybrid_handle(d->h, &hy);
      if (hs == NVJPEG_STATUS_SUCCESS)
        hs = backend_ready(&d->hybrid, hy);
    }
    if (hs != NVJPEG_STATUS_SUCCESS) {
      /* no GPU-hybrid backend: those files go to the CPU decoders */
      for (int k = 0; k < nhy; k++)
        nvjpeg_fail(&list[n + k]->err, IMGSTAT_ERR_FORMAT, hs,
                    "GPU-hybrid start");
    } else if (st == IMGSTAT_OK) {
      st = decode_on(d, &d->hybrid, 0, list + n, nhy, err);
    }
  }
  delete[] list;
  if (st != IMGSTAT_OK)
    for (int k = 0; k < n; k++) {
      imgstat_gpu_jpeg_item_free(d, &items[k]);
      items[k].status = st;
      items[k].err = *err;
    }
  return st;
}

extern "C" imgstat_status
imgstat_gpu_jpeg_item_download(imgstat_gpu_jpeg *d,
                               const imgstat_gpu_jpeg_item *it,
                               imgstat_image *img, imgstat_error *err) {
  if (!d || !it || !img || it->status != IMGSTAT_OK ||
      img->channels != it->channels || img->width != it->width ||
      img->height != it->height || img->sample != IMGSTAT_U8)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoded item");
  IST_CUDA_TRY(cudaSetDevice(d->device), "cudaSetDevice");
  /* A stream of its own: the decoder's stream belongs to the batch being
   * decoded meanwhile (on another thread), and the item's planes are
   * complete already (decode_batch synchronized). */
  cudaStream_t s = nullptr;
  IST_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
               "cudaStreamCreate (JPEG download)");
  size_t stride = imgstat_image_stride(img);
  cudaError_t e = cudaSuccess;
  const char *what = "cudaMemcpy2D (JPEG planes)";
  for (int c = 0; c < it->channels && e == cudaSuccess; c++)
    e = cudaMemcpy2DAsync(img->planes[c], stride, it->planes[c], it->width,
                          it->width, it->height, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) {
    what = "cudaStreamSynchronize (JPEG download)";
    e = cudaStreamSynchronize(s);
  }
  cudaStreamDestroy(s);
  return e == cudaSuccess ? IMGSTAT_OK : ist_cuda_fail(err, e, what);
}

namespace {

/* Room for nseg segments of each kind, their partials and counts, and
 * nblocks block partials (grown, kept). */
imgstat_status reduce_buffers(imgstat_gpu_jpeg *d, int nseg, uint64_t nblocks,
                              imgstat_error *err) {
  if (nseg > d->seg_cap) {
    int cap = nseg > 2 * d->seg_cap ? nseg : 2 * d->seg_cap;
    free_segment_buffers(d);
    const size_t bins = sizeof(unsigned long long) * 256 * (size_t)cap;
    IST_CUDA_TRY(cudaMallocHost(&d->h_seg, sizeof(ist_segment) * 2 * cap),
                 "cudaMallocHost (segments)");
    IST_CUDA_TRY(cudaMallocHost(&d->h_out, sizeof(imgstat_partial) * cap),
                 "cudaMallocHost (partials)");
    IST_CUDA_TRY(cudaMallocHost(&d->h_bins, bins), "cudaMallocHost (counts)");
    IST_CUDA_TRY(cudaMalloc(&d->d_seg, sizeof(ist_segment) * 2 * cap),
                 "cudaMalloc (segments)");
    IST_CUDA_TRY(cudaMalloc(&d->d_out, sizeof(imgstat_partial) * cap),
                 "cudaMalloc (partials)");
    IST_CUDA_TRY(cudaMalloc(&d->d_bins, bins), "cudaMalloc (counts)");
    d->seg_cap = cap;
  }
  if (nblocks > d->block_cap) {
    uint64_t cap = nblocks > 2 * d->block_cap ? nblocks : 2 * d->block_cap;
    forget<false>(d->d_part);
    d->block_cap = 0;
    IST_CUDA_TRY(cudaMalloc(&d->d_part, sizeof(imgstat_partial) * cap),
                 "cudaMalloc (block partials)");
    d->block_cap = cap;
  }
  return IMGSTAT_OK;
}

} // namespace

extern "C" imgstat_status
imgstat_gpu_jpeg_reduce(imgstat_gpu_jpeg *d, const imgstat_gpu_jpeg_item *items,
                        int n, imgstat_partial *out, uint64_t *counts,
                        imgstat_error *err) {
  if (!d || n < 0 || (n > 0 && !items))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder or items");
  if (n == 0 || (!out && !counts))
    return IMGSTAT_OK;
  IST_CUDA_TRY(cudaSetDevice(d->device), "cudaSetDevice");
  /* the segments: one a non-empty plane of a decoded item */
  int nseg = 0;
  uint64_t nblocks = 0, hblocks = 0;
  for (int k = 0; k < n; k++) {
    const imgstat_gpu_jpeg_item *it = &items[k];
    if (it->status != IMGSTAT_OK)
      continue;
    uint64_t plane = (uint64_t)it->width * it->height;
    for (int c = 0; c < it->channels; c++) {
      size_t at = (size_t)k * IMGSTAT_INLINE_CHANNELS + c;
      if (plane == 0) { /* nothing to reduce: the empty figures */
        if (out)
          out[at] = ist_partial_empty();
        if (counts)
          memset(counts + 256 * at, 0, 256 * sizeof *counts);
        continue;
      }
      nseg++;
      nblocks += ist_fast_segment_blocks(plane, d->sms);
      hblocks += ist_norm_gpu::hist_u8_segment_blocks(plane, d->sms);
    }
  }
  if (nseg == 0)
    return IMGSTAT_OK;
  if (nblocks > 0x7fffffffu || hblocks > 0x7fffffffu)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "a batch of %d planes is "
                             "too large for one launch",
                             nseg);
  imgstat_status st = reduce_buffers(d, nseg, out ? nblocks : 0, err);
  if (st != IMGSTAT_OK)
    return st;
  /* h_seg: the statistics' segments [0, nseg), the histograms' [nseg,
   * 2 nseg): the same planes, each kernel's blocks */
  int s = 0;
  uint64_t first = 0, hfirst = 0;
  for (int k = 0; k < n; k++) {
    const imgstat_gpu_jpeg_item *it = &items[k];
    uint64_t plane = (uint64_t)it->width * it->height;
    if (it->status != IMGSTAT_OK || plane == 0)
      continue;
    for (int c = 0; c < it->channels; c++, s++) {
      ist_segment *g = &d->h_seg[s];
      g->plane = it->planes[c];
      g->n = plane;
      g->first_block = first;
      g->nblocks = ist_fast_segment_blocks(plane, d->sms);
      first += g->nblocks;
      ist_segment *h = &d->h_seg[nseg + s];
      *h = *g;
      h->first_block = hfirst;
      h->nblocks = ist_norm_gpu::hist_u8_segment_blocks(plane, d->sms);
      hfirst += h->nblocks;
    }
  }
  const size_t bin_bytes = sizeof(unsigned long long) * 256 * (size_t)nseg;
  IST_CUDA_TRY(cudaMemcpyAsync(d->d_seg, d->h_seg,
                               sizeof(ist_segment) * 2 * (size_t)nseg,
                               cudaMemcpyHostToDevice, d->stream),
               "cudaMemcpyAsync (segments)");
  if (out) {
    IST_CUDA_TRY(ist_fast_stats_segments(IMGSTAT_U8, d->d_seg, nseg, nblocks,
                                         d->d_part, d->d_out, d->stream),
                 "batched reduction");
    IST_CUDA_TRY(cudaMemcpyAsync(d->h_out, d->d_out,
                                 sizeof(imgstat_partial) * nseg,
                                 cudaMemcpyDeviceToHost, d->stream),
                 "cudaMemcpyAsync (partials)");
  }
  if (counts) {
    IST_CUDA_TRY(cudaMemsetAsync(d->d_bins, 0, bin_bytes, d->stream),
                 "cudaMemsetAsync (counts)");
    IST_CUDA_TRY(ist_norm_gpu::hist_u8_segments_launch(
                     d->d_seg + nseg, nseg, hblocks, d->d_bins, d->stream),
                 "batched histograms");
    IST_CUDA_TRY(cudaMemcpyAsync(d->h_bins, d->d_bins, bin_bytes,
                                 cudaMemcpyDeviceToHost, d->stream),
                 "cudaMemcpyAsync (counts)");
  }
  IST_CUDA_TRY(cudaStreamSynchronize(d->stream), "batched reduction");
  s = 0;
  for (int k = 0; k < n; k++) {
    const imgstat_gpu_jpeg_item *it = &items[k];
    if (it->status != IMGSTAT_OK || (uint64_t)it->width * it->height == 0)
      continue;
    for (int c = 0; c < it->channels; c++, s++) {
      size_t at = (size_t)k * IMGSTAT_INLINE_CHANNELS + c;
      if (out)
        out[at] = d->h_out[s];
      if (counts)
        for (int b = 0; b < 256; b++)
          counts[256 * at + b] = d->h_bins[(size_t)256 * s + b];
    }
  }
  return IMGSTAT_OK;
}

extern "C" imgstat_status
imgstat_gpu_jpeg_stats(imgstat_gpu_jpeg *d, const imgstat_gpu_jpeg_item *items,
                       int n, imgstat_partial *out, imgstat_error *err) {
  if (n > 0 && !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output");
  return imgstat_gpu_jpeg_reduce(d, items, n, out, nullptr, err);
}
