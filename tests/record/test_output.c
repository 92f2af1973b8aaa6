/*
 * The program's output formats (src/output.c): JSON string escaping, the
 * shortest round-trip doubles, null for figures that do not exist, CSV
 * quoting, the text table, the --verify comparison, and the command line's
 * number parser (programs/imgstat/cli_util.c). Expected texts are
 * written out by hand here.
 */
#include "cli_util.h"
#include "imgstat/record.h"
#include "record_parts.h"
#include "test_util.h"
#include "verify.h"

#include <CUnit/Basic.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs fn on a memory stream and returns what it wrote (static buffer). */
static char written[8192];

static FILE *mem_open(void) { return fmemopen(written, sizeof written, "w"); }

static void mem_close(FILE *f) {
  CU_ASSERT_FALSE(ferror(f));
  fclose(f); /* fmemopen adds the terminating NUL */
}

static const char *json_of(const char *s) {
  FILE *f = mem_open();
  imgstat_record_json_string(f, s);
  mem_close(f);
  return written;
}

static void test_json_string(void) {
  CU_ASSERT_STRING_EQUAL(json_of("plain.png"), "\"plain.png\"");
  CU_ASSERT_STRING_EQUAL(json_of("a\"b\\c"), "\"a\\\"b\\\\c\"");
  CU_ASSERT_STRING_EQUAL(json_of("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  CU_ASSERT_STRING_EQUAL(json_of("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
  /* Well-formed UTF-8 passes unchanged: 2, 3 and 4 byte sequences. */
  CU_ASSERT_STRING_EQUAL(json_of("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
                         "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  /* Each byte that is not part of a well-formed sequence: U+FFFD. */
  CU_ASSERT_STRING_EQUAL(json_of("a\xff"
                                 "b"),
                         "\"a\\ufffdb\"");
  CU_ASSERT_STRING_EQUAL(json_of("\xc0\xaf"),
                         "\"\\ufffd\\ufffd\""); /* overlong */
  CU_ASSERT_STRING_EQUAL(json_of("\xed\xa0\x80"),
                         "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
  CU_ASSERT_STRING_EQUAL(json_of("\xe2\x82"), "\"\\ufffd\\ufffd\""); /* cut */
  CU_ASSERT_STRING_EQUAL(json_of("\xf4\x90\x80\x80"),
                         "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
}

static const char *escaped(const char *s, imgstat_escape style) {
  FILE *f = mem_open();
  imgstat_record_escape(f, s, style);
  mem_close(f);
  return written;
}

/* Names and messages for a terminal: control characters visible, never
 * raw. */
static void test_text_escape(void) {
  const imgstat_escape T = IMGSTAT_ESCAPE_TEXT;
  CU_ASSERT_STRING_EQUAL(escaped("plain name.png", T), "plain name.png");
  /* ESC ] 0 ; ... BEL retitles a terminal */
  CU_ASSERT_STRING_EQUAL(escaped("a\x1b]0;pwned\x07.png", T),
                         "a\\x1b]0;pwned\\x07.png");
  CU_ASSERT_STRING_EQUAL(escaped("\n\t\r\b\f\x01\x7f", T),
                         "\\n\\t\\r\\x08\\x0c\\x01\\x7f");
  /* a backslash is doubled: the name "\x1b" (4 characters) differs from
   * ESC */
  CU_ASSERT_STRING_EQUAL(escaped("\\x1b", T), "\\\\x1b");
  CU_ASSERT_STRING_EQUAL(escaped("q\"uote'", T), "q\"uote'");
  /* UTF-8 passes; C1 controls (CSI is U+009B) and bytes that are not UTF-8
   * are shown as bytes */
  CU_ASSERT_STRING_EQUAL(escaped("\xc3\xa9t\xc3\xa9", T), "\xc3\xa9t\xc3\xa9");
  CU_ASSERT_STRING_EQUAL(escaped("\xc2\x9b"
                                 "31m",
                                 T),
                         "\\xc2\\x9b31m");
  CU_ASSERT_STRING_EQUAL(escaped("\x9b"
                                 "31m\xff",
                                 T),
                         "\\x9b31m\\xff");
  /* CSV: the same, and quotes doubled */
  CU_ASSERT_STRING_EQUAL(escaped("a\"b\nc", IMGSTAT_ESCAPE_CSV), "a\"\"b\\nc");
  /* JSON: C1 controls escaped too */
  CU_ASSERT_STRING_EQUAL(json_of("\xc2\x9b\xc2\x80\xc2\xa0"),
                         "\"\\u009b\\u0080\xc2\xa0\"");
}

/* Significant digits of a %g-style number. */
static int significant_digits(const char *s) {
  int n = 0, leading = 1;
  for (; *s && *s != 'e' && *s != 'E'; s++) {
    if (*s < '0' || *s > '9')
      continue;
    if (*s == '0' && leading)
      continue;
    leading = 0;
    n++;
  }
  return n;
}

static void test_shortest_double(void) {
  char buf[64];
  imgstat_record_format_double(buf, sizeof buf, 0.1);
  CU_ASSERT_STRING_EQUAL(buf, "0.1");
  imgstat_record_format_double(buf, sizeof buf, 129.0);
  CU_ASSERT_STRING_EQUAL(buf, "129");
  imgstat_record_format_double(buf, sizeof buf, 1.0 / 3.0);
  CU_ASSERT_STRING_EQUAL(buf, "0.3333333333333333");
  imgstat_record_format_double(buf, sizeof buf, (double)0.1f);
  CU_ASSERT_STRING_EQUAL(buf, "0.10000000149011612");
  imgstat_record_format_double(buf, sizeof buf, 5e-324);
  CU_ASSERT_EQUAL(strtod(buf, NULL), 5e-324);

  /* Whole numbers under 10^15: their digits, as %.15g writes them (libc's),
   * from the smallest to the largest, and -0; from 10^15 on read back. */
  static const double whole[] = {1,
                                 -1,
                                 9,
                                 10,
                                 -32768,
                                 65535,
                                 4294967296.0,
                                 999999999999999.0,
                                 -999999999999999.0,
                                 1e15,
                                 -1e15,
                                 9007199254740992.0,
                                 1e300,
                                 -0.0,
                                 0.0};
  uint64_t state = 12345;
  for (size_t i = 0; i < sizeof whole / sizeof *whole + 20000; i++) {
    double v =
        i < sizeof whole / sizeof *whole
            ? whole[i]
            : (double)(int64_t)(test_rand(&state) % 2000000000000001ull) - 1e15;
    char want[64];
    snprintf(want, sizeof want, "%.15g", v);
    imgstat_record_format_double(buf, sizeof buf, v);
    if ((fabs(v) < 1e15 && strcmp(buf, want) != 0) || strtod(buf, NULL) != v ||
        (v == 0 && strcmp(buf, want) != 0)) {
      CU_FAIL("a whole number's digits");
      printf("%s for %s\n", buf, want);
      break;
    }
  }

  /* Random finite doubles read back exactly, with at most 17 digits. */
  for (int i = 0; i < 100000; i++) {
    uint64_t bits = test_rand(&state);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isfinite(v))
      continue;
    imgstat_record_format_double(buf, sizeof buf, v);
    if (strtod(buf, NULL) != v || significant_digits(buf) > 17) {
      CU_FAIL("round trip");
      break;
    }
  }
}

/* The records' integers: printf's digits (PRIu64), from 0 to the largest,
 * each power of ten and one less, and random ones. */
static void test_uint_digits(void) {
  uint64_t state = 777, p10 = 1;
  for (int i = 0; i < 20000; i++) {
    uint64_t v = i == 0   ? 0
                 : i == 1 ? UINT64_MAX
                 : i < 42 ? (i % 2 ? p10 - 1 : (p10 *= 10))
                          : test_rand(&state) >> (i % 64);
    char got[24], want[24];
    size_t n = ist_record_format_uint(got, v);
    snprintf(want, sizeof want, "%" PRIu64, v);
    if (strcmp(got, want) != 0 || n != strlen(want)) {
      CU_FAIL("digits");
      printf("%s for %s\n", got, want);
      break;
    }
  }
}

/* A record of an image's file, size, channels, sample and backend; ddof 0
 * and every figure zero. */
static imgstat_record make_record(const char *file, uint32_t width,
                                  uint32_t height, int channels,
                                  imgstat_sample sample, const char *backend) {
  imgstat_record r = {.file = file,
                      .width = width,
                      .height = height,
                      .channels = channels,
                      .sample = sample,
                      .backend = backend};
  return r;
}

/* Writes the record in the format into `written`. */
static void record_text(imgstat_record_format format, const imgstat_record *r,
                        int index) {
  FILE *f = mem_open();
  imgstat_record_write(f, format, r, index);
  mem_close(f);
}

static imgstat_record float_record(void) {
  imgstat_record r = make_record("x,\"y\".hdr", 2, 1, 1, IMGSTAT_F32, "cpu");
  r.ddof = 1;
  /* An all-NaN channel: no values, no std. */
  r.figures[0].count = 0;
  r.figures[0].nan_count = 2;
  r.figures[0].has_values = 0;
  r.figures[0].min = INFINITY;
  r.figures[0].max = -INFINITY;
  r.figures[0].mean = NAN;
  r.figures[0].std = NAN;
  return r;
}

static void test_json_nulls(void) {
  imgstat_record r = float_record();
  record_text(IMGSTAT_RECORD_JSON, &r, 0);
  CU_ASSERT_STRING_EQUAL(
      written,
      "{\"file\":\"x,\\\"y\\\".hdr\",\"width\":2,\"height\":1,\"channels\":1,"
      "\"depth\":32,\"backend\":\"cpu\",\"ddof\":1,\"stats\":[{\"channel\":"
      "\"Y\",\"count\":0,\"min\":null,\"max\":null,\"min_x\":null,\"min_y\":"
      "null,\"max_x\":null,\"max_y\":null,\"sum\":0,\"sum_sq\":0,\"mean\":"
      "null,\"std\":"
      "null,\"nan_count\":2,\"inf_count\":0}]}\n");
}

static void test_json_integers(void) {
  imgstat_record r = make_record("a.png", 3, 2, 3, IMGSTAT_U16, "gpu");
  for (int c = 0; c < 3; c++) {
    imgstat_figures *g = &r.figures[c];
    g->count = 6;
    g->has_values = 1;
    g->min = 0;
    g->max = 65535;
    g->max_x = 2;
    g->max_y = 1;
    g->sum_is_exact = 1;
    g->exact_sum = UINT64_C(18446744073709551615); /* exact, not rounded */
    g->sum = 1.8446744073709552e19;
    r.exact_sum_sq[c] = UINT64_C(18446744073709551614); /* exact */
    r.sum_sq[c] = 1.8446744073709552e19;
    g->mean = 0.5;
    g->has_std = 1;
    g->std = 0.25;
  }
  record_text(IMGSTAT_RECORD_JSON, &r, 0);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(written, "{\"channel\":\"G\",\"count\":6,\"min\":0,\"max\":65535,"
                      "\"min_x\":0,\"min_y\":0,\"max_x\":2,\"max_y\":1,\"sum\":"
                      "18446744073709551615,\"sum_sq\":18446744073709551614,"
                      "\"mean\":0.5,\"std\":0.25}"));
  CU_ASSERT_PTR_NULL(strstr(written, "nan_count"));
  CU_ASSERT_PTR_NOT_NULL(strstr(written, "\"depth\":16,\"backend\":\"gpu\""));
}

static void test_csv(void) {
  imgstat_record r = float_record();
  FILE *f = mem_open();
  imgstat_record_begin(f, IMGSTAT_RECORD_CSV, NULL, 0);
  imgstat_record_write(f, IMGSTAT_RECORD_CSV, &r, 0);
  mem_close(f);
  CU_ASSERT_STRING_EQUAL(
      written,
      "file,width,height,channels,depth,backend,ddof,channel,count,min,max,"
      "min_x,min_y,max_x,max_y,sum,sum_sq,mean,std,nan_count,inf_count,"
      "nodata_count,mask_pixels,label\n"
      "\"x,\"\"y\"\".hdr\",2,1,1,32,cpu,1,Y,0,,,,,,,0,0,,,2,0,,,\n");
}

/* --jpeg-decoder gpu: the decoder after the backend (JSON), a column before
 * the error column (CSV, the error record and the header included); none
 * when the record has no decoder. */
static void test_decoder(void) {
  imgstat_record r = float_record();
  r.decoder = "nvjpeg-hardware";
  record_text(IMGSTAT_RECORD_JSON, &r, 0);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(written, "\"backend\":\"cpu\",\"decoder\":\"nvjpeg-hardware\","
                      "\"ddof\":1"));
  r.decoder = NULL;
  record_text(IMGSTAT_RECORD_JSON, &r, 0);
  CU_ASSERT_PTR_NULL(strstr(written, "decoder"));
  imgstat_record_hist h;
  memset(&h, 0, sizeof h);
  h.decoder_column = 1;
  r.decoder = "libjpeg-turbo";
  r.decoder_column = 1;
  r.error_column = 1;
  FILE *f = mem_open();
  imgstat_record_begin(f, IMGSTAT_RECORD_CSV, &h, 1);
  imgstat_record_write(f, IMGSTAT_RECORD_CSV, &r, 0);
  imgstat_record_write_error(f, IMGSTAT_RECORD_CSV, "bad.jpg", "cut", &h);
  mem_close(f);
  CU_ASSERT_STRING_EQUAL(
      written,
      "file,width,height,channels,depth,backend,ddof,channel,count,min,max,"
      "min_x,min_y,max_x,max_y,sum,sum_sq,mean,std,nan_count,inf_count,"
      "decoder,nodata_count,mask_pixels,label,error\n"
      "\"x,\"\"y\"\".hdr\",2,1,1,32,cpu,1,Y,0,,,,,,,0,0,,,2,0,libjpeg-turbo,,,,"
      "\n"
      "bad.jpg,,,,,,,,,,,,,,,,,,,,,,,,,cut\n");
}

/* A name with control characters in every format the records have. */
static void test_names_escaped_in_records(void) {
  imgstat_record r = float_record();
  r.file = "a\x1b[2J\nb,c.hdr";
  record_text(IMGSTAT_RECORD_TEXT, &r, 0);
  CU_ASSERT_NSTRING_EQUAL(written, "a\\x1b[2J\\nb,c.hdr  2x1  Y", 24);
  CU_ASSERT_PTR_NULL(strchr(written, '\x1b'));
  record_text(IMGSTAT_RECORD_CSV, &r, 0);
  CU_ASSERT_STRING_EQUAL(
      written, "\"a\\x1b[2J\\nb,c.hdr\",2,1,1,32,cpu,1,Y,0,,,,,,,0,0,,"
               ",2,0,,,\n");
  imgstat_partial p;
  memset(&p, 0, sizeof p);
  FILE *f = mem_open();
  ist_verify_partials(f, "x\x07.png", IMGSTAT_COLOUR_DEFAULT, 1, IMGSTAT_U8, &p,
                      &p);
  mem_close(f);
  CU_ASSERT_STRING_EQUAL(written, "x\\x07.png: verify ok\n");
}

static void test_text(void) {
  imgstat_record r = float_record();
  r.file = "f.hdr";
  record_text(IMGSTAT_RECORD_TEXT, &r, 0);
  CU_ASSERT_STRING_EQUAL(
      written,
      "f.hdr  2x1  Y  32-bit float  backend=cpu\n"
      "channel   min   max   mean   std (N-1)   min at   max at   nan   inf\n"
      "Y           -     -      -           -        -        -     2     0\n");

  imgstat_record g = make_record("g.png", 4000, 3000, 1, IMGSTAT_U8, "cpu");
  g.figures[0].has_values = 1;
  g.figures[0].max = 254;
  g.figures[0].min_x = 17;
  g.figures[0].min_y = 3;
  g.figures[0].max_x = 3999;
  g.figures[0].max_y = 2999;
  g.figures[0].mean = 83.99124;
  g.figures[0].has_std = 1;
  g.figures[0].std = 39.48336;
  record_text(IMGSTAT_RECORD_TEXT, &g, 1);
  CU_ASSERT_STRING_EQUAL(
      written,
      "\ng.png  4000x3000  Y  8-bit  backend=cpu\n"
      "channel   min   max      mean   std (N)   min at      max at\n"
      "Y           0   254   83.9912   39.4834     17,3   3999,2999\n");

  /* float columns: one number format per column, whatever the magnitude
   * of each row (min and max share theirs) */
  imgstat_record h = make_record("h.pfm", 3, 1, 3, IMGSTAT_F32, "cpu");
  const double mins[3] = {0, 0.5, 2}, maxs[3] = {1, 100, 1234.5},
               means[3] = {0.25, 1, 1000}, sds[3] = {0.125, 0.001, 3};
  for (int c = 0; c < 3; c++) {
    h.figures[c].has_values = h.figures[c].has_std = 1;
    h.figures[c].min = mins[c];
    h.figures[c].max = maxs[c];
    h.figures[c].mean = means[c];
    h.figures[c].std = sds[c];
  }
  record_text(IMGSTAT_RECORD_TEXT, &h, 0);
  CU_ASSERT_STRING_EQUAL(written,
                         "h.pfm  3x1  RGB  32-bit float  backend=cpu\n"
                         "channel        min           max          mean      "
                         "std (N)   min at   max at\n"
                         "R         0.000000      1.000000      0.250000   "
                         "0.12500000      0,0      0,0\n"
                         "G         0.500000    100.000000      1.000000   "
                         "0.00100000      0,0      0,0\n"
                         "B         2.000000   1234.500000   1000.000000   "
                         "3.00000000      0,0      0,0\n");
}

/* A plausible partial of a u8 channel. */
static imgstat_partial u8_partial(void) {
  imgstat_partial p;
  memset(&p, 0, sizeof p);
  p.count = 6;
  p.min = 1;
  p.max = 200;
  p.min_index = 4;
  p.max_index = 0;
  p.sum = 321;
  p.sumsq = 45000;
  return p;
}

static const char *verify(imgstat_sample sample, const imgstat_partial *cpu,
                          const imgstat_partial *gpu, int channels, int *ok) {
  FILE *f = mem_open();
  *ok = ist_verify_partials(f, "a.png", IMGSTAT_COLOUR_DEFAULT, channels,
                            sample, cpu, gpu);
  mem_close(f);
  return written;
}

static void test_verify_integer(void) {
  imgstat_partial cpu[3], gpu[3];
  int ok;
  for (int c = 0; c < 3; c++)
    cpu[c] = gpu[c] = u8_partial();
  CU_ASSERT_STRING_EQUAL(verify(IMGSTAT_U8, cpu, gpu, 3, &ok),
                         "a.png: verify ok\n");
  CU_ASSERT_EQUAL(ok, 1);

  /* One unit off in an exact sum, and a later first maximum. */
  gpu[1].sum += 1;
  gpu[2].max_index = 5;
  CU_ASSERT_STRING_EQUAL(
      verify(IMGSTAT_U8, cpu, gpu, 3, &ok),
      "a.png: verify MISMATCH channel G field sum cpu=321 gpu=322\n"
      "a.png: verify MISMATCH channel B field max_index cpu=0 gpu=5\n");
  CU_ASSERT_EQUAL(ok, 0);

  /* Integer images: even the unused float fields must match exactly. */
  gpu[1] = cpu[1];
  gpu[2] = cpu[2];
  gpu[0].mean = 1e-300;
  verify(IMGSTAT_U8, cpu, gpu, 3, &ok);
  CU_ASSERT_EQUAL(ok, 0);
}

static void test_verify_float(void) {
  imgstat_partial cpu, gpu;
  int ok;
  memset(&cpu, 0, sizeof cpu);
  cpu.count = 1000;
  cpu.nan_count = 2;
  cpu.min = -3.5;
  cpu.max = 7.25;
  cpu.mean = 1.0;
  cpu.m2 = 5000.0;
  gpu = cpu;

  /* Identical: agreed. */
  verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok);
  CU_ASSERT_EQUAL(ok, 1);

  /* Float mean and M2 to the bit (docs/float-order.md): one unit in the
   * last place is a mismatch, as is -0.0 against 0.0. */
  gpu.mean = nextafter(1.0, 2.0);
  CU_ASSERT_STRING_EQUAL(verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok),
                         "a.png: verify MISMATCH channel Y field mean cpu=1 "
                         "gpu=1.0000000000000002\n");
  CU_ASSERT_EQUAL(ok, 0);
  gpu = cpu;
  gpu.m2 = nextafter(5000.0, 0.0);
  verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok);
  CU_ASSERT_EQUAL(ok, 0);
  gpu = cpu;
  cpu.mean = 0.0;
  gpu.mean = -0.0;
  verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok);
  CU_ASSERT_EQUAL(ok, 0);
  cpu.mean = 1.0;

  /* Counts, extremes and NaN as values: exactly. */
  gpu = cpu;
  gpu.nan_count = 3;
  verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok);
  CU_ASSERT_EQUAL(ok, 0);
  gpu = cpu;
  gpu.max = nextafter(7.25, 8);
  verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok);
  CU_ASSERT_EQUAL(ok, 0);
  gpu = cpu;
  gpu.m2 = NAN;
  CU_ASSERT_STRING_EQUAL(
      verify(IMGSTAT_F32, &cpu, &gpu, 1, &ok),
      "a.png: verify MISMATCH channel Y field m2 cpu=5000 gpu=nan\n");
  CU_ASSERT_EQUAL(ok, 0);
}

