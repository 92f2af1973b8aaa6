/*
 * What the report keeps of a run (src/report/report.c gathers it,
 * report_page.c writes the page): private to src/report/.
 */
#ifndef IMGSTAT_REPORT_STATE_H
#define IMGSTAT_REPORT_STATE_H

#include "imgstat/report.h"

#include <stdint.h>
#include <stdio.h>

/* The channels kept of each image (a multi-band image's first ones): its
 * mean and std, 32 bytes an image. */
#define IST_REPORT_CHANNELS 4

/* One row of the images' table. */
typedef struct ist_report_row {
  uint64_t ordinal;
  uint64_t hash; /* the sample's key: splitmix64 of the ordinal */
  char *file;
  char *error; /* NULL: read */
  uint32_t width, height;
  int channels;
  int sample; /* bytes per sample, 0: not decoded */
  const char *format;
  float mean[IST_REPORT_CHANNELS], std[IST_REPORT_CHANNELS];
} ist_report_row;

/* Files sharing a reason (failed inputs). */
typedef struct ist_report_group {
  char *reason;
  uint64_t count;
  size_t nfiles;
  char **files; /* the first list_max */
} ist_report_group;

/* The groups past this many fall into the last one, "other reasons". */
#define IST_REPORT_GROUPS_MAX 64

struct imgstat_report {
  imgstat_report_options opt;
  /* every image read: its channels, mean and std per channel (NaN: none) */
  uint64_t nimages, cap_images;
  unsigned char *channels;
  float *mean, *std; /* IST_REPORT_CHANNELS per image */
  uint64_t inputs, failed;
  uint64_t backend_count[3]; /* cpu, gpu, other */
  /* the table: a max-heap on hash of at most opt.table_max rows */
  ist_report_row *rows;
  size_t nrows;
  ist_report_group *groups; /* failed inputs by reason */
  size_t ngroups;
  /* formats and decoders seen, with counts (static strings) */
  const char *formats[16];
  uint64_t format_count[16];
  size_t nformats;
};

/* The thumbnail of the image at path as a "data:image/png;base64,..."
 * string into *uri (malloc'd), its long side at most size pixels; else
 * the reason in err. */
imgstat_status ist_report_thumbnail(const char *path,
                                    const imgstat_load_options *load,
                                    uint32_t size, char **uri,
                                    imgstat_error *err);

/* The page into f. */
imgstat_status ist_report_page(FILE *f, imgstat_report *r, const char *path,
                               const imgstat_report_run *run,
                               const imgstat_dataset_result *ds,
                               imgstat_error *err);

#endif /* IMGSTAT_REPORT_STATE_H */
