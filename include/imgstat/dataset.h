/*
 * imgstat: statistics of a dataset (a folder of images) as one record.
 *
 * A dataset accumulator gathers, image by image, what the per-image run
 * already computed (the channels' partials, and optionally their
 * histograms) and gives at the end the figures pooled over every sample of
 * every image, the images left out and why, and the outliers. It adds no
 * pass over the pixels but one: --as gray of a colour image converts its
 * pixels (imgstat_dataset_gray), since a luma's sum of squares does not
 * follow from the colour channels' partials.
 *
 * Order and grouping never change a bit of the result: images are added
 * with their ordinal (their place in the sorted input list), every sum is
 * exact (imgstat_pool.h), "the first image" means the smallest ordinal,
 * and the per-image summaries are sorted by ordinal before the outlier
 * rule runs. So workers, devices or MPI ranks may each accumulate a share
 * of the images and merge their accumulators (imgstat_dataset_merge, or
 * through imgstat_dataset_serialize / _deserialize between processes), in
 * any grouping: imgstat_dataset_finish gives the same result as one
 * accumulator that saw every image.
 *
 * Pooling rules (docs/dataset.md):
 *  - Layout: with --as keep (IMGSTAT_AS_KEEP) the layout and the depth
 *    most images have define the pool (ties to more channels, then to the
 *    higher depth; with scale unit the layout most images have, every
 *    depth): counted at the end, so no image's position and no merge order
 *    decides; images of another layout or depth are left out and listed
 *    with the reason. --as rgb / rgba / gray
 *    convert: gray -> RGB replicates Y (its partial, three times), RGBA ->
 *    RGB drops alpha, Y / RGB -> RGBA add an opaque alpha (255, 65535 or
 *    1.0), RGB(A) -> gray is Rec. 601 luma: integer images
 *    (19595 R + 38470 G + 7471 B + 32768) >> 16 (as Pillow's convert("L")),
 *    float images 0.299 R + 0.587 G + 0.114 B in double rounded to float;
 *    a gray alpha (YA) is dropped for rgb and gray.
 *  - Scale unit: every sample divided by 255 (8-bit), 65535 (16-bit) or
 *    kept (float), so that depths pool together. The sums stay exact per
 *    depth (one imgstat_pool each); the depths are combined once, at the
 *    end, in long double, and rounded to double.
 * The library never prints, exits or aborts.
 */
#ifndef IMGSTAT_DATASET_H
#define IMGSTAT_DATASET_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"
#include "imgstat/norm.h"
#include "imgstat/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --as: the layout images are converted to before pooling. */
typedef enum imgstat_dataset_as {
  IMGSTAT_AS_KEEP = 0, /* no conversion: the most images' layout pools */
  IMGSTAT_AS_GRAY,
  IMGSTAT_AS_RGB,
  IMGSTAT_AS_RGBA
} imgstat_dataset_as;

/* "keep", "gray", "rgb", "rgba"; and back (returns 0 for another word). */
const char *imgstat_dataset_as_name(imgstat_dataset_as as);
int imgstat_dataset_as_from_name(const char *name, imgstat_dataset_as *out);

/* The --as of a pool or a normalize run: as when given, else rgb with
 * --scale unit (torchvision's ToTensor after its default loader, Pillow's
 * convert("RGB")) and keep without. One rule for imgstat --dataset, imgstat
 * normalize and the Python front ends. */
imgstat_dataset_as
imgstat_dataset_as_default(int as_given, imgstat_dataset_as as, int scale_unit);

/* The default robust z-score threshold of the outlier rule. */
#define IMGSTAT_DATASET_OUTLIER_Z 5.0
/* Pooled images needed before the z-score rule applies. */
#define IMGSTAT_DATASET_OUTLIER_MIN_IMAGES 5

