/*
 * Private to the library: the attribute of the scans that run on every
 * x86-64 CPU and still use AVX2 / AVX-512 where the CPU has them (GCC
 * function multiversioning, resolved once at load time): SSE2 alone has no
 * unsigned 16-bit min/max and no 32-bit multiply, and runs the u16 scan at
 * less than half the speed. ThreadSanitizer cannot run ifunc resolvers (it
 * crashes at start-up), so TSan builds go without; so do other compilers
 * and systems. For partial.c's scans and valid.c's one-pass kernels.
 */
#ifndef IST_SIMD_CLONES_H
#define IST_SIMD_CLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__) && !defined(__SANITIZE_THREAD__)
#define IMGSTAT_SIMD_CLONES                                                    \
  __attribute__((noinline, target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define IMGSTAT_SIMD_CLONES
#endif

#endif
