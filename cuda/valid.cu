/*
 * Valid samples on the device (imgstat_gpu_valid_stats, imgstat/cuda.h):
 * the CPU's reduction of a channel's valid samples (src/core/valid.c)
 * done the same way. Each channel's samples inside the mask that are not
 * its nodata value are compacted in raster order (cub::DeviceSelect::
 * Flagged, which keeps the order) into a plane of their own, with the
 * raster index of each beside it; that plane is reduced by the ordinary
 * statistics of a plane of that many samples (ist_stats_planes), so its
 * partial is the CPU's partial of imgstat_valid_compact's plane to the bit,
 * and the positions of its extrema are mapped back through the indices.
 */
#include "context.cuh"

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <stdint.h>
#include <string.h>

namespace {

/* Samples compacted by one call of CUB (its count is an int). */
constexpr uint64_t kValidChunk = (uint64_t)1 << 30;
constexpr int kValidBlock = 256;

/* flags[i] = 1 where sample i is valid: inside the mask (none: every
 * pixel) and not the nodata value, compared in the sample type as the
 * CPU does (NaN equals nothing; -0 equals +0). */
template <typename T>
__global__ void valid_flags_kernel(const T *plane, const uint8_t *mask,
                                   uint64_t n, int has, T nodv,
                                   uint8_t *flags) {
  const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step) {
    uint8_t on = mask ? (uint8_t)(mask[i] != 0) : (uint8_t)1;
    if (on && has && plane[i] == nodv)
      on = 0;
    flags[i] = on;
  }
}

template <typename T>
cudaError_t launch_flags(const void *plane, const uint8_t *mask, uint64_t n,
                         int has, double ndv, uint8_t *flags, int sm_count,
                         cudaStream_t s) {
  uint64_t want = (n + kValidBlock - 1) / kValidBlock;
  uint64_t cap = (uint64_t)(sm_count > 0 ? sm_count : 1) * 8;
  unsigned grid = (unsigned)(want < cap ? want : cap);
  if (grid == 0)
    grid = 1;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  valid_flags_kernel<T><<<grid, kValidBlock, 0, s>>>(
      static_cast<const T *>(plane), mask, n, has, has ? (T)ndv : (T)0, flags);
  return cudaGetLastError();
}

/* CUB's temporary bytes for a chunk of samples of type T and for the
 * indices. */
template <typename T> size_t select_bytes() {
  size_t a = 0, b = 0;
  (void)cub::DeviceSelect::Flagged(
      nullptr, a, static_cast<const T *>(nullptr),
      static_cast<const uint8_t *>(nullptr), static_cast<T *>(nullptr),
      static_cast<int *>(nullptr), (int)kValidChunk);
  (void)cub::DeviceSelect::Flagged(
      nullptr, b, thrust::counting_iterator<uint32_t>(0),
      static_cast<const uint8_t *>(nullptr), static_cast<uint32_t *>(nullptr),
      static_cast<int *>(nullptr), (int)kValidChunk);
  return a > b ? a : b;
}

/* Compacts the n samples of d_plane flagged in d_flags (and their raster
 * indices) into the slot's valid_vals / valid_idx; *kept: how many. */
template <typename T>
imgstat_status compact(ist_slot *s, const void *d_plane, const uint8_t *flags,
                       uint64_t n, uint64_t *kept, imgstat_error *err) {
  size_t temp = select_bytes<T>();
  IST_CUDA_TRY(s->valid_temp.reserve(ist_align256(temp) + sizeof(int)),
               "cudaMalloc");
  int *d_num = s->valid_temp.as<int>(ist_align256(temp));
  const T *in = static_cast<const T *>(d_plane);
  T *vals = s->valid_vals.as<T>();
  uint32_t *idx = s->valid_idx.as<uint32_t>();
  uint64_t total = 0;
  for (uint64_t off = 0; off < n; off += kValidChunk) {
    int len = (int)(n - off < kValidChunk ? n - off : kValidChunk);
    size_t bytes = temp;
    IST_CUDA_TRY(ist_cuda_launch_gate(), "valid samples");
    IST_CUDA_TRY(cub::DeviceSelect::Flagged(s->valid_temp.p, bytes, in + off,
                                            flags + off, vals + total, d_num,
                                            len, s->stream),
                 "valid samples");
    bytes = temp;
    IST_CUDA_TRY(ist_cuda_launch_gate(), "valid samples");
    IST_CUDA_TRY(cub::DeviceSelect::Flagged(
                     s->valid_temp.p, bytes,
                     thrust::counting_iterator<uint32_t>((uint32_t)off),
                     flags + off, idx + total, d_num, len, s->stream),
                 "valid samples");
    int num = 0;
    IST_CUDA_TRY(cudaMemcpyAsync(&num, d_num, sizeof num,
                                 cudaMemcpyDeviceToHost, s->stream),
                 "cudaMemcpy");
    IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "valid samples");
    total += (uint64_t)num;
  }
  *kept = total;
  return IMGSTAT_OK;
}

/* The raster index of compacted sample k (UINT64_MAX stays UINT64_MAX). */
imgstat_status raster_index(ist_slot *s, uint64_t kept, uint64_t *k,
                            imgstat_error *err) {
  if (*k == UINT64_MAX || *k >= kept)
    return IMGSTAT_OK;
  uint32_t i = 0;
  IST_CUDA_TRY(cudaMemcpyAsync(&i, s->valid_idx.as<uint32_t>() + *k, sizeof i,
                               cudaMemcpyDeviceToHost, s->stream),
               "cudaMemcpy");
  IST_CUDA_TRY(cudaStreamSynchronize(s->stream), "cudaMemcpy");
  *k = i;
  return IMGSTAT_OK;
}

