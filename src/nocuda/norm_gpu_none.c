/* Histograms and normalization on the GPU in a build without CUDA: every
 * call says so. */
#include "imgstat/cuda_norm.h"

#include <string.h>

static imgstat_status no_cuda(imgstat_error *err) {
  return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                           "this imgstat was built without CUDA support");
}

imgstat_status imgstat_gpu_histogram(imgstat_gpu *gpu, const imgstat_image *img,
                                     int c, const imgstat_hist_options *opts,
                                     const double *p, int np, double *values,
                                     imgstat_histogram *h, imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)c;
  (void)opts;
  (void)p;
  (void)np;
  (void)values;
  if (h)
    memset(h, 0, sizeof *h);
  return no_cuda(err);
}

imgstat_status imgstat_gpu_normalize(imgstat_gpu *gpu, const imgstat_image *img,
                                     const imgstat_norm_options *opts,
                                     imgstat_norm_measure *m,
                                     imgstat_norm_plan *plan,
                                     imgstat_image *out, imgstat_error *err) {
  (void)gpu;
  (void)img;
  (void)opts;
  (void)m;
  (void)plan;
  if (out)
    memset(out, 0, sizeof *out);
  return no_cuda(err);
}

imgstat_status imgstat_gpu_norm_apply(imgstat_gpu *gpu, const imgstat_image *in,
                                      const imgstat_norm_plan *plan,
                                      imgstat_image *out, imgstat_error *err) {
  (void)gpu;
  (void)in;
  (void)plan;
  if (out)
    memset(out, 0, sizeof *out);
  return no_cuda(err);
}

/* The device image forms: the same answer as the host-image forms. */
imgstat_status imgstat_gpu_image_histogram(imgstat_gpu *gpu,
                                           imgstat_gpu_image *dimg, int c,
                                           const imgstat_hist_options *opts,
                                           const double *p, int np,
                                           double *values, imgstat_histogram *h,
                                           imgstat_error *err) {
  (void)dimg;
  return imgstat_gpu_histogram(gpu, NULL, c, opts, p, np, values, h, err);
}

imgstat_status
imgstat_gpu_image_normalize(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                            const imgstat_norm_options *opts,
                            imgstat_norm_measure *m, imgstat_norm_plan *plan,
                            imgstat_image *out, imgstat_error *err) {
  (void)dimg;
  return imgstat_gpu_normalize(gpu, NULL, opts, m, plan, out, err);
}

imgstat_status imgstat_gpu_image_norm_apply(imgstat_gpu *gpu,
                                            imgstat_gpu_image *dimg,
                                            const imgstat_norm_plan *plan,
                                            imgstat_image *out,
                                            imgstat_error *err) {
  (void)dimg;
  return imgstat_gpu_norm_apply(gpu, NULL, plan, out, err);
}

imgstat_status imgstat_gpu_image_norm_plan(
    imgstat_gpu *gpu, imgstat_gpu_image *dimg, const imgstat_norm_options *opts,
    imgstat_norm_measure *m, imgstat_norm_plan *plan, imgstat_error *err) {
  (void)gpu;
  (void)dimg;
  (void)opts;
  (void)m;
  (void)plan;
  return no_cuda(err);
}

imgstat_status
imgstat_gpu_image_norm_apply_device(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                                    const imgstat_norm_plan *plan, void *d_out,
                                    int interleaved, imgstat_error *err) {
  (void)gpu;
  (void)dimg;
  (void)plan;
  (void)d_out;
  (void)interleaved;
  return no_cuda(err);
}
