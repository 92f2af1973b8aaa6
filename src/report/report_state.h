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

/* The formats counted (more are not). */
#define IST_REPORT_FORMATS_MAX 16

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
  /* the images read of more than IST_REPORT_CHANNELS channels (their first
   * ones kept) and the most channels of an image read */
  uint64_t wide;
  int max_channels;
  /* the table: a max-heap on hash of at most opt.table_max rows */
  ist_report_row *rows;
  size_t nrows;
  ist_report_group *groups; /* failed inputs by reason */
  size_t ngroups;
  /* formats and decoders seen, with counts (static strings) */
  const char *formats[IST_REPORT_FORMATS_MAX];
  uint64_t format_count[IST_REPORT_FORMATS_MAX];
  size_t nformats;
  /* the names of formats that came in a serialized report (owned copies,
   * which its rows and formats point to) */
  char **names;
  size_t nnames;
};

/* A row's key in the table's sample: splitmix64 of its ordinal. */
uint64_t ist_report_hash(uint64_t ordinal);

/* The table's sample: offers row to r's table, which keeps it (and owns
 * its strings) when its hash is among the lowest table_max, else frees
 * them. */
void ist_report_table_offer(imgstat_report *r, ist_report_row *row);
void ist_report_row_free(ist_report_row *row);
/* The group of the failures of this reason (made when new; past
 * IST_REPORT_GROUPS_MAX - 1 reasons, "other reasons"); NULL when out of
 * memory. */
ist_report_group *ist_report_group_of(imgstat_report *r, const char *reason);
/* Lists file in gr when it lists fewer than list_max; 0: out of memory. */
int ist_report_group_list(imgstat_report *r, ist_report_group *gr,
                          const char *file);
/* The format name s as r keeps it: a name r has (a static string, or one
 * of its own copies), else a new copy of s (NULL: out of memory). */
const char *ist_report_intern(imgstat_report *r, const char *s);
/* The format counted (when fewer than IST_REPORT_FORMATS_MAX are): name
 * is one r keeps. */
void ist_report_count_format(imgstat_report *r, const char *name,
                             uint64_t count);

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
