/* The GPU backend of a build without CUDA: every call says so. */
#include "imgstat/cuda.h"

#include <stddef.h>

static imgstat_status no_cuda(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           "this imgstat was built without CUDA support");
}

int imgstat_gpu_compiled(void) { return 0; }

imgstat_status imgstat_gpu_device_count(int *count, imgstat_error *err) {
  if (count)
    *count = 0;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_create(int device, imgstat_gpu **out,
                                  imgstat_error *err) {
  (void)device;
  if (out)
    *out = NULL;
  return no_cuda(err);
}

void imgstat_gpu_destroy(imgstat_gpu *gpu) { (void)gpu; }

const char *imgstat_gpu_device_name(const imgstat_gpu *gpu) {
  (void)gpu;
  return "none";
}

int imgstat_gpu_device(const imgstat_gpu *gpu) {
  (void)gpu;
  return -1;
}

imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel, imgstat_partial *out,
                                 imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)kernel;
  (void)out;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_stats_submit(imgstat_gpu *gpu,
                                        const imgstat_image *img, int kernel,
                                        imgstat_gpu_ticket *ticket,
                                        imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)kernel;
  if (ticket) {
    ticket->slot = -1;
    ticket->serial = 0;
  }
  return no_cuda(err);
}

imgstat_status imgstat_gpu_stats_wait(imgstat_gpu *gpu,
                                      imgstat_gpu_ticket ticket,
                                      imgstat_partial *out,
                                      imgstat_error *err) {
  (void)ticket;
  return imgstat_gpu_stats(gpu, NULL, 0, out, err);
}

imgstat_status imgstat_gpu_image_upload(imgstat_gpu *gpu,
                                        const imgstat_image *img,
                                        imgstat_gpu_image **out,
                                        imgstat_error *err) {
  (void)gpu;
  (void)img;
  if (out)
    *out = NULL;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_image_wrap(imgstat_gpu *gpu, uint32_t width,
                                      uint32_t height, int channels,
                                      imgstat_sample sample,
                                      void *const d_planes[], size_t pitch,
                                      imgstat_gpu_image **out,
                                      imgstat_error *err) {
  (void)d_planes;
  return imgstat_gpu_image_wrap_strided(gpu, width, height, channels, sample,
                                        NULL, pitch, 0, 0, out, err);
}

imgstat_status imgstat_gpu_image_wrap_strided(
    imgstat_gpu *gpu, uint32_t width, uint32_t height, int channels,
    imgstat_sample sample, const void *d_data, size_t row_pitch,
    size_t pixel_pitch, size_t channel_pitch, imgstat_gpu_image **out,
    imgstat_error *err) {
  (void)gpu;
  (void)width;
  (void)height;
  (void)channels;
  (void)sample;
  (void)d_data;
  (void)row_pitch;
  (void)pixel_pitch;
  (void)channel_pitch;
  if (out)
    *out = NULL;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_image_wrap_on(
    imgstat_gpu *gpu, uint32_t width, uint32_t height, int channels,
    imgstat_sample sample, const void *d_data, size_t row_pitch,
    size_t pixel_pitch, size_t channel_pitch, uintptr_t stream,
    imgstat_gpu_image **out, imgstat_error *err) {
  (void)stream;
  return imgstat_gpu_image_wrap_strided(gpu, width, height, channels, sample,
                                        d_data, row_pitch, pixel_pitch,
                                        channel_pitch, out, err);
}

imgstat_status imgstat_gpu_image_download(imgstat_gpu *gpu,
                                          imgstat_gpu_image *dimg, int c,
                                          void *host, imgstat_error *err) {
  (void)gpu;
  (void)dimg;
  (void)c;
  (void)host;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_malloc(imgstat_gpu *gpu, size_t bytes, void **p,
                                  imgstat_error *err) {
  (void)gpu;
  (void)bytes;
  if (p)
    *p = NULL;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_wait_stream(imgstat_gpu *gpu, uintptr_t stream,
                                       imgstat_error *err) {
  (void)gpu;
  (void)stream;
  return no_cuda(err);
}

void imgstat_gpu_free(imgstat_gpu *gpu, void *p) {
  (void)gpu;
  (void)p;
}

void imgstat_gpu_image_release(imgstat_gpu *gpu, imgstat_gpu_image *dimg) {
  (void)gpu;
  (void)dimg;
}

imgstat_status imgstat_gpu_image_stats(imgstat_gpu *gpu,
                                       imgstat_gpu_image *dimg, int kernel,
                                       imgstat_partial *out,
                                       imgstat_error *err) {
  (void)dimg;
  return imgstat_gpu_stats(gpu, NULL, kernel, out, err);
}

imgstat_status imgstat_gpu_valid_stats(imgstat_gpu *gpu,
                                       const imgstat_image *img,
                                       const imgstat_valid *v, int kernel,
                                       imgstat_partial *out, uint64_t *nodata,
                                       imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)v;
  (void)kernel;
  (void)out;
  (void)nodata;
  return no_cuda(err);
}

imgstat_status imgstat_gpu_valid_label_stats(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)v;
  (void)kernel;
  (void)nlabels;
  (void)pixels;
  (void)start;
  (void)count;
  (void)out;
  (void)nodata;
  return no_cuda(err);
}

imgstat_status
imgstat_gpu_valid_stats_hist(imgstat_gpu *gpu, const imgstat_image *img,
                             const imgstat_valid *v, int kernel,
                             imgstat_partial *out, uint64_t *nodata,
                             imgstat_histogram *hist, imgstat_error *err) {
  (void)hist;
  return imgstat_gpu_valid_stats(gpu, img, v, kernel, out, nodata, err);
}

imgstat_status imgstat_gpu_valid_label_stats_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *out, uint64_t *nodata,
    imgstat_histogram *hist, imgstat_error *err) {
  (void)hist;
  return imgstat_gpu_valid_label_stats(gpu, img, v, kernel, nlabels, pixels,
                                       start, count, out, nodata, err);
}

imgstat_status imgstat_gpu_valid_regions_hist(
    imgstat_gpu *gpu, const imgstat_image *img, const imgstat_valid *v,
    int kernel, imgstat_partial *out, uint64_t *nodata, imgstat_histogram *hist,
    uint32_t nlabels, const uint32_t *pixels, const uint64_t *start,
    const uint64_t *count, imgstat_partial *lout, uint64_t *lnodata,
    imgstat_histogram *lhist, imgstat_error *err) {
  (void)hist;
  (void)nlabels;
  (void)pixels;
  (void)start;
  (void)count;
  (void)lout;
  (void)lnodata;
  (void)lhist;
  return imgstat_gpu_valid_stats(gpu, img, v, kernel, out, nodata, err);
}

imgstat_status imgstat_gpu_valid_regions_batch(imgstat_gpu *gpu, int kernel,
                                               imgstat_gpu_valid_item *items,
                                               size_t n, imgstat_error *err) {
  (void)gpu;
  (void)kernel;
  for (size_t k = 0; items && k < n; k++) {
    items[k].batched = 0;
    items[k].status = no_cuda(&items[k].err);
  }
  return no_cuda(err);
}
