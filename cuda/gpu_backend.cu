/*
 * The statistics on the GPU (imgstat_cuda.h): submit / wait of host images,
 * the statistics of device images, and the reductions of cuda/driver.cu on
 * a slot of the context (context.cuh).
 *
 * A host image is uploaded plane after plane on the slot's stream (through
 * its two pinned staging buffers, or directly from pinned planes). Each
 * plane's reduction starts on its own stream as soon as its last bytes have
 * landed, so it overlaps the upload of the next plane; the partials come
 * back through pinned memory and every plane's stream is joined back into
 * the slot's stream, which wait() synchronizes. When the image does not fit
 * in device memory, each plane is reduced in ranges through a smaller
 * buffer and the range partials are merged on the host in order (then the
 * job is done when submit returns). Float planes go by aligned ranges of
 * 2^k chunks of the float order, whose results the host merges by the same
 * chunk tree (ist_fo_stack): the bits of the whole plane.
 */
#include "context.cuh"
#include "float_order.h"
#include "reduce.cuh"

#include <string.h>

namespace {

constexpr size_t kMinChunkBuffer = (size_t)64 << 10;

imgstat_status check_kernel(int kernel, imgstat_error *err) {
  if (kernel != IMGSTAT_KERNEL_FAST && (kernel < IMGSTAT_KERNEL_LADDER_MIN ||
                                        kernel > IMGSTAT_KERNEL_LADDER_MAX))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "unknown kernel %d (0 or 1..7)", kernel);
  return IMGSTAT_OK;
}

/* The arguments of the statistics of a host image; `to` is where results
 * go (out or the ticket). */
imgstat_status check_stats(const imgstat_gpu *gpu, const void *to,
                           const imgstat_image *img, int kernel,
                           imgstat_error *err) {
  if (!gpu || !to)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  imgstat_status st = check_kernel(kernel, err);
  return st == IMGSTAT_OK ? ist_gpu_check_image(img, err) : st;
}

/* Planes larger than the device buffer: ranges of samples, one after
 * another, merged on the host (integers in order; floats by the chunk tree,
 * each range an aligned subtree of 2^k chunks), into out. */