/* The one strict number parser: what is a number, what is in range. */
static void test_parse_double(void) {
  double v = -1;
  const double big = 1.7976931348623157e308;
  static const char *const numbers[] = {
      "0", "5", "-2.5", "+7", ".5", "5.", "1e2", "1E-2", "1e+2", "99.9", "-0"};
  for (size_t k = 0; k < sizeof numbers / sizeof *numbers; k++)
    CU_ASSERT_EQUAL(ist_cli_parse_double(numbers[k], -big, big, &v),
                    IMGSTAT_CLI_NUM_OK);
  CU_ASSERT_EQUAL(ist_cli_parse_double("1e2", -big, big, &v), 1);
  CU_ASSERT_EQUAL(v, 100.0);
  static const char *const not_numbers[] = {
      "",     " 5",  "5 ",  "\t5", "0x10", "0X1p3", "inf",
      "-inf", "nan", "NAN", "1e",  "1e+",  "e5",    ".",
      "-",    "+",   "1,2", "5%",  "1..2", "--1",   "1e5x"};
  for (size_t k = 0; k < sizeof not_numbers / sizeof *not_numbers; k++) {
    v = -1;
    CU_ASSERT_EQUAL(ist_cli_parse_double(not_numbers[k], -big, big, &v),
                    IMGSTAT_CLI_NUM_SYNTAX);
    CU_ASSERT_EQUAL(v, -1);
  }
  CU_ASSERT_EQUAL(ist_cli_parse_double(NULL, 0, 1, &v), IMGSTAT_CLI_NUM_SYNTAX);
  /* tiny values are numbers: a subnormal, and one that rounds to 0 */
  CU_ASSERT_EQUAL(ist_cli_parse_double("1e-308", 0, big, &v),
                  IMGSTAT_CLI_NUM_OK);
  CU_ASSERT(v > 0 && v < 2.3e-308);
  CU_ASSERT_EQUAL(ist_cli_parse_double("4.9e-324", 0, big, &v),
                  IMGSTAT_CLI_NUM_OK);
  CU_ASSERT(v > 0);
  CU_ASSERT_EQUAL(ist_cli_parse_double("1e-400", 0, big, &v),
                  IMGSTAT_CLI_NUM_OK);
  CU_ASSERT_EQUAL(v, 0.0);
  /* outside the range, or beyond the largest double: a range error */
  CU_ASSERT_EQUAL(ist_cli_parse_double("100.5", 0, 100, &v),
                  IMGSTAT_CLI_NUM_RANGE);
  CU_ASSERT_EQUAL(ist_cli_parse_double("-1e-9", 0, 100, &v),
                  IMGSTAT_CLI_NUM_RANGE);
  CU_ASSERT_EQUAL(ist_cli_parse_double("1e400", -big, big, &v),
                  IMGSTAT_CLI_NUM_RANGE);
  CU_ASSERT_EQUAL(ist_cli_parse_double("-1e400", -big, big, &v),
                  IMGSTAT_CLI_NUM_RANGE);
  /* the grammar's length inside longer text */
  CU_ASSERT_EQUAL(imgstat_number_length("12.5e3,"), 6);
  CU_ASSERT_EQUAL(imgstat_number_length("1e}"), 1);
  CU_ASSERT_EQUAL(imgstat_number_length("0x10"), 1);
  CU_ASSERT_EQUAL(imgstat_number_length("nan"), 0);
  CU_ASSERT_EQUAL(imgstat_number_length(" 1"), 0);
  /* a long number is still a number */
  char longnum[400];
  memset(longnum, '0', sizeof longnum - 2);
  longnum[sizeof longnum - 2] = '7';
  longnum[sizeof longnum - 1] = '\0';
  CU_ASSERT_EQUAL(ist_cli_parse_double(longnum, 0, 10, &v), IMGSTAT_CLI_NUM_OK);
  CU_ASSERT_EQUAL(v, 7.0);
}

