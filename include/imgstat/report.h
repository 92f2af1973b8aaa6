/*
 * imgstat: the report page of a run (--report FILE.html), one
 * self-contained HTML file: the run, the pooled record per channel and the
 * constants the run printed, the pooled histograms (linear and log), the
 * distributions of the images' means and stds, the outliers with
 * thumbnails made from their decoded pixels, the files left out and those
 * that failed grouped by reason, and a table of the images (sortable,
 * filterable; a bounded, deterministic sample of a large run). Nothing on
 * the page is fetched: plots are inline SVG, thumbnails data: URIs of PNGs,
 * the table's sorting a few lines of inline script (docs/report.md).
 *
 * A front end makes a report before the run, adds each input's result in
 * any order (imgstat_report_add), and writes the page at the end
 * (imgstat_report_write) with the run's facts and its dataset record. What
 * it keeps per image is its mean and std per channel (the distributions
 * are complete) and, for at most table_max images, a row of the table.
 * The page is written atomically (imgstat_bytes_write): a failure leaves
 * no partial page. The library never prints, exits or aborts.
 *
 * An image of more than 4 channels (5 to 1024 bands) keeps the mean and std
 * of its first 4; the page says so where it shows them (the pooled record
 * and histograms, from the dataset record, cover every band).
 *
 * Many processes (an MPI run's ranks) each gather their share of the
 * inputs; each sends its report in the serialized form
 * (imgstat_report_serialize), and the one that writes the page reads them
 * back (imgstat_report_deserialize) and merges them into its own in input
 * order (imgstat_report_merge): the page is the one a single process
 * would write.
 */
#ifndef IMGSTAT_REPORT_H
#define IMGSTAT_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bounds of a page (0 in the options: these). */
#define IMGSTAT_REPORT_TABLE_MAX 2000 /* rows of the images' table */
#define IMGSTAT_REPORT_THUMBS_MAX 24  /* outliers shown with a thumbnail */
#define IMGSTAT_REPORT_THUMB_SIZE 128 /* a thumbnail's long side, pixels */
#define IMGSTAT_REPORT_LIST_MAX 100   /* files listed per reason */

typedef struct imgstat_report_options {
  size_t table_max;
  size_t thumbs_max;
  uint32_t thumb_size;
  size_t list_max;
  /* How the outliers are read again for their thumbnails (the run's). */
  imgstat_load_options load;
} imgstat_report_options;

typedef struct imgstat_report imgstat_report;

/* A new report with a copy of opts (NULL: the defaults). */
imgstat_status imgstat_report_create(const imgstat_report_options *opts,
                                     imgstat_report **out, imgstat_error *err);
void imgstat_report_destroy(imgstat_report *r);

/* One input's outcome: ordinal is its place in the input list (the
 * dataset's ordinal), file its name as the run shows it, res its result
 * (succeeded or failed). ddof as the run's figures. IMGSTAT_ERR_NOMEM. */
imgstat_status imgstat_report_add(imgstat_report *r, uint64_t ordinal,
                                  const char *file,
                                  const imgstat_job_result *res, int ddof,
                                  imgstat_error *err);

/* Merges b into a as if b's inputs had been added to a after a's own (b's
 * come after a's in input order: an MPI run's ranks in rank order); b is
 * unchanged. The distributions, counts and failures by reason are those
 * of both; the table keeps the table_max rows of both that hash lowest
 * (the same rows whichever way the inputs were split); the files listed
 * per reason are a's, then b's, up to list_max. IMGSTAT_ERR_NOMEM (a then
 * holds part of b: drop it). */
imgstat_status imgstat_report_merge(imgstat_report *a, const imgstat_report *b,
                                    imgstat_error *err);

/* What r gathered in a serialized form (little-endian, versioned,
 * checksummed; not its options): *buf is a new malloc'd buffer of *size
 * bytes (free it). IMGSTAT_ERR_NOMEM. */
imgstat_status imgstat_report_serialize(const imgstat_report *r, void **buf,
                                        size_t *size, imgstat_error *err);

/* A new report (options opts, as imgstat_report_create's) holding what a
 * serialized form holds. IMGSTAT_ERR_FORMAT when the bytes are not one
 * (damaged, truncated, another version) or hold more than opts allows
 * (rows of the table, files listed per reason); IMGSTAT_ERR_NOMEM. */
imgstat_status imgstat_report_deserialize(const void *buf, size_t size,
                                          const imgstat_report_options *opts,
                                          imgstat_report **out,
                                          imgstat_error *err);

/* The run's facts, as the front end knows them. */
typedef struct imgstat_report_run {
  const char *command_line; /* shown as given (NULL: none) */
  const char *backend;      /* asked for: "auto", "cpu", "gpu" (NULL: none) */
  const char *decoder;      /* the JPEG decoder asked for (NULL: none) */
  int ninputs;
  const char *const *inputs; /* the paths and lists given */
  double started;            /* seconds since the epoch, UTC */
  double seconds;            /* how long the run took */
  /* The constants the run printed: a mask of 1 << imgstat_emit
   * (imgstat/record.h); with 0 and a scale unit record, torchvision's. */
  unsigned emit;
  int npercentiles; /* the record's percentiles (and the median) */
  double percentiles[IMGSTAT_MAX_PERCENTILES];
  int ranks; /* the MPI ranks that ran it (0: not an MPI run) */
} imgstat_report_run;

/* Writes the page to path (atomically; opts: its cancel and temp_path,
 * may be NULL). ds: the run's dataset record (NULL: none). The outliers are
 * read again for their thumbnails (a file that cannot be read gets the
 * reason in its place). IMGSTAT_ERR_IO naming path, IMGSTAT_ERR_NOMEM. */
imgstat_status imgstat_report_write(imgstat_report *r, const char *path,
                                    const imgstat_report_run *run,
                                    const imgstat_dataset_result *ds,
                                    const imgstat_write_options *opts,
                                    imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_REPORT_H */
