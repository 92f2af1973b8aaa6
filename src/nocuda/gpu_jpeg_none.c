/* The nvJPEG decoder of a build without it (no CUDA, or no nvjpeg.h found):
 * every call says so. */
#include "gpu_jpeg.h"

#include <stddef.h>
#include <string.h>

static imgstat_status no_nvjpeg(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           imgstat_gpu_compiled()
                               ? "this imgstat was built without nvJPEG"
                               : "this imgstat was built without CUDA "
                                 "support");
}

int imgstat_gpu_jpeg_compiled(void) { return 0; }

imgstat_status imgstat_gpu_jpeg_load(const char **version, imgstat_error *err) {
  if (version)
    *version = "";
  return no_nvjpeg(err);
}

imgstat_status imgstat_gpu_jpeg_create(imgstat_gpu *gpu, imgstat_gpu_jpeg **out,
                                       imgstat_error *err) {
  (void)gpu;
  if (out)
    *out = NULL;
  return no_nvjpeg(err);
}

imgstat_status imgstat_gpu_jpeg_create_on(int device, int strict,
                                          imgstat_gpu_jpeg **out,
                                          imgstat_error *err) {
  (void)device;
  (void)strict;
  if (out)
    *out = NULL;
  return no_nvjpeg(err);
}

int imgstat_gpu_jpeg_device(const imgstat_gpu_jpeg *dec) {
  (void)dec;
  return -1;
}

imgstat_status imgstat_gpu_jpeg_create_sibling(const imgstat_gpu_jpeg *of,
                                               imgstat_gpu_jpeg **out,
                                               imgstat_error *err) {
  (void)of;
  if (out)
    *out = NULL;
  return no_nvjpeg(err);
}

imgstat_status imgstat_gpu_jpeg_prepare(imgstat_gpu_jpeg *dec,
                                        imgstat_error *err) {
  (void)dec;
  return no_nvjpeg(err);
}

void imgstat_gpu_jpeg_destroy(imgstat_gpu_jpeg *dec) { (void)dec; }

void imgstat_gpu_jpeg_times_get(const imgstat_gpu_jpeg *dec,
                                imgstat_gpu_jpeg_times *out) {
  (void)dec;
  if (out)
    memset(out, 0, sizeof *out);
}

const char *imgstat_gpu_jpeg_backend(const imgstat_gpu_jpeg *dec) {
  (void)dec;
  return "none";
}

imgstat_status imgstat_gpu_jpeg_decode(imgstat_gpu_jpeg *dec,
                                       imgstat_gpu_jpeg_item *items, int n,
                                       imgstat_error *err) {
  (void)dec;
  for (int k = 0; k < n; k++) {
    items[k].status = no_nvjpeg(&items[k].err);
    items[k].hardware = 0;
  }
  return no_nvjpeg(err);
}

void imgstat_gpu_jpeg_item_free(imgstat_gpu_jpeg *dec,
                                imgstat_gpu_jpeg_item *item) {
  (void)dec;
  (void)item;
}

imgstat_status imgstat_gpu_jpeg_item_download(imgstat_gpu_jpeg *dec,
                                              const imgstat_gpu_jpeg_item *item,
                                              imgstat_image *img,
                                              imgstat_error *err) {
  (void)dec;
  (void)item;
  (void)img;
  return no_nvjpeg(err);
}

imgstat_status imgstat_gpu_jpeg_stats(imgstat_gpu_jpeg *dec,
                                      const imgstat_gpu_jpeg_item *items, int n,
                                      imgstat_partial *out,
                                      imgstat_error *err) {
  (void)dec;
  (void)items;
  (void)n;
  (void)out;
  return no_nvjpeg(err);
}

imgstat_status imgstat_gpu_jpeg_reduce(imgstat_gpu_jpeg *dec,
                                       const imgstat_gpu_jpeg_item *items,
                                       int n, imgstat_partial *out,
                                       uint64_t *counts, imgstat_error *err) {
  (void)dec;
  (void)items;
  (void)n;
  (void)out;
  (void)counts;
  return no_nvjpeg(err);
}
