/*
 * What the record formats' files share (internal to the library): record.c
 * (one image's record in each format), record_dataset.c (the dataset
 * record) and record_escape.c (strings and round-trip digits).
 */
#ifndef IMGSTAT_RECORD_PARTS_H
#define IMGSTAT_RECORD_PARTS_H

#include "imgstat/record.h"

#include <stdint.h>
#include <stdio.h>

/* The CSV columns of the dataset record (image rows leave them empty). */
#define IST_CSV_DATASET_COLUMNS ",images,failed,min_file,max_file,note"

/* The CSV columns of the valid samples, in every CSV after the decoder
 * column and before the error one: a channel's nodata_count (with a nodata
 * value), the pixels inside the mask (mask_pixels; a label's pixels on its
 * rows) and the label of a label's rows (--labels: one row per channel of
 * each label after the image's); empty where there is none. */
#define IST_CSV_VALID_COLUMNS ",nodata_count,mask_pixels,label"

/* The image records' CSV header line, its newline included. */
extern const char ist_record_csv_header[];

/* RFC 4180: a field holding a comma or a quote is quoted, with its quotes
 * doubled; control characters are escaped as in the text output. */
void ist_record_csv_string(FILE *out, const char *s);

/* ,TEXT or a bare comma when not defined. */
void ist_record_csv_field(FILE *out, int defined, const char *text);

/* A histogram figure's CSV column: round-trip digits, empty when not
 * defined or not finite. */
void ist_record_hist_csv_number(FILE *out, int defined, double v);

/* A channel's histogram items into a sink (record.c says the shape). */
void ist_record_emit_hist(const imgstat_record_sink *k,
                          const imgstat_record_hist *cfg,
                          const imgstat_hist_figures *f,
                          const imgstat_histogram *h, double scale, int shape);

/* The decimal digits of v into buf (21 bytes are enough), NUL-ended, as
 * printf's PRIu64 writes them, without its format parsing: their count. */
size_t ist_record_format_uint(char *buf, uint64_t v);

/* The JSON Lines sink: compact JSON text, items separated by commas. */
typedef struct ist_json_sink {
  FILE *out;
  int depth;
  int items[16]; /* items written so far at each depth */
} ist_json_sink;

imgstat_record_sink ist_record_json_sink_of(ist_json_sink *j);

/* One number format for a column of float figures (min, max, mean or std
 * of a float image): fixed, with the decimals its smallest nonzero value
 * needs for about six significant digits (at least four, at most eight),
 * or exponent form for the whole column when a value needs more or is 1e9
 * or larger. So the rows of a column line up. */
typedef struct ist_float_column {
  int exponent;
  int decimals;
} ist_float_column;

void ist_float_column_add(ist_float_column *col, double v);
void ist_float_column_format(const ist_float_column *col, char *buf,
                             size_t size, double v);

#endif
