/*
 * The GPU backend's C API (imgstat_cuda.h): device set-up, uploads through
 * pinned staging buffers, and the reductions of cuda/driver.cu.
 *
 * An image is uploaded plane after plane on one copy stream, through two
 * pinned staging buffers used in turn: while buffer k's chunk is being
 * copied to the device, the host fills buffer k^1 from the (pageable) image.
 * Each plane's reduction starts on its own stream as soon as its last chunk
 * has landed, so it overlaps the upload of the next plane. When the image
 * does not fit in device memory, each plane is reduced in ranges through a
 * smaller buffer and the range partials are merged on the host in order.
 */
#include "cuda_check.cuh"
#include "gpu_fault.h"
#include "imgstat_cuda.h"
#include "reduce.cuh"

#include <atomic>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and fault injection (cuda_check.cuh) ---------------------- */

namespace {

/* IMGSTAT_GPU_FAULT, read once: C++ makes the initialisation of a local
 * static thread-safe, and the first reader may be the thread that creates
 * the context while another decodes. */
struct FaultSwitch {
  ist_gpu_fault spec;
  bool valid;
  char value[40];    /* the variable's value, shortened, for messages */
  char problem[160]; /* why it is malformed */
};

const FaultSwitch &fault_switch() {
  static const FaultSwitch sw = [] {
    FaultSwitch f;
    memset(&f, 0, sizeof f);
    const char *s = getenv("IMGSTAT_GPU_FAULT");
    f.valid = ist_gpu_fault_parse(s, &f.spec) != 0;
    snprintf(f.value, sizeof f.value, "%.32s", s ? s : "");
    if (!f.valid)
      snprintf(f.problem, sizeof f.problem,
               "IMGSTAT_GPU_FAULT='%.32s' is not N, alloc:N or launch:N "
               "(docs/gpu.md)",
               f.value);
    return f;
  }();
  return sw;
}

std::atomic<unsigned long long> g_fault_events{0}; /* events counted */
std::atomic<bool> g_fault_unreported{false}; /* injected, not yet mapped */

/* An event of `kind` is about to happen: cudaSuccess, or `injected` when it
 * is the one IMGSTAT_GPU_FAULT names. */
cudaError_t fault_gate(unsigned kind, cudaError_t injected) {
  const FaultSwitch &f = fault_switch();
  if (!(f.spec.kinds & kind))
    return cudaSuccess;
  if (g_fault_events.fetch_add(1) + 1 != f.spec.n)
    return cudaSuccess;
  g_fault_unreported.store(true);
  return injected;
}

} // namespace

imgstat_status ist_cuda_fail(imgstat_error *err, cudaError_t e,
                             const char *what) {
  const bool injected =
      g_fault_unreported.exchange(false) &&
      (e == cudaErrorMemoryAllocation || e == cudaErrorLaunchOutOfResources);
  ist_cuda_clear_error();
  return imgstat_error_set(
      err,
      e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
          ? IMGSTAT_ERR_NODEVICE
          : IMGSTAT_ERR_DEVICE,
      "CUDA error in %s: %s (%s%s%s)", what, cudaGetErrorString(e),
      cudaGetErrorName(e), injected ? "; injected by IMGSTAT_GPU_FAULT=" : "",
      injected ? fault_switch().value : "");
}

void ist_cuda_clear_error(void) {
  (void)cudaGetLastError();
  g_fault_unreported.store(false); /* handled: no note on a later error */
}

cudaError_t ist_cuda_malloc(void **p, size_t bytes) {
  *p = nullptr;
  cudaError_t e =
      fault_gate(IMGSTAT_GPU_FAULT_ALLOC, cudaErrorMemoryAllocation);
  if (e == cudaSuccess)
    e = cudaMalloc(p, bytes);
  if (e != cudaSuccess)
    *p = nullptr;
  return e;
}

cudaError_t ist_cuda_malloc_host(void **p, size_t bytes) {
  *p = nullptr;
  cudaError_t e =
      fault_gate(IMGSTAT_GPU_FAULT_ALLOC, cudaErrorMemoryAllocation);
  if (e == cudaSuccess)
    e = cudaMallocHost(p, bytes);
  if (e != cudaSuccess)
    *p = nullptr;
  return e;
}

cudaError_t ist_cuda_launch_gate(void) {
  return fault_gate(IMGSTAT_GPU_FAULT_LAUNCH, cudaErrorLaunchOutOfResources);
}

