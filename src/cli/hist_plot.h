/*
 * --histogram-png: the histograms of one image, or the dataset's pooled
 * ones, drawn as a PNG (src/cli/hist_plot.c). Part of the program.
 */
#ifndef IMGSTAT_HIST_PLOT_H
#define IMGSTAT_HIST_PLOT_H

#include "output.h"

/* The size of a path buffer for the PNG's name. */
#define IMGSTAT_HIST_PNG_PATH_MAX 4096

/* Whether name ends in ".png" (any case): the one check of the option. */
int ist_hist_plot_name_ok(const char *name);

/* The PNG's path: cfg->png_path itself when input is NULL (the run's one
 * plot); else OUT-STEM.png, STEM the input's file name without its folder
 * and extension (characters other than letters, digits, '.', '-' and '_'
 * become '_'), or "dataset" for the dataset's plot. Returns 0 when it does
 * not fit in size bytes. */
int ist_hist_plot_path(const ist_hist_cli *cfg, const char *input, char *buf,
                       size_t size);

/* What a plot shows beside the bars. */
typedef struct ist_plot_info {
  const char *title; /* the input's name or "dataset (N images)" */
  const char *kind;  /* "RGB 8-bit", ... (after the title) */
  int channels;
  imgstat_sample sample; /* of the histograms */
  double scale; /* one histogram unit in the values shown (1, 1/255, ...) */
  /* Markers, in the values shown: the mean of each channel, and the
   * median and the chosen percentiles (NULL: none) in histogram units. */
  int has_mean[IMGSTAT_MAX_CHANNELS];
  double mean[IMGSTAT_MAX_CHANNELS];
  const imgstat_hist_figures *figures;
} ist_plot_info;

/* Draws hist[0..channels-1] as a PNG at path: a title line (title, kind,
 * LINEAR or LOG COUNTS), one panel per channel, stacked, each with its own
 * axes: x from the lowest to the highest bin value with five labelled ticks
 * (in the values shown), y with labelled count ticks (powers of ten on the
 * log scale, log(1 + count), so the labels stay true); markers: the mean
 * (solid), the median (dashed) and the percentiles (dotted), each named;
 * cfg->bins display bins (at most the plot's width). Written through
 * imgstat_image_write, with its temporary in cli_util's slot. */
imgstat_status ist_hist_plot_write(const ist_hist_cli *cfg,
                                   const ist_plot_info *info,
                                   const imgstat_histogram *hist,
                                   const char *path, imgstat_error *err);

#endif /* IMGSTAT_HIST_PLOT_H */
