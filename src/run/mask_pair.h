/*
 * The mask or label image of each input (internal to the library): --mask
 * FILE for every input, or --mask DIR (--labels alike), where each input's mask
 * is the file at its path below its folder argument with the same stem and any
 * extension (less a suffix: "case_0000" pairs with "case" under the suffix
 * "_0000"). The one home of that pairing, for the run (run.c), its second
 * read and normalize (normalize.c).
 *
 * A run makes one index per folder argument and shares it among its workers:
 * each folder below it is read once, the first time an input asks for it
 * (under the index's lock), its names sorted by stem; every pairing after
 * that is a binary search. */
#ifndef IMGSTAT_MASK_PAIR_H
#define IMGSTAT_MASK_PAIR_H

#include "imgstat/inputs.h"
#include "imgstat/run.h"

#include <stdint.h>

typedef struct ist_pairs ist_pairs;

/* The index of what ("mask", "labels") at where (o's mask or labels: a
 * file, or a folder paired as above, with o's mask_suffix) into *out;
 * *out is NULL when where is NULL. Nothing is read yet. */
imgstat_status ist_pairs_create(const imgstat_run_options *o, const char *where,
                                const char *what, ist_pairs **out,
                                imgstat_error *err);
void ist_pairs_destroy(ist_pairs *p);

/* The file of in (p NULL: none) into *out (a new string, free it; NULL
 * when p is NULL). Fails (IMGSTAT_ERR_IO) when the folder has no such file
 * for in, or several (the message names the folder and the name looked
 * for). Safe from several threads at once. */
imgstat_status ist_pair_path(ist_pairs *p, const imgstat_input *in, char **out,
                             imgstat_error *err);

/* Whether p pairs every input with one file (where is not a folder). */
int ist_pairs_one_file(const ist_pairs *p);

/* The folders p has read so far (each at most once). */
uint64_t ist_pairs_reads(ist_pairs *p);

#endif