const char *ist_cuda_fault_problem(void) {
  const FaultSwitch &f = fault_switch();
  return f.valid ? nullptr : f.problem;
}

/* ---- the backend ------------------------------------------------------ */

namespace {

constexpr size_t kStagingBytes = (size_t)4 << 20; /* per staging buffer */
constexpr size_t kMinChunkBuffer = (size_t)64 << 10;

} // namespace

struct imgstat_gpu {
  int device;
  int sm_count;
  char name[320];
  cudaStream_t copy;
  cudaStream_t compute[IMGSTAT_MAX_CHANNELS];
  cudaEvent_t staged[2];                      /* staging buffer k is free */
  cudaEvent_t uploaded[IMGSTAT_MAX_CHANNELS]; /* plane c is on the device */
  unsigned char *h_staging[2];
  imgstat_partial *h_out; /* pinned: the partials copied back */
  imgstat_partial *d_out;
  unsigned char *d_planes;
  size_t d_planes_bytes;
  unsigned char *d_scratch;
  size_t scratch_bytes;
  size_t memory_limit; /* 0: as much as the device gives */
};

namespace {

#define GPU_CHECK(call, what)                                                  \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return ist_cuda_fail(err, e_, what);                                     \
  } while (0)

size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Grows a device buffer to at least `bytes` (contents are not kept). */
cudaError_t grow(unsigned char **buf, size_t *have, size_t bytes) {
  if (*have >= bytes && *buf)
    return cudaSuccess;
  if (*buf) {
    cudaError_t e = cudaFree(*buf);
    *buf = nullptr;
    *have = 0;
    if (e != cudaSuccess)
      return e;
  }
  cudaError_t e = ist_cuda_malloc((void **)buf, bytes);
  if (e != cudaSuccess)
    return e;
  *have = bytes;
  return cudaSuccess;
}

/* Copies n bytes from host memory to d_dst through the staging buffers.
 * `turn` alternates the buffers across calls. Asynchronous on gpu->copy. */
