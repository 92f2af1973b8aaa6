#include "test_gpu_util.h"

#include <stdlib.h>
#include <string.h>

#ifdef IMGSTAT_HAVE_CUDA
#include <cuda_runtime_api.h>

int test_gpu_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int test_gpu_set_device(int device) {
  return cudaSetDevice(device) == cudaSuccess;
}

int test_gpu_strided_copy(const imgstat_image *src, size_t pad, int pinned,
                          imgstat_image *dst) {
  const size_t row = (size_t)src->width * src->sample;
  const size_t stride = row + pad;
  const size_t plane = stride * src->height;
  *dst = *src;
  dst->data = NULL;
  size_t bytes = plane * src->channels + 1;
  if (pinned ? cudaMallocHost(&dst->data, bytes) != cudaSuccess
             : (dst->data = malloc(bytes)) == NULL)
    return 0;
  memset(dst->data, 0xEE, bytes);
  dst->stride = stride;
  for (int c = 0; c < src->channels; ++c) {
    unsigned char *to = (unsigned char *)dst->data + c * plane;
    const unsigned char *from = src->planes[c];
    size_t from_stride = src->stride ? src->stride : row;
    for (uint32_t y = 0; y < src->height; ++y)
      memcpy(to + y * stride, from + y * from_stride, row);
    dst->planes[c] = to;
  }
  return 1;
}

void test_gpu_strided_free(imgstat_image *img, int pinned) {
  if (pinned)
    cudaFreeHost(img->data);
  else
    free(img->data);
  memset(img, 0, sizeof *img);
}

int test_gpu_device_copy(const imgstat_image *src, size_t offset, size_t pitch,
                         void **block, void **planes) {
  const size_t row = (size_t)src->width * src->sample;
  if (pitch == 0)
    pitch = row;
  const size_t each = src->height * pitch + offset;
  const size_t bytes = offset + each * src->channels + 64;
  *block = NULL;
  if (cudaMalloc(block, bytes) != cudaSuccess ||
      cudaMemset(*block, 0xEE, bytes) != cudaSuccess)
    return 0;
  for (int c = 0; c < src->channels; ++c) {
    planes[c] = (unsigned char *)*block + offset + c * each;
    size_t from_stride = src->stride ? src->stride : row;
    if (cudaMemcpy2D(planes[c], pitch, src->planes[c], from_stride, row,
                     src->height, cudaMemcpyHostToDevice) != cudaSuccess)
      return 0;
  }
  /* cudaMemset, and a copy from pageable memory, may still be under way on
   * the legacy stream when they return; the library's streams do not wait
   * for it, and its wraps want the data finished. */
  return cudaDeviceSynchronize() == cudaSuccess;
}

void test_gpu_free(void *block) { cudaFree(block); }

int test_gpu_device_interleaved(const imgstat_image *src, size_t row_pitch,
                                size_t pixel_pitch, void **block) {
  const size_t item = (size_t)src->sample;
  const size_t row = (size_t)src->width * item;
  const size_t bytes = src->height * row_pitch + 64;
  unsigned char *host = malloc(bytes);
  *block = NULL;
  if (!host)
    return 0;
  memset(host, 0xEE, bytes);
  for (int c = 0; c < src->channels; ++c)
    for (uint32_t y = 0; y < src->height; ++y) {
      const unsigned char *from = (const unsigned char *)src->planes[c] +
                                  y * (src->stride ? src->stride : row);
      for (uint32_t x = 0; x < src->width; ++x)
        memcpy(host + y * row_pitch + x * pixel_pitch + c * item,
               from + x * item, item);
    }
  int ok =
      cudaMalloc(block, bytes) == cudaSuccess &&
      cudaMemcpy(*block, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
      cudaDeviceSynchronize() == cudaSuccess; /* as test_gpu_device_copy */
  free(host);
  return ok;
}

int test_gpu_to_host(void *host, const void *dev, size_t n) {
  return cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost) == cudaSuccess;
}

#else /* no CUDA: nothing to make; the GPU tests skip */

int test_gpu_device_count(void) { return 0; }
int test_gpu_set_device(int device) {
  (void)device;
  return 0;
}
int test_gpu_strided_copy(const imgstat_image *src, size_t pad, int pinned,
                          imgstat_image *dst) {
  (void)src;
  (void)pad;
  (void)pinned;
  memset(dst, 0, sizeof *dst);
  return 0;
}
void test_gpu_strided_free(imgstat_image *img, int pinned) {
  (void)img;
  (void)pinned;
}
int test_gpu_device_copy(const imgstat_image *src, size_t offset, size_t pitch,
                         void **block, void **planes) {
  (void)src;
  (void)offset;
  (void)pitch;
  (void)planes;
  *block = NULL;
  return 0;
}
void test_gpu_free(void *block) { (void)block; }
int test_gpu_device_interleaved(const imgstat_image *src, size_t row_pitch,
                                size_t pixel_pitch, void **block) {
  (void)src;
  (void)row_pitch;
  (void)pixel_pitch;
  *block = NULL;
  return 0;
}
int test_gpu_to_host(void *host, const void *dev, size_t n) {
  (void)host;
  (void)dev;
  (void)n;
  return 0;
}

#endif
