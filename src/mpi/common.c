/* The parts of imgstat_mpi.h that need no MPI: the shares of an ordered list
 * and freeing a gather's result. */
#include "imgstat/mpi.h"

#include <stdlib.h>

void imgstat_mpi_share(uint64_t n, int rank, int size, uint64_t *first,
                       uint64_t *end) {
  uint64_t lo = 0, hi = 0;
  if (size >= 1 && rank >= 0 && rank < size) {
    /* floor(r * n / size) without overflow: r * (n / size) plus
     * floor(r * (n % size) / size), where r * (n % size) < size^2 < 2^62. */
    uint64_t q = n / (uint64_t)size, m = n % (uint64_t)size;
    uint64_t r = (uint64_t)rank;
    lo = r * q + r * m / (uint64_t)size;
    hi = (r + 1) * q + (r + 1) * m / (uint64_t)size;
  }
  if (first)
    *first = lo;
  if (end)
    *end = hi;
}

void imgstat_mpi_blobs_free(imgstat_mpi_blobs *blobs) {
  if (!blobs)
    return;
  free(blobs->data);
  free(blobs->offsets);
  blobs->data = NULL;
  blobs->offsets = NULL;
  blobs->count = 0;
}