cudaError_t upload(imgstat_gpu *gpu, void *d_dst, const void *h_src, size_t n,
                   unsigned *turn) {
  const unsigned char *src = static_cast<const unsigned char *>(h_src);
  unsigned char *dst = static_cast<unsigned char *>(d_dst);
  for (size_t off = 0; off < n; off += kStagingBytes) {
    size_t len = n - off < kStagingBytes ? n - off : kStagingBytes;
    unsigned k = (*turn)++ & 1;
    /* Wait until the copy that last read buffer k has finished. */
    cudaError_t e = cudaEventSynchronize(gpu->staged[k]);
    if (e != cudaSuccess)
      return e;
    memcpy(gpu->h_staging[k], src + off, len);
    e = cudaMemcpyAsync(dst + off, gpu->h_staging[k], len,
                        cudaMemcpyHostToDevice, gpu->copy);
    if (e != cudaSuccess)
      return e;
    e = cudaEventRecord(gpu->staged[k], gpu->copy);
    if (e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

imgstat_status check_image(const imgstat_image *img, imgstat_error *err) {
  if (!img || img->channels < 1 || img->channels > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid image");
  if (img->sample != IMGSTAT_U8 && img->sample != IMGSTAT_U16 &&
      img->sample != IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid sample type");
  uint64_t n = (uint64_t)img->width * img->height;
  if (n > 0)
    for (int c = 0; c < img->channels; ++c)
      if (!img->planes[c])
        return imgstat_error_set(err, IMGSTAT_ERR_ARG, "image plane missing");
  return IMGSTAT_OK;
}

/* Whole planes on the device: upload overlaps the reductions. */
imgstat_status stats_resident(imgstat_gpu *gpu, const imgstat_image *img,
                              int kernel, uint64_t n, size_t plane_slot,
                              size_t scratch_each,
                              imgstat_partial out[IMGSTAT_MAX_CHANNELS],
                              imgstat_error *err) {
  const size_t plane_bytes = (size_t)n * img->sample;
  unsigned turn = 0;
  for (int c = 0; c < img->channels; ++c) {
    unsigned char *d_plane = gpu->d_planes + c * plane_slot;
    GPU_CHECK(upload(gpu, d_plane, img->planes[c], plane_bytes, &turn),
              "upload");
    GPU_CHECK(cudaEventRecord(gpu->uploaded[c], gpu->copy), "cudaEventRecord");
    GPU_CHECK(cudaStreamWaitEvent(gpu->compute[c], gpu->uploaded[c], 0),
              "cudaStreamWaitEvent");
    size_t bytes = scratch_each;
    GPU_CHECK(ist_reduce_stats(kernel, 0, d_plane, img->sample, n, 1, 0,
                               gpu->d_scratch + c * scratch_each, &bytes,
                               gpu->d_out + c, gpu->compute[c]),
              "reduction");
    GPU_CHECK(cudaMemcpyAsync(gpu->h_out + c, gpu->d_out + c,
                              sizeof(imgstat_partial), cudaMemcpyDeviceToHost,
                              gpu->compute[c]),
              "cudaMemcpyAsync (results)");
  }
  for (int c = 0; c < img->channels; ++c)
    GPU_CHECK(cudaStreamSynchronize(gpu->compute[c]), "reduction");
  for (int c = 0; c < img->channels; ++c)
    out[c] = gpu->h_out[c];
  return IMGSTAT_OK;
}

/* Planes larger than the device buffer: ranges of `range` samples, one after
 * another, merged on the host in order. */
imgstat_status stats_chunked(imgstat_gpu *gpu, const imgstat_image *img,
                             int kernel, uint64_t n, uint64_t range,
                             size_t scratch_each,
                             imgstat_partial out[IMGSTAT_MAX_CHANNELS],
                             imgstat_error *err) {
  const int is_float = img->sample == IMGSTAT_F32;
  unsigned turn = 0;
  for (int c = 0; c < img->channels; ++c) {
    imgstat_partial acc = ist_partial_empty();
    const unsigned char *plane =
        static_cast<const unsigned char *>(img->planes[c]);
    for (uint64_t first = 0; first < n; first += range) {
      uint64_t len = n - first < range ? n - first : range;
      GPU_CHECK(upload(gpu, gpu->d_planes, plane + first * img->sample,
                       (size_t)len * img->sample, &turn),
                "upload");
      GPU_CHECK(cudaEventRecord(gpu->uploaded[0], gpu->copy),
                "cudaEventRecord");
      GPU_CHECK(cudaStreamWaitEvent(gpu->compute[0], gpu->uploaded[0], 0),
                "cudaStreamWaitEvent");
      size_t bytes = scratch_each;
      GPU_CHECK(ist_reduce_stats(kernel, 0, gpu->d_planes, img->sample, len, 1,
                                 first, gpu->d_scratch, &bytes, gpu->d_out,
                                 gpu->compute[0]),
                "reduction");
      GPU_CHECK(cudaMemcpyAsync(gpu->h_out, gpu->d_out, sizeof(imgstat_partial),
                                cudaMemcpyDeviceToHost, gpu->compute[0]),
                "cudaMemcpyAsync (results)");
      /* The next range's upload overwrites the buffer: wait for this one. */
      GPU_CHECK(cudaStreamSynchronize(gpu->compute[0]), "reduction");
      if (is_float)
        ist_partial_combine<true>(&acc, gpu->h_out);
      else
        ist_partial_combine<false>(&acc, gpu->h_out);
    }
    out[c] = acc;
  }
  return IMGSTAT_OK;
}

imgstat_status create_resources(imgstat_gpu *gpu, imgstat_error *err) {
  GPU_CHECK(cudaStreamCreateWithFlags(&gpu->copy, cudaStreamNonBlocking),
            "cudaStreamCreate");
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; ++c) {
    GPU_CHECK(
        cudaStreamCreateWithFlags(&gpu->compute[c], cudaStreamNonBlocking),
        "cudaStreamCreate");
    GPU_CHECK(
        cudaEventCreateWithFlags(&gpu->uploaded[c], cudaEventDisableTiming),
        "cudaEventCreate");
  }
  for (int k = 0; k < 2; ++k) {
    GPU_CHECK(cudaEventCreateWithFlags(&gpu->staged[k], cudaEventDisableTiming),
              "cudaEventCreate");
    GPU_CHECK(ist_cuda_malloc_host((void **)&gpu->h_staging[k], kStagingBytes),
              "cudaMallocHost (staging)");
  }
  GPU_CHECK(
      ist_cuda_malloc_host((void **)&gpu->h_out,
                           IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
      "cudaMallocHost");
  GPU_CHECK(ist_cuda_malloc((void **)&gpu->d_out,
                            IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
            "cudaMalloc");
  return IMGSTAT_OK;
}

/* Runs every fast kernel once on a few bytes: proves the device can run this
 * build's code (no kernel image for an older GPU shows here, not on the first
 * image) and loads the module now, while the caller is still decoding. */
imgstat_status warm_up(imgstat_gpu *gpu, imgstat_error *err) {
  const imgstat_sample samples[3] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  GPU_CHECK(grow(&gpu->d_planes, &gpu->d_planes_bytes, 4096), "cudaMalloc");
  GPU_CHECK(cudaMemsetAsync(gpu->d_planes, 0, 4096, gpu->compute[0]),
            "cudaMemset");
  size_t bytes = 0;
  for (int s = 0; s < 3; ++s) {
    GPU_CHECK(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, nullptr, samples[s],
                               1000, 1, 0, nullptr, &bytes, nullptr,
                               gpu->compute[0]),
              "scratch size");
    GPU_CHECK(grow(&gpu->d_scratch, &gpu->scratch_bytes, bytes), "cudaMalloc");
    GPU_CHECK(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, gpu->d_planes,
                               samples[s], 1000, 1, 0, gpu->d_scratch, &bytes,
                               gpu->d_out, gpu->compute[0]),
              "first launch");
  }
  GPU_CHECK(cudaStreamSynchronize(gpu->compute[0]), "first launch");
  return IMGSTAT_OK;
}

} // namespace

extern "C" {

int imgstat_gpu_compiled(void) { return 1; }

imgstat_status imgstat_gpu_create(int device, imgstat_gpu **out,
                                  imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output pointer");
  *out = nullptr;
  /* A malformed fault switch is said, not ignored (nor hidden by a missing
   * device): a test that sets it must not pass without faults. */
  if (const char *why = ist_cuda_fault_problem())
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "%s", why);
  int driver = 0;
  cudaError_t e = cudaDriverGetVersion(&driver);
  if (e != cudaSuccess || driver == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                             "no CUDA driver is installed");
  int count = 0;
  e = cudaGetDeviceCount(&count);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE, "no CUDA device");
  if (e == cudaErrorInsufficientDriver) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return imgstat_error_set(
        err, IMGSTAT_ERR_DEVICE,
        "the CUDA driver is too old (it supports CUDA %d.%d, imgstat needs "
        "%d.%d)",
        driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  }
  if (e != cudaSuccess)
    return ist_cuda_fail(err, e, "cudaGetDeviceCount");
  if (device < 0) {
    e = cudaGetDevice(&device);
    if (e != cudaSuccess)
      return ist_cuda_fail(err, e, "cudaGetDevice");
  }
  if (device >= count)
    return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                             "no CUDA device %d (%d present)", device, count);
  GPU_CHECK(cudaSetDevice(device), "cudaSetDevice");
  GPU_CHECK(cudaFree(0), "CUDA initialisation");

  imgstat_gpu *gpu = static_cast<imgstat_gpu *>(calloc(1, sizeof *gpu));
  if (!gpu)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  gpu->device = device;
  cudaDeviceProp prop;
  imgstat_status st = IMGSTAT_OK;
  e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) {
    st = ist_cuda_fail(err, e, "cudaGetDeviceProperties");
  } else {
    gpu->sm_count = prop.multiProcessorCount;
    snprintf(gpu->name, sizeof gpu->name, "%s (sm_%d%d)", prop.name, prop.major,
             prop.minor);
    st = create_resources(gpu, err);
    if (st == IMGSTAT_OK)
      st = warm_up(gpu, err);
  }
  if (st != IMGSTAT_OK) {
    imgstat_gpu_destroy(gpu);
    return st;
  }
  *out = gpu;
  return IMGSTAT_OK;
}

