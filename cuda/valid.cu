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
 * A label image's labels (imgstat_gpu_valid_label_stats) go the same way,
 * one label at a time, from one upload of the image and of each pixel's
 * label: the flags of label k are its pixels that are not nodata, in
 * raster order as the CPU's pixel list of label k. With histograms (8- and
 * 16-bit samples) each compacted plane is also binned by the plain
 * histogram kernel (hist_percentiles, histogram.cu): integer counts, so
 * the CPU's imgstat_histogram_compute of that plane to the count.
 */
#include "context.cuh"
#include "norm_internal.cuh"

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace {

/* Samples compacted by one call of CUB (its count is an int). */
constexpr uint64_t kValidChunk = (uint64_t)1 << 30;
constexpr int kValidBlock = 256;

/* flags[i] = 1 where sample i is valid: inside the mask (none: every
 * pixel), of label place `want` when labels is not NULL, and not the
 * nodata value, compared in the sample type as the CPU does (NaN equals
 * nothing; -0 equals +0). */
template <typename T>
__global__ void
valid_flags_kernel(const T *plane, const uint8_t *mask, const uint32_t *labels,
                   uint32_t want, uint64_t n, int has, T nodv, uint8_t *flags) {
  const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step) {
    uint8_t on = mask ? (uint8_t)(mask[i] != 0) : (uint8_t)1;
    if (labels && labels[i] != want)
      on = 0;
    if (on && has && plane[i] == nodv)
      on = 0;
    flags[i] = on;
  }
}