typedef struct imgstat_dataset_options {
  imgstat_dataset_as as;
  int scale_unit;   /* --scale unit */
  double outlier_z; /* robust z threshold; 0: IMGSTAT_DATASET_OUTLIER_Z */
  /* Pooled histograms (--histogram): the images' histograms are added.
   * Float images need the common range: have_range with [lo, hi] and
   * float_bins (0: IMGSTAT_FLOAT_BINS_DEFAULT); without it float images
   * get no pooled histogram (the result says so). */
  int histograms;
  int have_range;
  double lo, hi;
  uint32_t float_bins;
} imgstat_dataset_options;

typedef struct imgstat_dataset imgstat_dataset;

/* A new, empty accumulator with a copy of opts (NULL: defaults). */
imgstat_status imgstat_dataset_create(const imgstat_dataset_options *opts,
                                      imgstat_dataset **out,
                                      imgstat_error *err);
void imgstat_dataset_destroy(imgstat_dataset *d);

/* The bytes the accumulator holds for its images one by one (what the
 * outliers and the notes need of each: its size, layout, depth, a float
 * mean and std per channel, its name front-coded against the one before):
 * about 40 for an RGB image. The pools and histograms are apart (their
 * size does not grow with the images). */
size_t imgstat_dataset_footprint(const imgstat_dataset *d);

/* The layout images of `channels` channels are pooled as under opts->as
 * (1 Y, 3 RGB, 4 RGBA; a YA image under keep stays 2). */
int imgstat_dataset_pooled_channels(const imgstat_dataset_options *opts,
                                    int channels);

/* Whether an image of that many channels needs imgstat_dataset_gray (its
 * pixels) before it can be added: --as gray of an RGB or RGBA image. */
int imgstat_dataset_needs_gray(const imgstat_dataset_options *opts,
                               int channels);

/* The Rec. 601 luma of an RGB or RGBA image (rules above) as a new dense
 * one-channel image of the same sample type; free it with
 * imgstat_image_free. IMGSTAT_ERR_ARG for another layout (CMYK, Lab). */
imgstat_status imgstat_dataset_gray(const imgstat_image *img,
                                    imgstat_image *gray, imgstat_error *err);

/* The pixels of img in the layout `as` gives it (the pooling's rule, for
 * normalize --as): keep and views of img's planes (rgb of gray: its plane
 * three times; alpha dropped: the colour planes) borrow img's planes, so
 * img must outlive *out; gray of RGB(A) is imgstat_dataset_gray; an alpha
 * added is opaque (255, 65535, 1.0), a gray+alpha image's alpha kept as
 * RGBA's. Free *out with imgstat_image_free. A CMYK or Lab image is
 * refused (IMGSTAT_ERR_UNSUPPORTED): it converts to no layout. */
imgstat_status imgstat_dataset_convert(const imgstat_image *img,
                                       imgstat_dataset_as as,
                                       imgstat_image *out, imgstat_error *err);

/* One label of an image's label image: the statistics of its pixels (as
 * the image's own partials and histograms, below). */
typedef struct imgstat_dataset_label_image {
  uint32_t label;
  const imgstat_partial *partial;
  const imgstat_histogram *hist; /* NULL: none */
} imgstat_dataset_label_image;

/* What one image brings. */
typedef struct imgstat_dataset_image {
  const char *name; /* copied */
  uint32_t width, height;
  int channels; /* the image's own layout */
  imgstat_sample sample;
  /* The partials of the image's channels (0..channels-1), raster indices;
   * for an image that needs the gray conversion: the partial of the gray
   * plane (one). */
  const imgstat_partial *partial;
  /* Optional (NULL): histograms of the same channels (float: over the
   * options' common range and bins). */
  const imgstat_histogram *hist;
  /* Its colour model (imgstat.h): a CMYK or Lab image is refused
   * (IMGSTAT_ERR_UNSUPPORTED): it converts to no pool layout. */
  imgstat_colour colour;
  /* Optional: the labels of its label image (nlabels of them, distinct),
   * each pooled per label over the dataset (imgstat_dataset_result's
   * labels) as the image's own figures are. */
  uint32_t nlabels;
  const imgstat_dataset_label_image *labels;
  /* sample IMGSTAT_U16 holding int16 samples offset by IMGSTAT_INT16_OFFSET
   * (imgstat.h): pooled apart from unsigned 16-bit images (a depth of its
   * own), as they are (refused with --as other than keep or scale=unit:
   * they convert to no other layout and have no 0..1 unit) */
  int int16;
} imgstat_dataset_image;