static void test_parse_double_list(void) {
  double v[4];
  CU_ASSERT_EQUAL(ist_cli_parse_double_list("1,99", 0, 100, v, 4), 2);
  CU_ASSERT_EQUAL(v[0], 1.0);
  CU_ASSERT_EQUAL(v[1], 99.0);
  CU_ASSERT_EQUAL(ist_cli_parse_double_list("1e-308,.5,2.,3", 0, 100, v, 4), 4);
  CU_ASSERT(v[0] > 0 && v[0] < 1e-300);
  static const char *const bad[] = {"",      ",",    "1,",       ",1",
                                    "1,,2",  "1, 2", " 1",       "0x10",
                                    "1,inf", "1;2",  "1,2,3,4,5"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
    CU_ASSERT_EQUAL(ist_cli_parse_double_list(bad[k], 0, 100, v, 4),
                    IMGSTAT_CLI_NUM_SYNTAX);
  CU_ASSERT_EQUAL(ist_cli_parse_double_list("1,101", 0, 100, v, 4),
                  IMGSTAT_CLI_NUM_RANGE);
  CU_ASSERT_EQUAL(ist_cli_parse_double_list("1,1e999", 0, 100, v, 4),
                  IMGSTAT_CLI_NUM_RANGE);
}

static const test_case tests[] = {
    {"output", NULL},
    {"JSON string escaping", test_json_string},
    {"escaping for terminals and CSV", test_text_escape},
    {"names escaped in records", test_names_escaped_in_records},
    {"shortest round-trip doubles", test_shortest_double},
    {"integers' digits", test_uint_digits},
    {"JSON nulls for missing figures", test_json_nulls},
    {"JSON exact integers", test_json_integers},
    {"CSV quoting and empty fields", test_csv},
    {"the decoder in JSON and CSV records", test_decoder},
    {"text table", test_text},
    {"--verify: integer fields exactly", test_verify_integer},
    {"--verify: float fields to the bit", test_verify_float},
    {"strict numbers", test_parse_double},
    {"strict number lists", test_parse_double_list},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
