/*
 * What the two files of test_gpu share: test_gpu.c (the kernels against the
 * reference and the CPU backend; the program) and test_gpu_context.c (the
 * context: submit / wait, strides, device planes, devices).
 */
#ifndef IMGSTAT_TEST_GPU_H
#define IMGSTAT_TEST_GPU_H

#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"

#include <stddef.h>
#include <stdint.h>

#define NKERNELS 8

extern imgstat_gpu *g_gpu; /* the device's context */
extern int g_quick;        /* IMGSTAT_TEST_QUICK: a reduced set */
extern uint64_t g_rng;
extern int g_kernels[NKERNELS]; /* fast (0) and the ladder 1..7 */
extern const imgstat_sample g_samples[3];

#ifndef IMGSTAT_HAVE_CUDA
/* Only CUDA builds have the hook; without CUDA no test runs (skip). */
static inline void imgstat_gpu_set_memory_limit(imgstat_gpu *gpu,
                                                size_t bytes) {
  (void)gpu;
  (void)bytes;
}
#endif

uint64_t npix(const imgstat_image *img);
/* Random full-range samples; floats over many magnitudes and signs. */
void fill_random(imgstat_image *img);
/* The independent reference: a plain sequential scan of one plane. */
void ref_scan(const void *plane, imgstat_sample sample, uint64_t n,
              imgstat_partial *r);
/* 1 when gpu matches want; prints what differs otherwise (test_gpu.c). */
int partial_matches(const imgstat_partial *gpu, const imgstat_partial *want,
                    imgstat_sample sample, double k, double tol_scale,
                    const char *what, int kernel, int c);

/* test_gpu_context.c */
void test_submit_threads(void);
void test_submit_all_slots(void);
void test_strided(void);
void test_wrap(void);
void test_hwc(void);
void test_other_device(void);

#endif