/* Adds one image at its ordinal (each ordinal once), of 1 to
 * IMGSTAT_MAX_CHANNELS channels: d makes the exact pools and histograms of
 * a pooled layout and depth when its first image comes (a layout of more
 * than IMGSTAT_POOL_MAX_CHANNELS channels in several pools), so that it
 * holds only those of the layouts seen. IMGSTAT_ERR_ARG for a bad image
 * description; IMGSTAT_ERR_LIMIT when a count would overflow;
 * IMGSTAT_ERR_NOMEM. On failure d's figures are unchanged (the room made
 * for the image's layout may stay, empty). */
imgstat_status imgstat_dataset_add(imgstat_dataset *d, uint64_t ordinal,
                                   const imgstat_dataset_image *im,
                                   imgstat_error *err);

/* The options d was created with. */
const imgstat_dataset_options *
imgstat_dataset_options_of(const imgstat_dataset *d);

/* Counts an input that failed (it is in no pool). */
void imgstat_dataset_add_failed(imgstat_dataset *d, uint64_t ordinal);

/* Merges b into a (same options, else IMGSTAT_ERR_ARG); b is unchanged. */
imgstat_status imgstat_dataset_merge(imgstat_dataset *a,
                                     const imgstat_dataset *b,
                                     imgstat_error *err);

/* The serialized form (little-endian, versioned, checksummed): *buf is a
 * new malloc'd buffer of *size bytes (free it). */
imgstat_status imgstat_dataset_serialize(const imgstat_dataset *d, void **buf,
                                         size_t *size, imgstat_error *err);
/* A new accumulator from a serialized form; IMGSTAT_ERR_FORMAT when it is
 * not one. */
imgstat_status imgstat_dataset_deserialize(const void *buf, size_t size,
                                           imgstat_dataset **out,
                                           imgstat_error *err);

/* ---- the result ------------------------------------------------------------
 */

/* Ranks per channel whose exact values a float pool keeps: the median,
 * the percentiles of a record and clip's two. */
#define IMGSTAT_DATASET_EXACT_MAX (IMGSTAT_MAX_PERCENTILES + 3)

/* Where an extremum was first seen. */
typedef struct imgstat_dataset_where {
  const char *file; /* the image's name (owned by the result) */
  uint32_t x, y;
} imgstat_dataset_where;

typedef struct imgstat_dataset_channel {
  uint64_t count; /* samples (finite ones for float) */
  uint64_t nan_count, inf_count;
  int has_values;
  double min, max; /* scaled with scale_unit */
  imgstat_dataset_where min_at, max_at;
  /* Sums: exact (decimal text of a 128-bit integer) for integer samples
   * without scale_unit; else the double nearest to the long double
   * combination (float: sum_sq = count * (var + mean^2)). */
  int sums_exact;
  char sum_text[IMGSTAT_U128_TEXT];
  char sum_sq_text[IMGSTAT_U128_TEXT];
  double sum, sum_sq;
  double mean;
  int has_std;
  double std;
  /* Pooled histogram (options' histograms): its figures; percentile values
   * in the pool's units (scaled with scale_unit). */
  int has_histogram;
  imgstat_histogram hist; /* owned; 16-bit bins for mixed 8/16 units */
  imgstat_hist_figures hist_figures;
  /* Float pools: the exact values of the ranks the second read found
   * (imgstat_dataset_float_exact): the sample at rank exact_rank[i] of the
   * channel's finite samples in ascending order is exact_value[i]. A rank
   * not among them is only known within its bin (histogram_note says
   * why). See imgstat_dataset_channel_percentile. */
  int nexact;
  uint64_t exact_rank[IMGSTAT_DATASET_EXACT_MAX];
  double exact_value[IMGSTAT_DATASET_EXACT_MAX];
} imgstat_dataset_channel;