imgstat_status stats_ranges(imgstat_gpu *gpu, ist_slot *s,
                            const imgstat_image *img, int kernel, uint64_t n,
                            imgstat_partial *out, imgstat_error *err) {
  const size_t sample = (size_t)img->sample;
  const size_t row_bytes = (size_t)img->width * sample;
  size_t buf = gpu->memory_limit.load();
  if (buf == 0) {
    size_t free_bytes = 0, total = 0;
    IST_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    buf = free_bytes / 2;
  }
  if (buf > ist_align256((size_t)n * sample))
    buf = ist_align256((size_t)n * sample);
  buf &= ~(size_t)255;
  /* f32: at least one chunk of the float order */
  const size_t min_buf = img->sample == IMGSTAT_F32
                             ? (size_t)IST_FO_CHUNK * sizeof(float)
                             : kMinChunkBuffer;
  if (buf < min_buf)
    buf = min_buf;
  cudaError_t e = cudaSuccess;
  /* Halve until an allocation succeeds. */
  for (;;) {
    e = s->planes.reserve(buf);
    if (e != cudaErrorMemoryAllocation || buf <= min_buf)
      break;
    ist_cuda_clear_error();
    buf /= 2;
  }
  IST_CUDA_TRY(e, "cudaMalloc (image buffer)");
  uint64_t range = buf / sample;
  if (img->sample == IMGSTAT_F32) {
    /* aligned ranges of 2^k chunks: subtrees of the chunk tree */
    uint64_t r = IST_FO_CHUNK;
    while (r * 2 <= range)
      r *= 2;
    range = r;
  }
  size_t bytes = 0;
  IST_CUDA_TRY(ist_reduce_stats(kernel, 0, nullptr, img->sample, range, 1, 0,
                                nullptr, &bytes, nullptr, nullptr),
               "scratch size");
  IST_CUDA_TRY(s->scratch.reserve(bytes), "cudaMalloc (scratch)");
  imgstat_partial *h_out = s->h_out.as<imgstat_partial>();
  imgstat_partial *d_out = s->d_out.as<imgstat_partial>();
  ist_fo_stack tree;
  const bool f32 = img->sample == IMGSTAT_F32;
  for (int c = 0; c < img->channels; ++c) {
    imgstat_partial acc = ist_partial_empty();
    ist_fo_stack_init(&tree);
    /* f32: the whole plane's shift K, for every range */
    const double k =
        f32 ? ist_fo_plane_shift(static_cast<const float *>(img->planes[c]),
                                 img->width, imgstat_image_stride(img), n)
            : 0.0;
    for (uint64_t first = 0; first < n; first += range) {
      uint64_t len = n - first < range ? n - first : range;
      IST_CUDA_TRY(ist_slot_upload(s, s->planes.p, img->planes[c], row_bytes,
                                   img->stride, first * sample, len * sample),
                   "upload");
      IST_CUDA_TRY(cudaEventRecord(s->uploaded[0], s->stream),
                   "cudaEventRecord");
      s->compute_used = true;
      IST_CUDA_TRY(cudaStreamWaitEvent(s->compute[0], s->uploaded[0], 0),
                   "cudaStreamWaitEvent");
      size_t have = s->scratch.bytes;
      if (f32)
        IST_CUDA_TRY(ist_reduce_stats_f32_range(s->planes.as<float>(), len,
                                                first, k, s->scratch.p, &have,
                                                d_out, s->compute[0]),
                     "reduction");
      else
        IST_CUDA_TRY(ist_reduce_stats(kernel, 0, s->planes.p, img->sample, len,
                                      1, first, s->scratch.p, &have, d_out,
                                      s->compute[0]),
                     "reduction");
      IST_CUDA_TRY(cudaMemcpyAsync(h_out, d_out, sizeof(imgstat_partial),
                                   cudaMemcpyDeviceToHost, s->compute[0]),
                   "cudaMemcpyAsync (results)");
      /* The next range's upload overwrites the buffer: wait for this one. */
      IST_CUDA_TRY(cudaStreamSynchronize(s->compute[0]), "reduction");
      if (f32)
        ist_fo_stack_push(&tree, h_out);
      else
        ist_partial_combine<false>(&acc, h_out);
    }
    if (f32) {
      acc = ist_fo_stack_root(&tree);
      ist_fo_add_shift(&acc, k);
    }
    out[c] = acc;
  }
  return IMGSTAT_OK;
}

