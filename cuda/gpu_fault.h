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
 *   "start:POINT"     the first time the start-up reaches POINT, it fails;
 *   "start:POINT:N"   the N-th time. POINT is a step of a device's start:
 *                     context (imgstat_gpu_create, once per device),
 *                     handles (nvJPEG's handles, once per device), decoder
 *                     (a JPEG decoder's stream: the device's, then one per
 *                     lane of the device stage) or state (a decoder's
 *                     nvJPEG state, per decoder prepared)
 * N is decimal, 1 to 999999999999999999, without sign, spaces or leading
 * "+"; "alloc:0", "launch:0" and "start:POINT:0" also mean no fault.
 */
#ifndef IMGSTAT_GPU_FAULT_H
#define IMGSTAT_GPU_FAULT_H

#include <stdint.h>
#include <string.h>

#define IMGSTAT_GPU_FAULT_ALLOC 1u
#define IMGSTAT_GPU_FAULT_LAUNCH 2u
#define IMGSTAT_GPU_FAULT_START 4u

/* The start-up's points of "start:POINT" (ist_gpu_fault.point). */
enum {
  IST_GPU_START_CONTEXT = 1,
  IST_GPU_START_HANDLES,
  IST_GPU_START_DECODER,
  IST_GPU_START_STATE
};

typedef struct ist_gpu_fault {
  unsigned kinds; /* events counted: IMGSTAT_GPU_FAULT_* bits; 0: no fault */
  uint64_t n;     /* the counted event that fails (from 1) */
  int point;      /* IMGSTAT_GPU_FAULT_START: IST_GPU_START_*; else 0 */
} ist_gpu_fault;

/* Reads N (1 to 18 digits) from s to its end: 1 and *n, or 0. */
static inline int ist_gpu_fault_count(const char *s, uint64_t *n) {
  int digits = 0;
  *n = 0;
  for (; *s; s++, digits++) {
    if (*s < '0' || *s > '9' || digits == 18)
      return 0;
    *n = *n * 10 + (uint64_t)(*s - '0');
  }
  return digits > 0;
}

/* Parses a value of IMGSTAT_GPU_FAULT (NULL: unset). Returns 1 and fills
 * *out when it is valid, else returns 0 with *out meaning no fault. */
static inline int ist_gpu_fault_parse(const char *s, ist_gpu_fault *out) {
  out->kinds = 0;
  out->n = 0;
  out->point = 0;
  if (!s || !*s)
    return 1;
  unsigned kinds = IMGSTAT_GPU_FAULT_ALLOC | IMGSTAT_GPU_FAULT_LAUNCH;
  int point = 0;
  uint64_t n = 0;
  if (strncmp(s, "start:", 6) == 0) {
    static const char *const points[] = {"context", "handles", "decoder",
                                         "state"};
    s += 6;
    for (int k = 0; k < 4 && !point; k++) {
      size_t len = strlen(points[k]);
      if (strncmp(s, points[k], len) == 0 &&
          (s[len] == '\0' || s[len] == ':')) {
        point = k + 1;
        s += len;
      }
    }
    if (!point)
      return 0;
    kinds = IMGSTAT_GPU_FAULT_START;
    if (*s == '\0')
      n = 1;
    else if (!ist_gpu_fault_count(s + 1, &n))
      return 0;
  } else {
    if (strncmp(s, "alloc:", 6) == 0) {
      kinds = IMGSTAT_GPU_FAULT_ALLOC;
      s += 6;
    } else if (strncmp(s, "launch:", 7) == 0) {
      kinds = IMGSTAT_GPU_FAULT_LAUNCH;
      s += 7;
    }
    if (!ist_gpu_fault_count(s, &n))
      return 0;
  }
  if (n > 0) {
    out->kinds = kinds;
    out->n = n;
    out->point = point;
  }
  return 1;
}

#endif /* IMGSTAT_GPU_FAULT_H */