/* Percentile p (0..100) of a channel's pooled histogram by the rank rule
 * (docs/normalize.md), in the histogram's units: the exact sample value
 * when the channel has it for p's rank (float pools after
 * imgstat_dataset_float_exact; integer histograms always), else the
 * bin-interpolated value. Returns 0 when the channel has no histogram or
 * no sample. */
int imgstat_dataset_channel_percentile(const imgstat_dataset_channel *ch,
                                       double p, double *value);

/* What a note says, one bit each (a note may say several): the layout or
 * the depth differs (an image left out: from the pool's; an outlier: from
 * most images'), the size differs from most images', a constant image, a
 * channel's mean or std far from the dataset's (robust z). */
enum {
  IMGSTAT_DATASET_NOTE_LAYOUT = 1,
  IMGSTAT_DATASET_NOTE_DEPTH = 2,
  IMGSTAT_DATASET_NOTE_SIZE = 4,
  IMGSTAT_DATASET_NOTE_CONSTANT = 8,
  IMGSTAT_DATASET_NOTE_Z = 16
};

/* An image left out of the pool, or flagged as an outlier. */
typedef struct imgstat_dataset_note {
  const char *file;
  uint64_t ordinal;
  char reason[160]; /* several reasons are joined with "; " */
  unsigned kinds;   /* IMGSTAT_DATASET_NOTE_* bits of the reasons */
} imgstat_dataset_note;

typedef struct imgstat_dataset_result imgstat_dataset_result;

/* One label's pool: the figures of its pixels over every image that has
 * it (pool->pooled: those images), as the dataset's own. */
typedef struct imgstat_dataset_label {
  uint32_t label;
  imgstat_dataset_result *pool;
} imgstat_dataset_label;

struct imgstat_dataset_result {
  uint64_t images; /* images read (pooled + excluded) */
  uint64_t pooled; /* images in the pool */
  uint64_t failed; /* inputs that failed */
  int channels;    /* the pool's layout (0: nothing pooled) */
  /* bit mask of the depths pooled: 1 8-bit, 2 16, 4 32, 8 int16 (16-bit
   * signed: its figures, sums and percentiles are the signed values) */
  int depths;
  uint64_t pooled_depth[4]; /* images pooled of each depth: 8, 16, 32, int16 */
  /* Images pooled in another layout than their own (--as rgb / rgba /
   * gray) and a bit mask of their own layouts (1 << channels). */
  uint64_t converted;
  int converted_from;
  int scale_unit;
  imgstat_dataset_as as;
  int ddof;
  /* channels entries (1 to IMGSTAT_MAX_CHANNELS; NULL when nothing is
   * pooled), owned */
  imgstat_dataset_channel *ch;
  /* Pooled histograms asked for but not made (e.g. float without a range,
   * float and integer mixed), or float percentiles left within one bin
   * (no second read: an input read only once, MPI, too many samples in
   * their bins): why, else "". */
  char histogram_note[160];
  double hist_scale; /* percentile unit: multiply the bin value by it */
  size_t nexcluded;
  imgstat_dataset_note *excluded;
  size_t noutliers;
  imgstat_dataset_note *outliers;
  double outlier_z;
  char **names; /* owned copies the notes point into */
  size_t nnames;
  /* Why the pool has its layout (and depth): the images read counted by
   * the layout they pool in (1..4 channels: Y, YA, RGB, RGBA) and, without
   * scale_unit, by depth (0: 8-bit, 1: 16, 2: 32; with scale_unit every
   * count is in [l][0]); layout_tie: the largest count was shared and the
   * tie rule (more channels, then more bits) chose. layout_count has
   * nlayout_count rows (pooled channels 0..nlayout_count - 1; row 0 is
   * unused), owned. */
  uint64_t (*layout_count)[4];
  int nlayout_count;
  int layout_tie;
  /* A run over a sample of the inputs (imgstat_run_options.sample): the
   * sample asked for (sample > 0), the inputs it was drawn from (sample_of:
   * the list's inputs but error items) and the seed; 0 when the run read
   * every input. */
  uint64_t sample, sample_of, sample_seed;
  /* The labels pooled (images with label images), by increasing label;
   * each one's figures pooled over the images that have it. */
  size_t nlabels;
  imgstat_dataset_label *labels;
};

