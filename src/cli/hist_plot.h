/*
 * --histogram-png: the histograms of one image drawn as a PNG
 * (src/cli/hist_plot.c). Part of the program.
 */
#ifndef IMGSTAT_HIST_PLOT_H
#define IMGSTAT_HIST_PLOT_H

#include "output.h"

/* The size of a path buffer for the PNG's name. */
#define IMGSTAT_HIST_PNG_PATH_MAX 4096

/* The PNG's path for input index (from 1) of nfiles: cfg->png_path, with
 * "-INDEX" before the extension when nfiles > 1. Returns 0 when it does not
 * fit in size bytes. */
int ist_hist_plot_path(const ist_hist_cli *cfg, int index, int nfiles,
                       char *buf, size_t size);

/* Draws hist[0..channels-1] (an image of that many channels and sample
 * type) as a PNG at the path of input index of nfiles (above), which goes
 * to path_buf: one panel per channel, stacked, each with its own axes;
 * cfg->bins display bins (at most the plot's width), counts linear or, with
 * cfg->png_log, logarithmic. Written through imgstat_image_write, with its
 * temporary in cli_util's slot. */
imgstat_status ist_hist_plot_write(const ist_hist_cli *cfg, int channels,
                                   imgstat_sample sample,
                                   const imgstat_histogram *hist, int index,
                                   int nfiles, char *path_buf, size_t path_size,
                                   imgstat_error *err);

#endif /* IMGSTAT_HIST_PLOT_H */
