/* --verify: the CPU's and the GPU's partials compared field by field. */
#include "verify.h"

#include "imgstat/record.h"

#include <math.h>
#include <string.h>

static void format_field(char *buf, size_t size, int is_double, double d,
                         uint64_t u) {
  if (!is_double)
    snprintf(buf, size, "%llu", (unsigned long long)u);
  else if (isfinite(d))
    imgstat_record_format_double(buf, size, d);
  else
    snprintf(buf, size, "%s", isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf"));
}

static int same_double(double a, double b) {
  return a == b || (isnan(a) && isnan(b));
}

static int same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

int ist_verify_partials(FILE *out, const char *path, imgstat_colour colour,
                        int channels, imgstat_sample sample,
                        const imgstat_partial *cpu,
                        const imgstat_partial *gpu) {
  (void)sample; /* every sample type: every field exactly */
  int mismatches = 0;
  for (int c = 0; c < channels; c++) {
    const imgstat_partial *a = &cpu[c], *b = &gpu[c];
    /* Float mean and M2 too: the canonical order gives both backends the
     * same bits (bit for bit, so -0.0 differs from 0.0). */
    struct {
      const char *name;
      int is_double;
      int ok;
      double da, db;
      uint64_t ua, ub;
    } f[] = {
        {"count", 0, a->count == b->count, 0, 0, a->count, b->count},
        {"nan_count", 0, a->nan_count == b->nan_count, 0, 0, a->nan_count,
         b->nan_count},
        {"inf_count", 0, a->inf_count == b->inf_count, 0, 0, a->inf_count,
         b->inf_count},
        {"min", 1, same_double(a->min, b->min), a->min, b->min, 0, 0},
        {"max", 1, same_double(a->max, b->max), a->max, b->max, 0, 0},
        {"min_index", 0, a->min_index == b->min_index, 0, 0, a->min_index,
         b->min_index},
        {"max_index", 0, a->max_index == b->max_index, 0, 0, a->max_index,
         b->max_index},
        {"sum", 0, a->sum == b->sum, 0, 0, a->sum, b->sum},
        {"sumsq", 0, a->sumsq == b->sumsq, 0, 0, a->sumsq, b->sumsq},
        {"mean", 1, same_bits(a->mean, b->mean), a->mean, b->mean, 0, 0},
        {"m2", 1, same_bits(a->m2, b->m2), a->m2, b->m2, 0, 0},
    };
    for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
      if (f[k].ok)
        continue;
      char va[40], vb[40];
      format_field(va, sizeof va, f[k].is_double, f[k].da, f[k].ua);
      format_field(vb, sizeof vb, f[k].is_double, f[k].db, f[k].ub);
      imgstat_record_escape(out, path, IMGSTAT_ESCAPE_TEXT);
      fprintf(out, ": verify MISMATCH channel %s field %s cpu=%s gpu=%s\n",
              imgstat_colour_channel_name(colour, channels, c), f[k].name, va,
              vb);
      mismatches++;
    }
  }
  if (mismatches == 0) {
    imgstat_record_escape(out, path, IMGSTAT_ESCAPE_TEXT);
    fputs(": verify ok\n", out);
  }
  return mismatches == 0;
}
