/*
 * --verify: compares the partials of the CPU and the GPU backends field by
 * field and prints the verdict. Part of the program (it prints).
 */
#ifndef IMGSTAT_VERIFY_H
#define IMGSTAT_VERIFY_H

#include "imgstat.h"

#include <stdio.h>

/* The tolerance for the mean and M2 of float images (relative). */
#define IMGSTAT_VERIFY_FLOAT_TOLERANCE 1e-9

/*
 * Compares cpu[c] and gpu[c] for c < channels: every field exactly for
 * u8/u16; for f32 the counts, min, max and their indices exactly and mean and
 * m2 within IMGSTAT_VERIFY_FLOAT_TOLERANCE relative (the mean relative to the
 * larger of its magnitude and the channel's largest |value|, m2 to the larger
 * of its magnitude and 1e-6 * count * that value squared). Writes
 * "PATH: verify ok", or one "PATH: verify MISMATCH channel C field F cpu=A
 * gpu=B" line per differing field, to out (PATH escaped as in the text
 * output: IMGSTAT_ESCAPE_TEXT). Returns 1 when they agree.
 */
int ist_verify_partials(FILE *out, const char *path, int channels,
                        imgstat_sample sample, const imgstat_partial *cpu,
                        const imgstat_partial *gpu);

#endif /* IMGSTAT_VERIFY_H */