/* Starts the statistics of img on slot s: the job submit() hands out. */
imgstat_status submit_on(imgstat_gpu *gpu, ist_slot *s,
                         const imgstat_image *img, int kernel,
                         imgstat_error *err) {
  const uint64_t n = (uint64_t)img->width * img->height;
  s->job_channels = img->channels;
  s->job_on_host = true;
  if (n == 0) {
    for (int c = 0; c < img->channels; ++c)
      s->job_out[c] = ist_partial_empty();
    return IMGSTAT_OK;
  }
  size_t each = 0;
  imgstat_status st =
      ist_stats_prepare(s, img->sample, n, img->channels, kernel, &each, err);
  if (st != IMGSTAT_OK)
    return st;
  /* Whole image resident when it fits; else ranges through a smaller
   * buffer. */
  const size_t row_bytes = (size_t)img->width * img->sample;
  const size_t plane_bytes = row_bytes * img->height;
  const size_t want = ist_align256(plane_bytes) * img->channels;
  const size_t limit = gpu->memory_limit.load();
  bool resident = limit == 0 || want <= limit;
  if (resident) {
    cudaError_t e = s->planes.reserve(want);
    if (e == cudaErrorMemoryAllocation) {
      ist_cuda_clear_error(); /* not sticky: clear it, go by ranges */
      resident = false;
    } else if (e != cudaSuccess) {
      return ist_cuda_fail(err, e, "cudaMalloc (image)");
    }
  }
  if (!resident)
    return stats_ranges(gpu, s, img, kernel, n, s->job_out, err);
  for (int c = 0; c < img->channels; ++c) {
    void *d_plane = s->planes.as<unsigned char>(ist_align256(plane_bytes) * c);
    IST_CUDA_TRY(ist_slot_upload(s, d_plane, img->planes[c], row_bytes,
                                 img->stride, 0, plane_bytes),
                 "upload");
    st = ist_stats_launch(s, c, d_plane, img->sample, n, kernel, each, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  s->job_on_host = false;
  return ist_stats_join(s, img->channels, err);
}

} // namespace

/* ---- on a slot (context.cuh) --------------------------------------------- */

imgstat_status ist_stats_prepare(ist_slot *s, imgstat_sample sample, uint64_t n,
                                 int planes, int kernel, size_t *scratch_each,
                                 imgstat_error *err) {
  size_t each = 0;
  IST_CUDA_TRY(ist_reduce_stats(kernel, 0, nullptr, sample, n, 1, 0, nullptr,
                                &each, nullptr, nullptr),
               "scratch size");
  each = ist_align256(each);
  IST_CUDA_TRY(s->scratch.reserve(each * planes), "cudaMalloc (scratch)");
  IST_CUDA_TRY(s->h_out.reserve(IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
               "cudaMallocHost");
  IST_CUDA_TRY(s->d_out.reserve(IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
               "cudaMalloc");
  *scratch_each = each;
  return IMGSTAT_OK;
}

imgstat_status ist_stats_launch(ist_slot *s, int c, const void *d_plane,
                                imgstat_sample sample, uint64_t n, int kernel,
                                size_t scratch_each, imgstat_error *err) {
  const int k = c % IST_COMPUTE_STREAMS;
  IST_CUDA_TRY(cudaEventRecord(s->uploaded[k], s->stream), "cudaEventRecord");
  s->compute_used = true;
  IST_CUDA_TRY(cudaStreamWaitEvent(s->compute[k], s->uploaded[k], 0),
               "cudaStreamWaitEvent");
  size_t bytes = scratch_each;
  imgstat_partial *d_out = s->d_out.as<imgstat_partial>() + c;
  IST_CUDA_TRY(ist_reduce_stats(kernel, 0, d_plane, sample, n, 1, 0,
                                s->scratch.as<unsigned char>(scratch_each * c),
                                &bytes, d_out, s->compute[k]),
               "reduction");
  IST_CUDA_TRY(cudaMemcpyAsync(s->h_out.as<imgstat_partial>() + c, d_out,
                               sizeof(imgstat_partial), cudaMemcpyDeviceToHost,
                               s->compute[k]),
               "cudaMemcpyAsync (results)");
  return IMGSTAT_OK;
}

imgstat_status ist_stats_join(ist_slot *s, int planes, imgstat_error *err) {
  for (int c = 0; c < planes && c < IST_COMPUTE_STREAMS; ++c) {
    IST_CUDA_TRY(cudaEventRecord(s->joined[c], s->compute[c]),
                 "cudaEventRecord");
    IST_CUDA_TRY(cudaStreamWaitEvent(s->stream, s->joined[c], 0),
                 "cudaStreamWaitEvent");
  }
  return IMGSTAT_OK;
}

namespace {

/* The plane stride (in samples) when plane c starts at d_planes[0] + c *
 * stride samples for every c, at least a plane apart; 0 otherwise (one
 * plane: n). */
uint64_t even_stride(const void *const *d_planes, int planes,
                     imgstat_sample sample, uint64_t n) {
  if (planes == 1)
    return n;
  const uintptr_t p0 = (uintptr_t)d_planes[0], p1 = (uintptr_t)d_planes[1];
  if (p1 <= p0 || (p1 - p0) % (uintptr_t)sample != 0 ||
      (p1 - p0) / (uintptr_t)sample < n)
    return 0;
  const uintptr_t step = p1 - p0;
  for (int c = 2; c < planes; ++c)
    if ((uintptr_t)d_planes[c] != p0 + step * (uintptr_t)c)
      return 0;
  return step / (uintptr_t)sample;
}

/* One reduction of every channel on the slot's stream (reduce(scratch,
 * bytes, results) launches it when scratch is given, else sizes it), its
 * last pass writing the partials straight into the slot's pinned host
 * buffer (device-visible at the same address: unified addressing), then
 * copied to out[0..channels-1]: the launches and one wait, no copy call. */
template <typename Reduce>
imgstat_status stats_on_stream(ist_slot *s, int channels, Reduce reduce,
                               imgstat_partial *out, imgstat_error *err) {
  size_t bytes = 0;
  IST_CUDA_TRY(reduce(nullptr, &bytes, nullptr), "scratch size");
  IST_CUDA_TRY(s->scratch.reserve(bytes), "cudaMalloc (scratch)");
  IST_CUDA_TRY(s->h_out.reserve(IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
               "cudaMallocHost");
  bytes = s->scratch.bytes;
  imgstat_partial *results = s->h_out.as<imgstat_partial>();
  IST_CUDA_TRY(reduce(s->scratch.p, &bytes, results), "reduction");
  IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "reduction");
  memcpy(out, results, channels * sizeof(imgstat_partial));
  return IMGSTAT_OK;
}

} // namespace

imgstat_status ist_stats_planes(ist_slot *s, const void *const *d_planes,
                                int planes, imgstat_sample sample, uint64_t n,
                                int kernel, imgstat_partial *out,
                                imgstat_error *err) {
  if (n == 0) {
    for (int c = 0; c < planes; ++c)
      out[c] = ist_partial_empty();
    return IMGSTAT_OK;
  }
  /* Planes evenly apart (a device image's, a CHW array's): one launch for
   * all of them on the slot's stream. */
  const uint64_t stride = even_stride(d_planes, planes, sample, n);
  if (stride)
    return stats_on_stream(
        s, planes,
        [&](void *scratch, size_t *bytes, imgstat_partial *results) {
          return ist_reduce_stats_pitched(kernel, d_planes[0], stride, sample,
                                          n, (uint32_t)planes, scratch, bytes,
                                          results, s->stream);
        },
        out, err);
  size_t each = 0;
  imgstat_status st =
      ist_stats_prepare(s, sample, n, planes, kernel, &each, err);
  for (int c = 0; c < planes && st == IMGSTAT_OK; ++c)
    st = ist_stats_launch(s, c, d_planes[c], sample, n, kernel, each, err);
  if (st == IMGSTAT_OK)
    st = ist_stats_join(s, planes, err);
  if (st != IMGSTAT_OK)
    return st;
  IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "reduction");
  memcpy(out, s->h_out.p, planes * sizeof(imgstat_partial));
  return IMGSTAT_OK;
}

/* ---- the C API ---------------------------------------------------------- */

extern "C" {

imgstat_status imgstat_gpu_stats_submit(imgstat_gpu *gpu,
                                        const imgstat_image *img, int kernel,
                                        imgstat_gpu_ticket *ticket,
                                        imgstat_error *err) {
  if (ticket) {
    ticket->slot = -1;
    ticket->serial = 0;
  }
  imgstat_status st = check_stats(gpu, ticket, img, kernel, err);
  if (st != IMGSTAT_OK)
    return st;
  /* The context may have been created on another thread, or another
   * device may be current here. */
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  ist_slot *s = nullptr;
  if ((st = ist_slot_take(gpu, &s, err)) != IMGSTAT_OK)
    return st;
  st = submit_on(gpu, s, img, kernel, err);
  if (st != IMGSTAT_OK) {
    /* Leave no work in flight on buffers the next job reuses. */
    ist_slot_drain(s);
    ist_slot_give(gpu, s);
    return st;
  }
  pthread_mutex_lock(&gpu->lock);
  s->job = true;
  pthread_mutex_unlock(&gpu->lock);
  ticket->slot = s->index;
  ticket->serial = s->serial;
  return IMGSTAT_OK;
}

imgstat_status imgstat_gpu_stats_wait(imgstat_gpu *gpu,
                                      imgstat_gpu_ticket ticket,
                                      imgstat_partial *out,
                                      imgstat_error *err) {
  if (!gpu || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  ist_slot *s = ticket.slot >= 0 && ticket.slot < IMGSTAT_GPU_SLOTS
                    ? &gpu->slots[ticket.slot]
                    : nullptr;
  bool pending = false;
  if (s) {
    /* Claimed under the lock: a second wait on the ticket finds it gone. */
    pthread_mutex_lock(&gpu->lock);
    pending = s->busy && s->job && s->serial == ticket.serial;
    if (pending)
      s->job = false;
    pthread_mutex_unlock(&gpu->lock);
  }
  if (!pending)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "not a pending statistics ticket");
  imgstat_status st = IMGSTAT_OK;
  if (s->job_on_host) {
    memcpy(out, s->job_out, s->job_channels * sizeof(imgstat_partial));
  } else {
    cudaError_t e = ist_gpu_enter(gpu);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(s->stream);
    if (e == cudaSuccess) {
      memcpy(out, s->h_out.p, s->job_channels * sizeof(imgstat_partial));
    } else {
      st = ist_cuda_fail(err, e, "reduction");
      ist_slot_drain(s);
    }
  }
  ist_slot_give(gpu, s);
  return st;
}

imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel, imgstat_partial *out,
                                 imgstat_error *err) {
  imgstat_status st = check_stats(gpu, out, img, kernel, err);
  if (st != IMGSTAT_OK)
    return st;
  if ((uint64_t)img->width * img->height == 0) {
    for (int c = 0; c < img->channels; ++c)
      out[c] = ist_partial_empty();
    return IMGSTAT_OK;
  }
  imgstat_gpu_ticket ticket;
  st = imgstat_gpu_stats_submit(gpu, img, kernel, &ticket, err);
  if (st != IMGSTAT_OK)
    return st;
  return imgstat_gpu_stats_wait(gpu, ticket, out, err);
}

imgstat_status imgstat_gpu_image_stats(imgstat_gpu *gpu,
                                       imgstat_gpu_image *dimg, int kernel,
                                       imgstat_partial *out,
                                       imgstat_error *err) {
  imgstat_status st = ist_gpu_image_check(gpu, dimg, err);
  if (st == IMGSTAT_OK && !out)
    st = imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output");
  if (st == IMGSTAT_OK)
    st = check_kernel(kernel, err);
  if (st != IMGSTAT_OK)
    return st;
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  const uint64_t n = (uint64_t)dimg->width * dimg->height;
  ist_slot *s = dimg->slot;
  dimg->quiet = false;
  if (dimg->hwc && kernel == IMGSTAT_KERNEL_FAST) {
    /* dense HWC: the interleaved kernel, no gathering */
    st = stats_on_stream(
        s, dimg->channels,
        [&](void *scratch, size_t *bytes, imgstat_partial *results) {
          return ist_reduce_stats_hwc(dimg->hwc, dimg->sample, n,
                                      (uint32_t)dimg->channels, scratch, bytes,
                                      results, s->stream);
        },
        out, err);
  } else {
    st = ist_gpu_image_planes(gpu, dimg, err); /* the ladder reads planes */
    if (st == IMGSTAT_OK)
      st = ist_stats_planes(s, dimg->planes, dimg->channels, dimg->sample, n,
                            kernel, out, err);
  }
  if (st != IMGSTAT_OK)
    ist_slot_drain(s);
  else /* every path above ends waiting for the slot's stream */
    dimg->quiet = true;
  return st;
}

} /* extern "C" */