template <typename T>
cudaError_t launch_flags(const void *plane, const uint8_t *mask,
                         const uint32_t *labels, uint32_t label, uint64_t n,
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
  valid_flags_kernel<T>
      <<<grid, kValidBlock, 0, s>>>(static_cast<const T *>(plane), mask, labels,
                                    label, n, has, has ? (T)ndv : (T)0, flags);
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

/* The histogram of the slot's `kept` compacted samples into *h (allocated
 * here as imgstat_histogram_compute does for an integer plane; freed on
 * failure). */
imgstat_status valid_histogram(imgstat_gpu *gpu, ist_slot *s,
                               imgstat_sample sample, uint64_t kept,
                               imgstat_histogram *h, imgstat_error *err) {
  imgstat_status st = imgstat_histogram_alloc(h, sample, 0, 0.0, 0.0, err);
  if (st != IMGSTAT_OK)
    return st;
  const void *plane = s->valid_vals.p;
  int has = 0;
  st = ist_norm_gpu::hist_percentiles(s, gpu->sm_count, &plane, 1, kept, h, 1,
                                      nullptr, 0, nullptr, &has, err);
  if (st != IMGSTAT_OK)
    imgstat_histogram_free(h);
  return st;
}

/* Channel c of the device image: its valid partial and nodata count
 * (inside: the pixels of the mask, or of label place want when d_labels is
 * not NULL), and when h is not NULL the histogram of its valid samples. */
imgstat_status valid_channel(imgstat_gpu *gpu, imgstat_gpu_image *d, int c,
                             const imgstat_valid *v, const uint8_t *d_mask,
                             const uint32_t *d_labels, uint32_t want,
                             uint64_t inside, int kernel, imgstat_partial *out,
                             uint64_t *nodata, imgstat_histogram *h,
                             imgstat_error *err) {
  ist_slot *s = d->slot;
  const uint64_t n = (uint64_t)d->width * d->height;
  const int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
  const double ndv = has ? v->nodata[c] : 0.0;
  uint8_t *flags = s->valid_flags.as<uint8_t>();
  cudaError_t e = cudaSuccess;
  switch (d->sample) {
  case IMGSTAT_U8:
    e = launch_flags<uint8_t>(d->planes[c], d_mask, d_labels, want, n, has, ndv,
                              flags, gpu->sm_count, s->stream);
    break;
  case IMGSTAT_U16:
    e = launch_flags<uint16_t>(d->planes[c], d_mask, d_labels, want, n, has,
                               ndv, flags, gpu->sm_count, s->stream);
    break;
  case IMGSTAT_F32:
    e = launch_flags<float>(d->planes[c], d_mask, d_labels, want, n, has, ndv,
                            flags, gpu->sm_count, s->stream);
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
  if (st == IMGSTAT_OK && h)
    st = valid_histogram(gpu, s, d->sample, kept, h, err);
  return st;
}

/* The valid samples of img under v on the device: each channel's partial
 * and nodata count into out and nodata (NULL: not asked), and with
 * nlabels > 0 each label's (its pixels: pixels[start[k], start[k] +
 * count[k]), inside the mask already) into lout[k * channels + c] and
 * lnodata alike; with hist (lhist) not NULL, the histograms beside them in
 * the same places (integer samples only; none kept on failure); one upload
 * of the image. */
imgstat_status
valid_run(imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
          int kernel, imgstat_partial *out, uint64_t *nodata,
          imgstat_histogram *hist, uint32_t nlabels, const uint32_t *pixels,
          const uint64_t *start, const uint64_t *count, imgstat_partial *lout,
          uint64_t *lnodata, imgstat_histogram *lhist, imgstat_error *err) {
  imgstat_status st = ist_gpu_check_image(img, err);
  if (st != IMGSTAT_OK)
    return st;
  const size_t channels = (size_t)img->channels;
  if (hist)
    memset(hist, 0, channels * sizeof *hist);
  if (lhist)
    memset(lhist, 0, (size_t)nlabels * channels * sizeof *lhist);
  if ((hist || lhist) && img->sample == IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "the histograms of float samples' valid samples "
                             "are made on the CPU");
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
  /* each pixel's label place + 1 (0: none), on the host first */
  uint32_t *lab = nullptr;
  if (nlabels > 0 && n > 0) {
    lab = static_cast<uint32_t *>(calloc(n, sizeof *lab));
    if (!lab)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < nlabels; k++)
      for (uint64_t j = 0; j < count[k]; j++)
        lab[pixels[start[k] + j]] = k + 1;
  }
  cudaError_t ge = ist_gpu_enter(gpu);
  if (ge != cudaSuccess) {
    free(lab);
    return ist_cuda_fail(err, ge, "cudaSetDevice");
  }
  imgstat_gpu_image *d = nullptr;
  st = ist_gpu_image_upload(gpu, img, &d, err);
  if (st != IMGSTAT_OK) {
    free(lab);
    return st;
  }
  ist_slot *s = d->slot;
  cudaError_t e = cudaSuccess;
  const uint8_t *d_mask = nullptr;
  const uint32_t *d_lab = nullptr;
  if (n > 0) {
    e = s->valid_flags.reserve(n);
    if (e == cudaSuccess)
      e = s->valid_vals.reserve(n * (size_t)img->sample);
    if (e == cudaSuccess)
      e = s->valid_idx.reserve(n * sizeof(uint32_t));
    if (e == cudaSuccess && mask && out) {
      e = s->valid_mask.reserve(n);
      if (e == cudaSuccess)
        e = ist_slot_upload(s, s->valid_mask.p, mask, img->width, 0, 0, n);
      d_mask = s->valid_mask.as<uint8_t>();
    }
    if (e == cudaSuccess && lab) {
      e = s->valid_labels.reserve(n * sizeof(uint32_t));
      if (e == cudaSuccess)
        e = ist_slot_upload(s, s->valid_labels.p, lab,
                            img->width * sizeof(uint32_t), 0, 0,
                            n * sizeof(uint32_t));
      d_lab = s->valid_labels.as<uint32_t>();
    }
    if (e != cudaSuccess)
      st = ist_cuda_fail(err, e, "valid samples");
  }
  for (int c = 0; out && c < img->channels && st == IMGSTAT_OK; c++) {
    imgstat_histogram *h = hist ? &hist[c] : nullptr;
    if (n == 0) {
      nodata[c] = 0;
      st =
          ist_stats_planes(s, nullptr, 1, img->sample, 0, kernel, &out[c], err);
      if (st == IMGSTAT_OK && h)
        st = valid_histogram(gpu, s, img->sample, 0, h, err);
      continue;
    }
    st = valid_channel(gpu, d, c, v, d_mask, nullptr, 0, inside, kernel,
                       &out[c], &nodata[c], h, err);
  }
  for (uint32_t k = 0; k < nlabels && st == IMGSTAT_OK; k++)
    for (int c = 0; c < img->channels && st == IMGSTAT_OK; c++) {
      const size_t at = (size_t)k * channels + (size_t)c;
      imgstat_partial *lp = &lout[at];
      uint64_t *ln = &lnodata[at];
      imgstat_histogram *h = lhist ? &lhist[at] : nullptr;
      if (n == 0) {
        *ln = 0;
        st = ist_stats_planes(s, nullptr, 1, img->sample, 0, kernel, lp, err);
        if (st == IMGSTAT_OK && h)
          st = valid_histogram(gpu, s, img->sample, 0, h, err);
        continue;
      }
      st = valid_channel(gpu, d, c, v, nullptr, d_lab, k + 1, count[k], kernel,
                         lp, ln, h, err);
    }
  if (st != IMGSTAT_OK) {
    ist_slot_drain(s);
    for (size_t c = 0; hist && c < channels; c++)
      imgstat_histogram_free(&hist[c]);
    for (size_t i = 0; lhist && i < (size_t)nlabels * channels; i++)
      imgstat_histogram_free(&lhist[i]);
  }
  /* (the staged uploads have left the host buffers once the slot's work
   * is done: valid_channel synchronizes its stream) */
  imgstat_gpu_image_release(gpu, d);
  free(lab);
  return st;
}

} /* namespace */

