/*
 * Helpers of the GPU tests (test_gpu.c, test_norm_gpu.c): images laid out
 * as the device paths must handle them, made with the CUDA runtime
 * directly (independent of the library under test). In a build without
 * CUDA they make nothing and return 0.
 */
#ifndef IMGSTAT_TEST_GPU_UTIL_H
#define IMGSTAT_TEST_GPU_UTIL_H

#include "imgstat/imgstat.h"

/* Number of CUDA devices (0 without CUDA or a device). */
int test_gpu_device_count(void);

/* Makes the calling thread's current device `device`; 1 on success. */
int test_gpu_set_device(int device);

/* A copy of src whose rows are `pad` bytes longer than dense (the padding
 * filled with 0xEE, which a reader of it would show), in pageable memory or
 * (pinned) in cudaMallocHost memory. Returns 1, or 0 when it cannot. */
int test_gpu_strided_copy(const imgstat_image *src, size_t pad, int pinned,
                          imgstat_image *dst);
/* Frees what test_gpu_strided_copy made. */
void test_gpu_strided_free(imgstat_image *img, int pinned);

/* src's planes copied into one cudaMalloc'ed block: plane c at byte
 * offset + c * (height * pitch + offset) (so that a non-zero offset puts
 * every plane off the 16-byte grid), rows `pitch` bytes apart (0: dense),
 * the gaps filled with 0xEE. *block receives the allocation (free with
 * test_gpu_free), planes[c] the planes. Returns 1, or 0 when it cannot. */
int test_gpu_device_copy(const imgstat_image *src, size_t offset, size_t pitch,
                         void **block, void **planes);
void test_gpu_free(void *block);

/* src's samples interleaved in one cudaMalloc'ed block (*block, free with
 * test_gpu_free): sample c of pixel x of row y at byte y * row_pitch +
 * x * pixel_pitch + c * sample, every other byte 0xEE. Returns 1, or 0
 * when it cannot. */
int test_gpu_device_interleaved(const imgstat_image *src, size_t row_pitch,
                                size_t pixel_pitch, void **block);
/* n bytes of device memory copied to host memory; 1, or 0 on failure. */
int test_gpu_to_host(void *host, const void *dev, size_t n);

#endif
