/*
 * imgstat: the record formats, one image's statistics or a dataset's as a
 * text table, JSON Lines or CSV, and the same JSON shape item by item for a
 * front end's own objects (the Python module's dicts). The command line and
 * the Python module format their records with this code, so the two agree
 * byte for byte.
 *
 * These functions write to a FILE the caller owns (a front end's stdout, a
 * memory stream) and leave the detection of write errors to the caller
 * (ferror after fflush); they never print elsewhere, exit or abort.
 *
 * Thread-safety: every function is safe to call from any thread; calls
 * writing to the same FILE from several threads interleave as stdio does,
 * so give each thread its own FILE or serialize the calls.
 */
#ifndef IMGSTAT_RECORD_H
#define IMGSTAT_RECORD_H

#include <stdio.h>

#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/norm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum imgstat_record_format {
  IMGSTAT_RECORD_TEXT,
  IMGSTAT_RECORD_JSON,
  IMGSTAT_RECORD_CSV,
  IMGSTAT_RECORD_BRIEF /* text, one line per image (--brief) */
} imgstat_record_format;

/* What the records show of the histograms (the command line's --histogram
 * and friends), and the plot a front end may draw of them. */
typedef struct imgstat_record_hist {
  int fields; /* --histogram or --percentiles given */
  int npercentiles;
  double percentiles[IMGSTAT_MAX_PERCENTILES];
  uint32_t bins;        /* display bins (JSON counts, PNG) */
  const char *png_path; /* --histogram-png, or NULL */
  int png_log;          /* --histogram-log */
  int dataset_columns;  /* CSV: the dataset record's columns follow */
  /* CSV: a column "decoder" follows (before "error"): the runs that may
   * decode JPEGs on the GPU (--jpeg-decoder gpu) */
  int decoder_column;
  /* The dataset record's --emit forms: a mask of 1 << imgstat_emit. 0: the
   * text has torchvision's Normalize line with scale_unit, as always */
  unsigned dataset_emit;
} imgstat_record_hist;

#define IMGSTAT_RECORD_MAX_WARNINGS 4

/* One image's statistics as the program reports them. */
typedef struct imgstat_record {
  const char *file; /* the path as given on the command line */
  uint32_t width;
  uint32_t height;
  int channels;
  imgstat_colour colour; /* channel names: imgstat_colour_channel_name */
  imgstat_sample sample;
  /* int16 samples (imgstat.h IMGSTAT_INT16_OFFSET): the figures, sums and
   * histogram figures below are the signed values (exact_sum holds the sum
   * as a two's complement int64); JSON "sample":"int16" after "depth", the
   * text header "16-bit signed" */
  int int16;
  const char *backend; /* what computed the figures: "cpu" or "gpu" */
  /* The input's format ("PNG", "FITS", ...; NULL: not known): the text
   * header of a FITS input says its rows are as stored. */
  const char *format;
  /* JSON: the decoder that made the pixels (IMGSTAT_DECODER_*), written
   * after backend when not NULL (the runs that may decode JPEGs on the GPU:
   * --jpeg-decoder gpu) */
  const char *decoder;
  uint32_t pages, page; /* a multi-page input (TIFF): else 0, 0 */
  int ddof;
  /* Up to IMGSTAT_INLINE_CHANNELS channels: their figures here. */
  imgstat_figures figures[IMGSTAT_INLINE_CHANNELS];
  /* The sums of squares: exact_sum_sq when figures[c].sum_is_exact (u8 /
   * u16), else sum_sq (f32: m2 + count * mean^2 of the partial). */
  uint64_t exact_sum_sq[IMGSTAT_INLINE_CHANNELS];
  double sum_sq[IMGSTAT_INLINE_CHANNELS];
  /* More channels: the result's partials and nodata counts, borrowed, each
   * channel's figures computed as it is written (the arrays above unused). */
  const imgstat_partial *wide_partial;
  const uint64_t *wide_nodata_count;
  /* The file's band descriptions (imgstat_header.band_names; NULL: none):
   * JSON "name" after "channel" in the object of each band that has one;
   * text: after the band's number in the channel column. */
  const char *band_names;
  /* Histogram figures (--histogram) added to each channel, when hist is
   * not NULL and hist->fields: the options, and one histogram and its
   * figures per channel. */
  const imgstat_record_hist *hist;
  const imgstat_histogram *histograms;
  const imgstat_hist_figures *hist_figures;
  /* int16: the signed copies histograms and hist_figures point to (the
   * counts borrowed), filled for the record's channels when it has
   * histograms; imgstat_record_from_job leaves them alone otherwise (not
   * cleared: nearly all of the record's size) */
  imgstat_histogram int16_hist[IMGSTAT_MAX_CHANNELS];
  imgstat_hist_figures int16_hist_figures[IMGSTAT_MAX_CHANNELS];
  /* CSV: the run has an error column (--errors-as-records), empty here. */
  int error_column;
  /* CSV: the run has the dataset columns (--dataset), empty here. */
  int dataset_columns;
  /* CSV: the run has the decoder column (decoder, or empty when NULL). */
  int decoder_column;
  /* What the decoder passed over in the input (docs/formats.md): JSON
   * "warnings":[...] (absent when none), a "warning: " line in the text
   * table; CSV has no column for them (stderr says them, as always). */
  int nwarnings;
  const char *warnings[IMGSTAT_RECORD_MAX_WARNINGS];
  /* Valid samples (imgstat_job_result): with has_nodata, JSON
   * "nodata_count" in each channel's object (after inf_count's place) and a
   * "nodata:" line in the text; with masked, JSON "mask_pixels" after
   * "ddof" and a "mask:" line in the text; CSV: the columns nodata_count
   * and mask_pixels (empty without them), and --brief "nodata N..." and
   * "mask P/N". The labels: CSV rows of each label after the image's
   * (columns label and mask_pixels), --brief "labels K". */
  int has_nodata;
  uint64_t nodata_count[IMGSTAT_INLINE_CHANNELS];
  int masked;
  uint64_t mask_pixels;
  /* A label image's labels (borrowed from the result): JSON "labels":[{
   * "label":L,"pixels":N,"stats":[the channels' objects]},...] after
   * "stats"; text: a table of each label after the image's. */
  int has_labels;
  uint32_t nlabels;
  const imgstat_job_label *labels;
} imgstat_record;