void imgstat_gpu_destroy(imgstat_gpu *gpu) {
  if (!gpu)
    return;
  /* Teardown errors have nowhere to go: each release is attempted. */
  (void)cudaSetDevice(gpu->device);
  (void)cudaDeviceSynchronize();
  if (gpu->copy)
    (void)cudaStreamDestroy(gpu->copy);
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; ++c) {
    if (gpu->compute[c])
      (void)cudaStreamDestroy(gpu->compute[c]);
    if (gpu->uploaded[c])
      (void)cudaEventDestroy(gpu->uploaded[c]);
  }
  for (int k = 0; k < 2; ++k) {
    if (gpu->staged[k])
      (void)cudaEventDestroy(gpu->staged[k]);
    if (gpu->h_staging[k])
      (void)cudaFreeHost(gpu->h_staging[k]);
  }
  if (gpu->h_out)
    (void)cudaFreeHost(gpu->h_out);
  if (gpu->d_out)
    (void)cudaFree(gpu->d_out);
  if (gpu->d_planes)
    (void)cudaFree(gpu->d_planes);
  if (gpu->d_scratch)
    (void)cudaFree(gpu->d_scratch);
  free(gpu);
}

const char *imgstat_gpu_device_name(const imgstat_gpu *gpu) {
  return gpu ? gpu->name : "none";
}

