/*
 * The GPU backend's C API. Implemented in cuda/ when imgstat is built with
 * CUDA, and by src/gpu_none.c (every call answers IMGSTAT_ERR_NODEVICE with
 * "built without CUDA support") otherwise. Never prints or exits.
 */
#ifndef IMGSTAT_CUDA_H
#define IMGSTAT_CUDA_H

#include "imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel choice: 0 is the fused default ("fast"); 1..7 the classic ladder. */
#define IMGSTAT_KERNEL_FAST 0
#define IMGSTAT_KERNEL_LADDER_MIN 1
#define IMGSTAT_KERNEL_LADDER_MAX 7

/* 1 when this build contains the CUDA backend, 0 otherwise. */
int imgstat_gpu_compiled(void);

typedef struct imgstat_gpu imgstat_gpu;

/*
 * Initialises CUDA on device `device` (-1: the current default) and returns a
 * context holding streams, pinned staging buffers and scratch, reused across
 * images. Status: IMGSTAT_ERR_NODEVICE when there is no driver or device (auto
 * falls back quietly), IMGSTAT_ERR_DEVICE when a device is present but
 * unusable (driver too old, init failed: auto falls back with a warning).
 * Safe to call from a thread other than the one that later uses the context.
 */
imgstat_status imgstat_gpu_create(int device, imgstat_gpu **out,
                                  imgstat_error *err);
void imgstat_gpu_destroy(imgstat_gpu *gpu);

/* Short description of the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90)". */
const char *imgstat_gpu_device_name(const imgstat_gpu *gpu);

/*
 * Computes one partial per channel of img on the device with the given kernel
 * (IMGSTAT_KERNEL_FAST or 1..7): the same fields imgstat_cpu_stats fills,
 * bit-identical to it for u8/u16, and for f32 within rounding (count, nan,
 * inf, min, max and their indices identical; mean/m2 within 1e-12 relative).
 */
imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel,
                                 imgstat_partial out[IMGSTAT_MAX_CHANNELS],
                                 imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_CUDA_H */