/* Fills rec from a job's result that succeeded (the one mapping of a result
 * to its record): file (borrowed), size, layout, backend, the figures of
 * each channel with ddof, the sums of squares, the decoder's warnings, the
 * histograms when res has them (hist is borrowed; NULL: none), and with
 * jpeg_gpu (a run that may decode JPEGs on the GPU: --jpeg-decoder gpu) the
 * decoder that made the pixels. The columns are the caller's. */
void imgstat_record_from_job(imgstat_record *rec, const char *file,
                             const imgstat_job_result *res, int ddof,
                             const imgstat_record_hist *hist, int jpeg_gpu);

/*
 * A record's JSON shape item by item, for a sink: the JSON Lines text of
 * imgstat_record_write, or a front end's own objects (the Python module builds
 * its dicts from it, with no text in between). key is NULL for the record's
 * own object and inside arrays. real() values are doubles the text writes
 * with round-trip digits (imgstat_record_format_double); uint() ones exact
 * integers; null() an undefined figure.
 */
typedef struct imgstat_record_sink {
  void *ctx;
  void (*open)(void *ctx, const char *key, int array); /* { or [ */
  void (*close)(void *ctx, int array);
  void (*uint)(void *ctx, const char *key, uint64_t v);
  void (*real)(void *ctx, const char *key, double v);
  void (*text)(void *ctx, const char *key, const char *s);
  void (*null)(void *ctx, const char *key);
} imgstat_record_sink;

/* The record (what imgstat_record_write writes as JSON) into a sink. */
void imgstat_record_emit(const imgstat_record *rec,
                         const imgstat_record_sink *sink);

/* Writes what comes before the first record: the CSV header line (with the
 * histogram columns when hist asks for them; hist may be NULL; then the
 * dataset columns when hist->dataset_columns; "decoder" when
 * hist->decoder_column; and a last column "error"
 * when error_column); nothing for the other formats. */
void imgstat_record_begin(FILE *out, imgstat_record_format format,
                          const imgstat_record_hist *hist, int error_column);

/* Writes one record. `index` counts the records written before this one (the
 * text format separates images with a blank line). */
void imgstat_record_write(FILE *out, imgstat_record_format format,
                          const imgstat_record *rec, unsigned long index);

/* Writes the dataset record (--dataset): JSON one object {"dataset": ...};
 * CSV one row per channel (backend "dataset", file empty) then one row per
 * image left out ("excluded") or flagged ("outlier") with its reason in
 * the note column; text a table, the extrema's places, the sums, the notes
 * and, with scale_unit, the Normalize(mean=[...], std=[...]) line, or with
 * hist->dataset_emit the lines "FORM: TEXT" of those forms (JSON: an object
 * "emit" of FORM: TEXT, null for a form r cannot give). hf: the
 * pooled histograms' figures per channel (NULL: none). index as for
 * imgstat_record_write; error_column: CSV rows end with an empty error column
 * (--errors-as-records). */
void imgstat_record_write_dataset(FILE *out, imgstat_record_format format,
                                  const imgstat_dataset_result *r,
                                  const imgstat_record_hist *hist,
                                  const imgstat_hist_figures *hf,
                                  unsigned long index, int error_column);

