/*
 * The main command line's histogram options (src/histogram_cli.c):
 *   --histogram            add median, percentiles, entropy, skewness and
 *                          kurtosis to each channel (text, JSON, CSV); JSON
 *                          also gets the counts ("histogram")
 *   --percentiles LIST     which percentiles (default 1,99; implies
 *                          --histogram), e.g. --percentiles 1,50,99
 *   --bins N               bins shown in JSON and the PNG (default 256; for
 *                          16-bit, 65536 shows every value)
 *   --histogram-png OUT    draw the histograms as a PNG (several inputs:
 *                          OUT-1.png, OUT-2.png, ...)
 *   --histogram-log        logarithmic counts in the PNG
 *
 * How main.c uses it:
 *   1. ist_hist_cli cfg; ist_hist_cli_init(&cfg);
 *   2. for an option it does not know itself (name without "=value"):
 *        int k = ist_hist_cli_takes_value(name);   -1: not ours
 *      and if k >= 0, with the value (NULL for a flag):
 *        if (ist_hist_cli_set(&cfg, name, value) != 0) return 2;
 *      (the function printed the usage error).
 *   3. after parsing: if (ist_hist_cli_check(&cfg, files, nfiles))
 *        return 2;
 *   4. per image, when ist_hist_cli_active(&cfg):
 *        ist_hist_result res;
 *        st = ist_hist_cli_compute(&cfg, &img, gpu_or_NULL, threads,
 *                                      &res, &err);
 *      (st != IMGSTAT_OK: "imgstat: PATH: reason", the input failed; with
 *      a GPU, main.c's backend policy may first warn and redo it on the
 *      CPU);
 *   5. print, only when cfg.fields (--histogram / --percentiles):
 *        text: after the record's table,
 *              ist_hist_cli_print_text(out, &cfg, &res);
 *        JSON: inside each channel object, after its last field and before
 *              '}': ist_hist_cli_print_json(out, &cfg, &res, c);
 *        CSV:  at the end of the header line (before '\n'):
 *              ist_hist_cli_print_csv_header(out, &cfg);
 *              at the end of each channel row (before '\n'):
 *              ist_hist_cli_print_csv(out, &cfg, &res, c);
 *   6. if cfg.png_path: ist_hist_cli_write_png(&cfg, &res, index,
 *      nfiles, path_buf, sizeof path_buf, &err), an error being
 *      "imgstat: PATH_BUF: reason" (the input failed);
 *   7. ist_hist_result_free(&res).
 */
#ifndef IMGSTAT_HISTOGRAM_CLI_H
#define IMGSTAT_HISTOGRAM_CLI_H

#include "imgstat.h"
#include "imgstat_cuda.h"
#include "imgstat_norm.h"

#include <stdio.h>

typedef struct ist_hist_cli {
  int fields; /* --histogram or --percentiles given */
  int npercentiles;
  double percentiles[IMGSTAT_MAX_PERCENTILES];
  uint32_t bins;        /* display bins (JSON counts, PNG) */
  const char *png_path; /* --histogram-png, or NULL */
  int png_log;          /* --histogram-log */
} ist_hist_cli;

/* One image's histograms and figures. */
typedef struct ist_hist_result {
  int channels;
  imgstat_sample sample;
  const char *backend; /* "cpu" or "gpu": what computed the histograms */
  imgstat_histogram hist[IMGSTAT_MAX_CHANNELS];
  imgstat_hist_figures fig[IMGSTAT_MAX_CHANNELS];
} ist_hist_result;

void ist_hist_cli_init(ist_hist_cli *cfg);
int ist_hist_cli_takes_value(const char *name);
int ist_hist_cli_set(ist_hist_cli *cfg, const char *name, const char *value);
/* After parsing: the options fit together, and no PNG would overwrite one
 * of the nfiles inputs (cli_util.h's rule). Returns 0, or the exit status
 * of a usage error it printed. */
int ist_hist_cli_check(const ist_hist_cli *cfg, char *const *files, int nfiles);
int ist_hist_cli_active(const ist_hist_cli *cfg);

/* Histograms of every channel: on the GPU when gpu is not NULL, else on the
 * CPU with `threads`. A GPU failure is returned like any other (res is then
 * empty): the caller decides whether to compute again with gpu == NULL. */
imgstat_status ist_hist_cli_compute(const ist_hist_cli *cfg,
                                    const imgstat_image *img, imgstat_gpu *gpu,
                                    int threads, ist_hist_result *res,
                                    imgstat_error *err);
void ist_hist_result_free(ist_hist_result *res);

void ist_hist_cli_print_text(FILE *out, const ist_hist_cli *cfg,
                             const ist_hist_result *res);
void ist_hist_cli_print_json(FILE *out, const ist_hist_cli *cfg,
                             const ist_hist_result *res, int c);
void ist_hist_cli_print_csv_header(FILE *out, const ist_hist_cli *cfg);
void ist_hist_cli_print_csv(FILE *out, const ist_hist_cli *cfg,
                            const ist_hist_result *res, int c);

/* The size of a path buffer for the PNG's name. */
#define IMGSTAT_HIST_PNG_PATH_MAX 4096

/* The PNG's path for input index (from 1) of nfiles: cfg->png_path, with
 * "-INDEX" before the extension when nfiles > 1. Returns 0 when it does not
 * fit in size bytes. */
int ist_hist_cli_png_path(const ist_hist_cli *cfg, int index, int nfiles,
                          char *buf, size_t size);

/* Draws the histograms of res as a PNG at cfg->png_path (with "-INDEX"
 * before the extension when nfiles > 1, index counting from 1); the path
 * used goes to path_buf. */
imgstat_status ist_hist_cli_write_png(const ist_hist_cli *cfg,
                                      const ist_hist_result *res, int index,
                                      int nfiles, char *path_buf,
                                      size_t path_size, imgstat_error *err);

#endif /* IMGSTAT_HISTOGRAM_CLI_H */
