/*
 * The mask or label image of each input (internal to the library): which
 * file it is, and what it says. The one home of masks and label images.
 *
 * Pairing: --mask FILE for every input, or --mask DIR (--labels alike), where
 * each input's mask is the file at its path below its folder argument with the
 * same stem and any extension (less a suffix: "case_0000" pairs with "case"
 * under the suffix "_0000"); for the run (src/run/run.c, through
 * mask_pair.h), its second read and normalize (normalize.c).
 *
 * A run makes one index per folder argument and shares it among its workers:
 * each folder below it is read once, the first time an input asks for it
 * (under the index's lock), its names sorted by stem; every pairing after
 * that is a binary search. */
#ifndef IST_MASKS_H
#define IST_MASKS_H

#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"

#include <stdint.h>

typedef struct ist_pairs ist_pairs;

/* The index of what ("mask", "labels": static) at where (a file, or a
 * folder paired as above, with suffix: NULL for none) into *out; *out is
 * NULL when where is NULL. Nothing is read yet. */
imgstat_status ist_pairs_open(const char *where, const char *what,
                              const char *suffix, ist_pairs **out,
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

/* Loading, for the engine (item.c): an image's mask or label image, read
 * with lo. Each failure's message names the file (and what it is: "mask
 * PATH: ...", "labels PATH: ..."). */

/* The mask at path (of img's size when img is not NULL) as width * height
 * bytes, 1 inside (any channel of the mask image non-zero; an int16 mask by
 * its values), into *out (free it), its size into *width and *height, the
 * pixels inside into *inside. */
imgstat_status ist_mask_load(const imgstat_load_options *lo, const char *path,
                             const imgstat_image *img, uint8_t **out,
                             uint32_t *width, uint32_t *height,
                             uint64_t *inside, imgstat_error *err);

/* Whether the mask at path, width x height, is of img's size; when not,
 * the failure (IMGSTAT_ERR_ARG), its message naming the file and both
 * sizes. */
imgstat_status ist_mask_size(const char *path, uint32_t width, uint32_t height,
                             const imgstat_image *img, imgstat_error *err);

/* The pixels of a label image by label: the count labels present (non-zero),
 * by increasing value label[k], label k's pixels (y * width + x, raster
 * order) at pixels[start[k]] up to pixels[start[k + 1]]. */
typedef struct ist_label_pixels {
  uint32_t count;
  uint32_t *label;
  uint64_t *start; /* count + 1 of them */
  uint32_t *pixels;
} ist_label_pixels;

/* The label image at path for img (8- or 16-bit, one channel, img's size:
 * else it fails, IMGSTAT_ERR_ARG) into *out (ist_label_pixels_free), its
 * pixels inside mask (width * height bytes, 1 inside) when not NULL. */
imgstat_status ist_labels_load(const imgstat_load_options *lo, const char *path,
                               const imgstat_image *img, const uint8_t *mask,
                               ist_label_pixels *out, imgstat_error *err);
void ist_label_pixels_free(ist_label_pixels *l);

#endif
