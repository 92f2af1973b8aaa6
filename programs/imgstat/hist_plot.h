/*
 * --histogram-png: the histograms of one image, or the dataset's pooled
 * ones, drawn as a PNG (programs/imgstat/hist_plot.c). Part of the program.
 */
#ifndef IMGSTAT_HIST_PLOT_H
#define IMGSTAT_HIST_PLOT_H

#include "imgstat/record.h"

/* The size of a path buffer for the PNG's name. */
#define IMGSTAT_HIST_PNG_PATH_MAX 4096

/* Whether name ends in ".png" (any case): the one check of the option. */
int ist_hist_plot_name_ok(const char *name);

/* The PNG's path: cfg->png_path itself when input is NULL (the run's one
 * plot); else OUT-STEM.png, STEM the input's file name without its folder
 * and extension (characters other than letters, digits, '.', '-' and '_'
 * become '_'), or "dataset" for the dataset's plot. Returns 0 when it does
 * not fit in size bytes. */
int ist_hist_plot_path(const imgstat_record_hist *cfg, const char *input,
                       char *buf, size_t size);

/* What a plot shows beside the bars. */
typedef struct ist_plot_info {
  const char *title; /* the input's name or "dataset (N images)" */
  const char *kind;  /* "RGB 8-bit", ... (after the title) */
  int channels;
  imgstat_colour colour; /* the channels' names (imgstat.h) */
  imgstat_sample sample; /* of the histograms */
  double scale; /* one histogram unit in the values shown (1, 1/255, ...) */
  /* Markers, in the values shown: the mean of each channel, and the
   * median and the chosen percentiles (NULL: none) in histogram units. */
  int has_mean[IMGSTAT_MAX_CHANNELS];
  double mean[IMGSTAT_MAX_CHANNELS];
  const imgstat_hist_figures *figures;
  /* NULL, or the samples beyond each panel's range (ist_plot_hists) */
  const uint64_t *below, *above;
} ist_plot_info;

/* What the plot of a float image shows: per channel a histogram over the
 * range drawn, and the finite samples below and above it (drawn at the
 * panel's edges). */
typedef struct ist_plot_hists {
  int have; /* filled (else the plot draws the job's histograms) */
  int channels;
  imgstat_histogram hist[IMGSTAT_MAX_CHANNELS];
  uint64_t below[IMGSTAT_MAX_CHANNELS], above[IMGSTAT_MAX_CHANNELS];
} ist_plot_hists;

/* The percentiles of the default range of a float plot: a hot pixel does
 * not squeeze the picture into one bar. */
#define IST_PLOT_ROBUST_LOW 0.1
#define IST_PLOT_ROBUST_HIGH 99.9

/* Fills *out for a float image: over range[0..1] when range is not NULL
 * (--range), else over the IST_PLOT_ROBUST_LOW..HIGH percentiles of each
 * channel, found from full[c] (the job's histogram over [min, max]) and
 * refined by one histogram over the bins that hold them (so the range is
 * within a 65536th of a 65536th of [min, max]); the channel's [min, max]
 * when that range is empty. bins: the display bins. Free with
 * ist_hist_plot_hists_free. */
imgstat_status ist_hist_plot_float(const imgstat_image *img,
                                   const imgstat_histogram *full,
                                   const double *range, uint32_t bins,
                                   ist_plot_hists *out, imgstat_error *err);
void ist_hist_plot_hists_free(ist_plot_hists *h);

/* Draws hist[0..channels-1] as a PNG at path: a title line (title, kind,
 * linear or log counts), one panel per channel, stacked, each with its own
 * axes: x from the lowest to the highest bin value with five labelled ticks
 * (in the values shown), y with labelled count ticks (powers of ten on the
 * log scale, log(1 + count), so the labels stay true); markers: the mean
 * (solid), the median (dashed) and the percentiles (dotted), each named;
 * cfg->bins display bins (at most the plot's width). Written through
 * imgstat_image_write, with its temporary in cli_util's slot. */
imgstat_status ist_hist_plot_write(const imgstat_record_hist *cfg,
                                   const ist_plot_info *info,
                                   const imgstat_histogram *hist,
                                   const char *path, imgstat_error *err);

#endif /* IMGSTAT_HIST_PLOT_H */