/* The pooled figures (ddof 0 or 1), the images left out and the outliers.
 * res is overwritten; free it with imgstat_dataset_result_free. */
imgstat_status imgstat_dataset_finish(const imgstat_dataset *d, int ddof,
                                      imgstat_dataset_result *res,
                                      imgstat_error *err);
void imgstat_dataset_result_free(imgstat_dataset_result *res);

/* ---- exact float percentiles ----------------------------------------------
 */

/* The ranks of a float pool whose exact values a second read of its
 * images finds (src/run/dataset_pass.c, imgstat_dataset_float_exact): per
 * pooled channel, the ranks of the percentiles wanted (by the rank rule),
 * the bins of the pooled histogram that hold them, and how many samples
 * those bins hold. */
typedef struct imgstat_dataset_exact_want {
  int n; /* ranks wanted */
  uint64_t rank[IMGSTAT_DATASET_EXACT_MAX];
  uint32_t bin[IMGSTAT_DATASET_EXACT_MAX];
  uint64_t before[IMGSTAT_DATASET_EXACT_MAX]; /* samples in earlier bins */
  int nbins;                                  /* the distinct bins, ascending */
  uint32_t bins[IMGSTAT_DATASET_EXACT_MAX];
  uint64_t bin_count[IMGSTAT_DATASET_EXACT_MAX];
  uint64_t samples; /* in those bins */
} imgstat_dataset_exact_want;

/* What a second read needs of a finished result r: for each pooled
 * channel (want holds r->channels entries) the ranks
 * of the median and of percentiles p[0..np) (the first
 * IMGSTAT_DATASET_EXACT_MAX - 1 of them). Returns 0 when r has no float pooled
 * histogram (nothing to refine: integer histograms are exact); the histograms'
 * range and bins are r->ch[c].hist's. */
int imgstat_dataset_exact_plan(const imgstat_dataset_result *r, const double *p,
                               int np, imgstat_dataset_exact_want *want);

/* Records in d the exact value of rank `rank` of pooled channel c (found
 * by a second read), or a note saying why a float pool's percentiles stay
 * within one bin (the result's histogram_note, when no other note is
 * there). imgstat_dataset_finish copies them into the result. */
imgstat_status imgstat_dataset_set_exact(imgstat_dataset *d, int c,
                                         uint64_t rank, double value,
                                         imgstat_error *err);
void imgstat_dataset_set_exact_note(imgstat_dataset *d, const char *note);

/* ---- the one plan of a pooled dataset ------------------------------------
 */

/* The one plan for every image of a pooled dataset: the measurements of
 * opts->mode (minmax: the pooled min and max; clip: the pooled histograms'
 * percentiles; zscore: the pooled mean and std, ddof 0) from a result
 * (finished with ddof 0), linked over the colour channels with
 * opts->linked, for imgstat_norm_options.measured. *unit is 1 when they
 * are in 0..1 units (a --scale unit pool over several depths: give the
 * options scale_unit), 0 when in the images' own units (a --scale unit
 * pool of one integer depth is taken back to it: its extrema and
 * percentiles are integers there again). IMGSTAT_ERR_ARG when the result
 * cannot give them (no pooled histogram for clip: the reason). */
imgstat_status imgstat_dataset_norm_measure(const imgstat_dataset_result *r,
                                            const imgstat_norm_options *opts,
                                            imgstat_norm_measure *m, int *unit,
                                            imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_DATASET_H */