/* The dataset's constants in a framework's units and order (--emit,
 * docs/dataset.md): each a line derived from the pooled 0..1 mean m and std
 * s of a scale_unit result, each number with round-trip digits:
 *   torchvision     Normalize(mean=[m...], std=[s...])        0..1, RGB
 *   timm            mean=(m...), std=(s...)                     0..1, RGB
 *   hf              {"image_mean": [m...], "image_std": [s...],
 *                   "rescale_factor": 1/255, "do_rescale": true,
 *                   "do_normalize": true}  (preprocessor_config.json keys)
 *   mmcv            mean=[255 m...], std=[255 s...], bgr_to_rgb=True
 *   detectron2      cfg.MODEL.PIXEL_MEAN = [255 m, BGR order];
 *                   cfg.MODEL.PIXEL_STD = [255 s, BGR order]
 *   keras           Normalization(mean=[255 m...],
 *                   variance=[(255 s)^2...])  # the units, as a comment
 *   albumentations  Normalize(mean=(m...), std=(s...),
 *                   max_pixel_value=255.0)
 * 255 m is the double m times 255 (rounded once); a one-value tuple has
 * Python's trailing comma. */
typedef enum imgstat_emit {
  IMGSTAT_EMIT_TORCHVISION,
  IMGSTAT_EMIT_TIMM,
  IMGSTAT_EMIT_HF,
  IMGSTAT_EMIT_MMCV,
  IMGSTAT_EMIT_DETECTRON2,
  IMGSTAT_EMIT_KERAS,
  IMGSTAT_EMIT_ALBUMENTATIONS,
  IMGSTAT_EMIT_COUNT
} imgstat_emit;

/* The forms' names, in imgstat_emit's order. */
#define IMGSTAT_EMIT_NAMES                                                     \
  "torchvision,timm,hf,mmcv,detectron2,keras,albumentations"

/* Room for any form's line (4 channels), its NUL included. */
#define IMGSTAT_EMIT_MAX 640

/* A form's name ("" for none), and the form of a name (0: none such). */
const char *imgstat_emit_name(imgstat_emit form);
int imgstat_emit_from_name(const char *name, imgstat_emit *out);

/* The form's line (no newline) from r into buf. IMGSTAT_ERR_ARG, saying
 * why, when r cannot give it: not scale_unit (the forms are 0..1 figures
 * converted), nothing pooled, a channel without a mean or std, mmcv and
 * detectron2 on a pool that is not RGB (their BGR order), buf too small. */
imgstat_status imgstat_dataset_emit(const imgstat_dataset_result *r,
                                    imgstat_emit form, char *buf, size_t size,
                                    imgstat_error *err);

/* The figures of the dataset record's pooled histograms (the median, the
 * percentiles[0..n), entropy, skewness, kurtosis) per channel, into
 * hf[0..r->channels); channels without a histogram are zeroed. */
void imgstat_dataset_hist_figures(const imgstat_dataset_result *r,
                                  const double *percentiles, int n,
                                  imgstat_hist_figures *hf);

/* Writes the record of an input that failed (--errors-as-records): JSON
 * {"file":FILE,"error":MESSAGE}; CSV one row with the file, every other
 * column empty (the histogram ones too when hist asks for them) and the
 * message in the last column, "error"; nothing for the text format. */
void imgstat_record_write_error(FILE *out, imgstat_record_format format,
                                const char *file, const char *message,
                                const imgstat_record_hist *hist);

/* How imgstat_record_escape writes a string. */
typedef enum imgstat_escape {
  /* The inside of a JSON string: \" \\ \n \r \t \b \f, other C0 and C1
   * controls and DEL as \u00XX, bytes that are not well-formed UTF-8 as
   * \ufffd. */
  IMGSTAT_ESCAPE_JSON,
  /* For a terminal (text output, messages on stderr): \\ for a backslash,
   * \n \r \t, every other C0 control, DEL, C1 control (U+0080..U+009F, as
   * its two UTF-8 bytes) and byte that is not well-formed UTF-8 as \xHH.
   * Well-formed UTF-8 and quotes pass unchanged. Backslashes are doubled so
   * that a name holding the four characters \x1b is not shown as one
   * holding ESC. */
  IMGSTAT_ESCAPE_TEXT,
  /* TEXT with quotes doubled, for a CSV field (RFC 4180). */
  IMGSTAT_ESCAPE_CSV,
  /* TEXT with & < > " ' as character references, for HTML text and
   * attribute values (the report page, imgstat/report.h). */
  IMGSTAT_ESCAPE_HTML
} imgstat_escape;

/* Writes s escaped as style says: the one escaping of file names and
 * messages, so that no name reaches a terminal (or a JSON / CSV reader)
 * raw. */
void imgstat_record_escape(FILE *out, const char *s, imgstat_escape style);

/* Writes s as a JSON string with its quotes (IMGSTAT_ESCAPE_JSON). */
void imgstat_record_json_string(FILE *out, const char *s);

/* Formats v with the fewest of 15, 16 or 17 significant digits that strtod
 * reads back as the same double. v must be finite. buf holds >= 32 bytes. */
void imgstat_record_format_double(char *buf, size_t size, double v);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_RECORD_H */