/* Channel c of the device image: its valid partial and nodata count. */
imgstat_status valid_channel(imgstat_gpu *gpu, imgstat_gpu_image *d, int c,
                             const imgstat_valid *v, const uint8_t *d_mask,
                             uint64_t inside, int kernel, imgstat_partial *out,
                             uint64_t *nodata, imgstat_error *err) {
  ist_slot *s = d->slot;
  const uint64_t n = (uint64_t)d->width * d->height;
  const int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
  const double ndv = has ? v->nodata[c] : 0.0;
  uint8_t *flags = s->valid_flags.as<uint8_t>();
  cudaError_t e = cudaSuccess;
  switch (d->sample) {
  case IMGSTAT_U8:
    e = launch_flags<uint8_t>(d->planes[c], d_mask, n, has, ndv, flags,
                              gpu->sm_count, s->stream);
    break;
  case IMGSTAT_U16:
    e = launch_flags<uint16_t>(d->planes[c], d_mask, n, has, ndv, flags,
                               gpu->sm_count, s->stream);
    break;
  case IMGSTAT_F32:
    e = launch_flags<float>(d->planes[c], d_mask, n, has, ndv, flags,
                            gpu->sm_count, s->stream);
    break;
  }
  IST_CUDA_TRY(e, "valid samples");
  uint64_t kept = 0;
  imgstat_status st = IMGSTAT_OK;
  switch (d->sample) {
  case IMGSTAT_U8:
    st = compact<uint8_t>(s, d->planes[c], flags, n, &kept, err);
    break;
  case IMGSTAT_U16:
    st = compact<uint16_t>(s, d->planes[c], flags, n, &kept, err);
    break;
  case IMGSTAT_F32:
    st = compact<float>(s, d->planes[c], flags, n, &kept, err);
    break;
  }
  if (st != IMGSTAT_OK)
    return st;
  *nodata = inside - kept;
  /* the compacted plane, reduced as any plane of `kept` samples */
  const void *plane = s->valid_vals.p;
  st = ist_stats_planes(s, &plane, 1, d->sample, kept, kernel, out, err);
  if (st == IMGSTAT_OK)
    st = raster_index(s, kept, &out->min_index, err);
  if (st == IMGSTAT_OK)
    st = raster_index(s, kept, &out->max_index, err);
  return st;
}

} /* namespace */

extern "C" {

imgstat_status imgstat_gpu_valid_stats(imgstat_gpu *gpu,
                                       const imgstat_image *img,
                                       const imgstat_valid *v, int kernel,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err) {
  if (!gpu || !out || !nodata)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  imgstat_status st = ist_gpu_check_image(img, err);
  if (st != IMGSTAT_OK)
    return st;
  if (v && v->npixels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "a pixel list (a label's region) is not "
                             "reduced on the device");
  for (int c = 0; v && c < img->channels && c < IMGSTAT_MAX_CHANNELS; c++)
    if (v->has_nodata[c] && (st = imgstat_valid_check_nodata(
                                 v->nodata[c], img->sample, err)) != IMGSTAT_OK)
      return st;
  const uint64_t n = (uint64_t)img->width * img->height;
  if (n > UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "%llu samples in one channel (at most %u)",
                             (unsigned long long)n, UINT32_MAX);
  /* the pixels inside the mask: the valid and the nodata samples */
  const uint8_t *mask = v ? v->mask : nullptr;
  uint64_t inside = n;
  if (mask) {
    inside = 0;
    for (uint64_t i = 0; i < n; i++)
      inside += mask[i] != 0;
  }
  IST_CUDA_TRY(ist_gpu_enter(gpu), "cudaSetDevice");
  imgstat_gpu_image *d = nullptr;
  st = ist_gpu_image_upload(gpu, img, &d, err);
  if (st != IMGSTAT_OK)
    return st;
  ist_slot *s = d->slot;
  cudaError_t e = cudaSuccess;
  const uint8_t *d_mask = nullptr;
  if (n > 0) {
    e = s->valid_flags.reserve(n);
    if (e == cudaSuccess)
      e = s->valid_vals.reserve(n * (size_t)img->sample);
    if (e == cudaSuccess)
      e = s->valid_idx.reserve(n * sizeof(uint32_t));
    if (e == cudaSuccess && mask) {
      e = s->valid_mask.reserve(n);
      if (e == cudaSuccess)
        e = ist_slot_upload(s, s->valid_mask.p, mask, img->width, 0, 0, n);
      d_mask = s->valid_mask.as<uint8_t>();
    }
    if (e != cudaSuccess)
      st = ist_cuda_fail(err, e, "valid samples");
  }
  for (int c = 0; c < img->channels && st == IMGSTAT_OK; c++) {
    if (n == 0) {
      nodata[c] = 0;
      st =
          ist_stats_planes(s, nullptr, 1, img->sample, 0, kernel, &out[c], err);
      continue;
    }
    st = valid_channel(gpu, d, c, v, d_mask, inside, kernel, &out[c],
                       &nodata[c], err);
  }
  if (st != IMGSTAT_OK)
    ist_slot_drain(s);
  imgstat_gpu_image_release(gpu, d);
  return st;
}

} /* extern "C" */
