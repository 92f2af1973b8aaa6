/*
 * Strided samples and dense planes on the device: the gathering copy of
 * imgstat_gpu_image_wrap_strided (an HWC array, or any strided view, into
 * the slot's dense planes, which the statistics, histogram and normalize
 * kernels read)
 * and the interleaving copy of imgstat_gpu_image_norm_apply_device's HWC
 * output. Dense 8-bit pixels of 3 or 4 channels (an RGB or RGBA tensor) go
 * four pixels a thread, by words. Both move whole samples (bit copies: a
 * float's bits, NaN payloads
 * included, arrive unchanged), so the planes are exactly those the pitched
 * path of imgstat_gpu_image_wrap (cudaMemcpy2DAsync) would make from the
 * same pixels, and everything computed from them has the same bits.
 */
#include "context.cuh"

#include <algorithm>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;

/* The planes of one launch: more channels take several launches of
 * kPlanes each (a kernel's parameters stay small). */
constexpr int kPlanes = IMGSTAT_INLINE_CHANNELS;
template <typename T> struct Planes { T *p[kPlanes]; };

/* Sample c of pixel x of row y (x < width, y < height) is at src +
 * y * row_pitch + x * pixel_pitch + c * channel_pitch; it goes to
 * dst.p[c][y * width + x]. */
template <typename T>
__global__ void __launch_bounds__(kBlock)
    deinterleave_kernel(const unsigned char *__restrict__ src, size_t row_pitch,
                        size_t pixel_pitch, size_t channel_pitch, Planes<T> dst,
                        int channels, uint64_t width, uint32_t height) {
  for (uint32_t y = blockIdx.y; y < height; y += gridDim.y) {
    const unsigned char *row = src + (size_t)y * row_pitch;
    const uint64_t base = (uint64_t)y * width;
    for (uint64_t x = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
         x < width; x += (uint64_t)gridDim.x * blockDim.x) {
      const unsigned char *px = row + x * pixel_pitch;
      for (int c = 0; c < channels; ++c)
        dst.p[c][base + x] =
            *reinterpret_cast<const T *>(px + (size_t)c * channel_pitch);
    }
  }
}

/* Four interleaved 8-bit pixels of C channels (C words, little-endian:
 * byte k of the run is byte k % 4 of w[k / 4]) as one word per channel:
 * out[c] holds channel c of pixels 0..3, pixel p in byte p. */
template <int C>
__host__ __device__ __forceinline__ void split_group(const uint32_t w[C],
                                                     uint32_t out[C]) {
  for (int c = 0; c < C; ++c) { /* constant bounds: unrolled */
    uint32_t v = 0;
    for (int p = 0; p < 4; ++p) {
      const int k = p * C + c;
      v |= ((w[k >> 2] >> (8 * (k & 3))) & 0xFFu) << (8 * p);
    }
    out[c] = v;
  }
}

/* Dense interleaved 8-bit pixels of C (3 or 4) channels, four at a time:
 * word loads and stores (src and every plane at a 4-byte boundary), group
 * g being pixels 4g..4g+3; the last n % 4 pixels are the generic
 * kernel's. */
template <int C>
__global__ void __launch_bounds__(kBlock)
    split_u8_kernel(const uint32_t *__restrict__ src, Planes<uint8_t> dst,
                    uint64_t groups) {
  for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups;
       g += (uint64_t)gridDim.x * blockDim.x) {
    uint32_t w[C], out[C];
#pragma unroll
    for (int k = 0; k < C; ++k)
      w[k] = src[g * C + k];
    split_group<C>(w, out);
#pragma unroll
    for (int c = 0; c < C; ++c)
      reinterpret_cast<uint32_t *>(dst.p[c])[g] = out[c];
  }
}

/* Sample c of pixel i of the dense planes to dst[i * stride + c]. */
template <typename T>
__global__ void __launch_bounds__(kBlock)
    interleave_kernel(Planes<const T> src, T *__restrict__ dst, int channels,
                      int stride, uint64_t n) {
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    T *px = dst + i * (uint64_t)stride;
    for (int c = 0; c < channels; ++c)
      px[c] = src.p[c][i];
  }
}

/* Blocks for `items` work items along x: enough to fill the device, not
 * more than the items need. */
unsigned blocks_for(uint64_t items, int sm_count, unsigned other) {
  const uint64_t need = (items + kBlock - 1) / kBlock;
  uint64_t fill = (uint64_t)std::max(sm_count, 1) * 32 / std::max(other, 1u);
  if (fill < 1)
    fill = 1;
  return (unsigned)std::max<uint64_t>(1, std::min(need, fill));
}

template <typename T>
cudaError_t launch_deinterleave(const void *src, size_t row_pitch,
                                size_t pixel_pitch, size_t channel_pitch,
                                void *const dst[], int channels, uint32_t width,
                                uint32_t height, int sm_count, cudaStream_t s);

/* The word path of dense 8-bit pixels of 3 or 4 channels (n pixels), the
 * tail by the generic kernel; false when it does not apply. */
