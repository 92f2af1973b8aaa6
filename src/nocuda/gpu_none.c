/* The GPU backend of a build without CUDA: every call says so. */
#include "imgstat_cuda.h"

#include <stddef.h>

int imgstat_gpu_compiled(void) { return 0; }

imgstat_status imgstat_gpu_create(int device, imgstat_gpu **out,
                                  imgstat_error *err) {
  (void)device;
  if (out)
    *out = NULL;
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           "this imgstat was built without CUDA support");
}

void imgstat_gpu_destroy(imgstat_gpu *gpu) { (void)gpu; }

const char *imgstat_gpu_device_name(const imgstat_gpu *gpu) {
  (void)gpu;
  return "none";
}

imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel,
                                 imgstat_partial out[IMGSTAT_MAX_CHANNELS],
                                 imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)kernel;
  (void)out;
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           "this imgstat was built without CUDA support");
}