extern "C" {

imgstat_status
imgstat_gpu_valid_stats_hist(imgstat_gpu *gpu, const imgstat_image *img,
                             const imgstat_valid *v, int kernel,
                             imgstat_partial *out, uint64_t *nodata,
                             imgstat_histogram *hist, imgstat_error *err) {
  if (!gpu || !out || !nodata)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  return valid_run(gpu, img, v, kernel, out, nodata, hist, 0, nullptr, nullptr,
                   nullptr, nullptr, nullptr, nullptr, err);
}

imgstat_status imgstat_gpu_valid_stats(imgstat_gpu *gpu,
                                       const imgstat_image *img,
                                       const imgstat_valid *v, int kernel,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err) {
  return imgstat_gpu_valid_stats_hist(gpu, img, v, kernel, out, nodata, nullptr,
                                      err);
}

imgstat_status imgstat_gpu_valid_label_stats_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_histogram *hist, imgstat_error *err) {
  if (!gpu || (nlabels && (!pixels || !start || !count || !out || !nodata)))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no GPU context");
  if (nlabels == 0)
    return IMGSTAT_OK;
  imgstat_valid nv;
  memset(&nv, 0, sizeof nv);
  if (v) { /* the nodata values; the lists are inside the mask already */
    nv = *v;
    nv.mask = nullptr;
    nv.pixels = nullptr;
    nv.npixels = 0;
  }
  return valid_run(gpu, img, v ? &nv : nullptr, kernel, nullptr, nullptr,
                   nullptr, nlabels, pixels, start, count, out, nodata, hist,
                   err);
}

imgstat_status imgstat_gpu_valid_label_stats(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_error *err) {
  return imgstat_gpu_valid_label_stats_hist(gpu, img, v, kernel, nlabels,
                                            pixels, start, count, out, nodata,
                                            nullptr, err);
}

} /* extern "C" */
