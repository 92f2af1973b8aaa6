/*
 * The syntax of IMGSTAT_GPU_FAULT, the fault-injection switch of the CUDA
 * backend (docs/gpu.md, "Fault injection"). Header-only and plain C, so that
 * cuda/gpu_backend.cu (which reads the variable once and counts the events)
 * and a CPU-only test share the one parser. Not installed.
 *
 * Values:
 *   unset, "" or "0"  no fault
 *   "N"               the N-th event fails, allocations and launches counted
 *                     together
 *   "alloc:N"         the N-th device or pinned allocation fails
 *   "launch:N"        the N-th kernel launch fails
 * N is decimal, 1 to 999999999999999999, without sign, spaces or leading
 * "+"; "alloc:0" and "launch:0" also mean no fault.
 */
#ifndef IMGSTAT_GPU_FAULT_H
#define IMGSTAT_GPU_FAULT_H

#include <stdint.h>
#include <string.h>

#define IMGSTAT_GPU_FAULT_ALLOC 1u
#define IMGSTAT_GPU_FAULT_LAUNCH 2u

typedef struct ist_gpu_fault {
  unsigned kinds; /* events counted: IMGSTAT_GPU_FAULT_* bits; 0: no fault */
  uint64_t n;     /* the counted event that fails (from 1) */
} ist_gpu_fault;

/* Parses a value of IMGSTAT_GPU_FAULT (NULL: unset). Returns 1 and fills
 * *out when it is valid, else returns 0 with *out meaning no fault. */
static inline int ist_gpu_fault_parse(const char *s, ist_gpu_fault *out) {
  out->kinds = 0;
  out->n = 0;
  if (!s || !*s)
    return 1;
  unsigned kinds = IMGSTAT_GPU_FAULT_ALLOC | IMGSTAT_GPU_FAULT_LAUNCH;
  if (strncmp(s, "alloc:", 6) == 0) {
    kinds = IMGSTAT_GPU_FAULT_ALLOC;
    s += 6;
  } else if (strncmp(s, "launch:", 7) == 0) {
    kinds = IMGSTAT_GPU_FAULT_LAUNCH;
    s += 7;
  }
  uint64_t n = 0;
  int digits = 0;
  for (; *s; s++, digits++) {
    if (*s < '0' || *s > '9' || digits == 18)
      return 0;
    n = n * 10 + (uint64_t)(*s - '0');
  }
  if (digits == 0)
    return 0;
  if (n > 0) {
    out->kinds = kinds;
    out->n = n;
  }
  return 1;
}

#endif /* IMGSTAT_GPU_FAULT_H */