bool split_u8(const void *src, void *const dst[], int channels, uint64_t n,
              int sm_count, cudaStream_t s, cudaError_t *e) {
  bool aligned = (uintptr_t)src % 4 == 0;
  for (int c = 0; c < channels; ++c)
    aligned = aligned && (uintptr_t)dst[c] % 4 == 0;
  if (!aligned || (channels != 3 && channels != 4) || n < 4)
    return false;
  const uint64_t groups = n / 4;
  Planes<uint8_t> d;
  for (int c = 0; c < kPlanes; ++c)
    d.p[c] = c < channels ? static_cast<uint8_t *>(dst[c]) : nullptr;
  *e = ist_cuda_launch_gate();
  if (*e != cudaSuccess)
    return true;
  const unsigned blocks = blocks_for(groups, sm_count, 1);
  const uint32_t *words = static_cast<const uint32_t *>(src);
  if (channels == 3)
    split_u8_kernel<3><<<blocks, kBlock, 0, s>>>(words, d, groups);
  else
    split_u8_kernel<4><<<blocks, kBlock, 0, s>>>(words, d, groups);
  *e = cudaGetLastError();
  const uint64_t tail = n - groups * 4;
  if (*e == cudaSuccess && tail > 0) {
    void *rest[4] = {nullptr}; /* 3 or 4 channels */
    for (int c = 0; c < channels; ++c)
      rest[c] = static_cast<uint8_t *>(dst[c]) + groups * 4;
    *e = launch_deinterleave<uint8_t>(
        static_cast<const uint8_t *>(src) + groups * 4 * channels, 0, channels,
        1, rest, channels, (uint32_t)tail, 1, sm_count, s);
  }
  return true;
}

template <typename T>
cudaError_t launch_deinterleave(const void *src, size_t row_pitch,
                                size_t pixel_pitch, size_t channel_pitch,
                                void *const dst[], int channels, uint32_t width,
                                uint32_t height, int sm_count, cudaStream_t s) {
  uint64_t w = width;
  uint32_t h = height;
  if (height > 1 && row_pitch == (size_t)width * pixel_pitch) {
    /* rows back to back: one long row, as the dense planes are */
    w = (uint64_t)width * height;
    h = 1;
  }
  const unsigned gy = std::min<uint32_t>(h, 65535u);
  const dim3 grid(blocks_for(w, sm_count, gy), gy);
  for (int g = 0; g < channels; g += kPlanes) {
    const int n = std::min(channels - g, kPlanes);
    Planes<T> d;
    for (int c = 0; c < kPlanes; ++c)
      d.p[c] = c < n ? static_cast<T *>(dst[g + c]) : nullptr;
    cudaError_t e = ist_cuda_launch_gate();
    if (e != cudaSuccess)
      return e;
    deinterleave_kernel<T><<<grid, kBlock, 0, s>>>(
        static_cast<const unsigned char *>(src) + (size_t)g * channel_pitch,
        row_pitch, pixel_pitch, channel_pitch, d, n, w, h);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

template <typename T>
cudaError_t launch_interleave(const void *const src[], void *dst, int channels,
                              uint64_t n, int sm_count, cudaStream_t s) {
  for (int g = 0; g < channels; g += kPlanes) {
    const int k = std::min(channels - g, kPlanes);
    Planes<const T> p;
    for (int c = 0; c < kPlanes; ++c)
      p.p[c] = c < k ? static_cast<const T *>(src[g + c]) : nullptr;
    cudaError_t e = ist_cuda_launch_gate();
    if (e != cudaSuccess)
      return e;
    interleave_kernel<T><<<blocks_for(n, sm_count, 1), kBlock, 0, s>>>(
        p, static_cast<T *>(dst) + g, k, channels, n);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

} // namespace

cudaError_t ist_deinterleave(const void *src, size_t row_pitch,
                             size_t pixel_pitch, size_t channel_pitch,
                             void *const dst[], int channels,
                             imgstat_sample sample, uint32_t width,
                             uint32_t height, int sm_count, cudaStream_t s) {
  if ((uint64_t)width * height == 0)
    return cudaSuccess;
  cudaError_t e = cudaSuccess;
  const bool dense_rows =
      height == 1 || row_pitch == (size_t)width * pixel_pitch;
  if (sample == IMGSTAT_U8 && channel_pitch == 1 &&
      pixel_pitch == (size_t)channels && dense_rows &&
      split_u8(src, dst, channels, (uint64_t)width * height, sm_count, s, &e))
    return e;
  switch (sample) {
  case IMGSTAT_U8:
    return launch_deinterleave<uint8_t>(src, row_pitch, pixel_pitch,
                                        channel_pitch, dst, channels, width,
                                        height, sm_count, s);
  case IMGSTAT_U16:
    return launch_deinterleave<uint16_t>(src, row_pitch, pixel_pitch,
                                         channel_pitch, dst, channels, width,
                                         height, sm_count, s);
  case IMGSTAT_F32:
    return launch_deinterleave<uint32_t>(src, row_pitch, pixel_pitch,
                                         channel_pitch, dst, channels, width,
                                         height, sm_count, s);
  }
  return cudaErrorInvalidValue;
}

cudaError_t ist_interleave(const void *const src[], void *dst, int channels,
                           imgstat_sample sample, uint64_t n, int sm_count,
                           cudaStream_t s) {
  if (n == 0)
    return cudaSuccess;
  switch (sample) {
  case IMGSTAT_U8:
    return launch_interleave<uint8_t>(src, dst, channels, n, sm_count, s);
  case IMGSTAT_U16:
    return launch_interleave<uint16_t>(src, dst, channels, n, sm_count, s);
  case IMGSTAT_F32:
    return launch_interleave<uint32_t>(src, dst, channels, n, sm_count, s);
  }
  return cudaErrorInvalidValue;
}
