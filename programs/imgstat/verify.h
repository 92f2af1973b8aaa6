/*
 * --verify: compares the partials of the CPU and the GPU backends field by
 * field and prints the verdict. Part of the program (it prints).
 */
#ifndef IMGSTAT_VERIFY_H
#define IMGSTAT_VERIFY_H

#include "imgstat/imgstat.h"

#include <stdio.h>

/*
 * Compares cpu[c] and gpu[c] for c < channels (named as colour names them):
 * every field exactly, the mean and M2 of float images included (both backends
 * follow the canonical float order, docs/float-order.md, so they agree to the
 * bit). Writes "PATH: verify ok", or one "PATH: verify MISMATCH channel C field
 * F cpu=A gpu=B" line per differing field, to out (PATH escaped as in the text
 * output: IMGSTAT_ESCAPE_TEXT). Returns 1 when they agree.
 */
int ist_verify_partials(FILE *out, const char *path, imgstat_colour colour,
                        int channels, imgstat_sample sample,
                        const imgstat_partial *cpu, const imgstat_partial *gpu);

#endif /* IMGSTAT_VERIFY_H */