void imgstat_gpu_set_memory_limit(imgstat_gpu *gpu, size_t bytes) {
  if (gpu)
    gpu->memory_limit = bytes;
}

imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel,
                                 imgstat_partial out[IMGSTAT_MAX_CHANNELS],
                                 imgstat_error *err) {
  if (!gpu || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  if (kernel != IMGSTAT_KERNEL_FAST && (kernel < IMGSTAT_KERNEL_LADDER_MIN ||
                                        kernel > IMGSTAT_KERNEL_LADDER_MAX))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "unknown kernel %d (0 or 1..7)", kernel);
  imgstat_status st = check_image(img, err);
  if (st != IMGSTAT_OK)
    return st;
  const uint64_t n = (uint64_t)img->width * img->height;
  if (n == 0) {
    for (int c = 0; c < img->channels; ++c)
      out[c] = ist_partial_empty();
    return IMGSTAT_OK;
  }
  /* The context may have been created on another thread. */
  GPU_CHECK(cudaSetDevice(gpu->device), "cudaSetDevice");

  const int channels = img->channels;
  const size_t plane_bytes = (size_t)n * img->sample;
  /* Planes back to back, as on the host: the kernels take any alignment, and
   * every image then exercises the unaligned heads and tails too. */
  const size_t plane_slot = plane_bytes;
  size_t scratch_each = 0;
  GPU_CHECK(ist_reduce_stats(kernel, 0, nullptr, img->sample, n, 1, 0, nullptr,
                             &scratch_each, nullptr, nullptr),
            "scratch size");
  scratch_each = align256(scratch_each);
  GPU_CHECK(grow(&gpu->d_scratch, &gpu->scratch_bytes, scratch_each * channels),
            "cudaMalloc (scratch)");

  /* Whole image resident when it fits; else ranges through a smaller
   * buffer. */
  size_t want = plane_slot * channels;
  bool resident = gpu->memory_limit == 0 || want <= gpu->memory_limit;
  if (resident) {
    cudaError_t e = grow(&gpu->d_planes, &gpu->d_planes_bytes, want);
    if (e == cudaErrorMemoryAllocation) {
      ist_cuda_clear_error(); /* not sticky: clear it, go by ranges */
      resident = false;
    } else if (e != cudaSuccess) {
      return ist_cuda_fail(err, e, "cudaMalloc (image)");
    }
  }
  if (resident) {
    st =
        stats_resident(gpu, img, kernel, n, plane_slot, scratch_each, out, err);
  } else {
    size_t buf = gpu->memory_limit;
    if (buf == 0) {
      size_t free_bytes = 0, total = 0;
      GPU_CHECK(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
      buf = free_bytes / 2;
    }
    if (buf > align256(plane_slot))
      buf = align256(plane_slot);
    buf &= ~(size_t)255;
    if (buf < kMinChunkBuffer)
      buf = kMinChunkBuffer;
    cudaError_t e = cudaSuccess;
    /* Halve until an allocation succeeds. */
    for (;;) {
      e = grow(&gpu->d_planes, &gpu->d_planes_bytes, buf);
      if (e != cudaErrorMemoryAllocation || buf <= kMinChunkBuffer)
        break;
      ist_cuda_clear_error();
      buf /= 2;
    }
    if (e != cudaSuccess)
      return ist_cuda_fail(err, e, "cudaMalloc (image buffer)");
    uint64_t range = buf / img->sample;
    size_t bytes = 0;
    GPU_CHECK(ist_reduce_stats(kernel, 0, nullptr, img->sample, range, 1, 0,
                               nullptr, &bytes, nullptr, nullptr),
              "scratch size");
    GPU_CHECK(grow(&gpu->d_scratch, &gpu->scratch_bytes, bytes),
              "cudaMalloc (scratch)");
    st =
        stats_chunked(gpu, img, kernel, n, range, gpu->scratch_bytes, out, err);
  }
  if (st != IMGSTAT_OK) {
    /* Leave no work in flight on buffers the next call will reuse. */
    (void)cudaDeviceSynchronize();
  }
  return st;
}

} /* extern "C" */
