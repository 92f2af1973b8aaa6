/*
 * The mask or label image of each input (internal to the library): --mask
 * FILE for every input, or --mask DIR (--labels alike), where each input's mask
 * is the file at its path below its folder argument with the same stem and any
 * extension (less a suffix: "case_0000" pairs with "case" under the suffix
 * "_0000"). The one home of that pairing, for the run (run.c) and the dataset's
 * pooling pass (dataset_pass.c).
 */
#ifndef IMGSTAT_MASK_PAIR_H
#define IMGSTAT_MASK_PAIR_H

#include "imgstat/inputs.h"
#include "imgstat/run.h"

/* The file of what ("mask", "labels") of in at where (o's mask or
 * labels: a file, or a folder paired as above) into *out (a new string,
 * free it; NULL when where is NULL). Fails (IMGSTAT_ERR_IO) when the folder
 * has no such file for in, or several (the message names the folder and the
 * name looked for). */
imgstat_status ist_pair_path(const imgstat_run_options *o, const char *where,
                             const char *what, const imgstat_input *in,
                             char **out, imgstat_error *err);

#endif
