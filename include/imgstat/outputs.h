/*
 * imgstat: where a run's outputs go (src/engine/outputs.c): the one
 * output-naming rule, the guard "an output never replaces an input" and
 * the output plan (one file or a folder, the format, each input's path),
 * checked before any work.
 *
 * Nothing here prints, exits or aborts: functions that can fail return an
 * imgstat_status and fill a caller-owned imgstat_error.
 */
#ifndef IMGSTAT_OUTPUTS_H
#define IMGSTAT_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- output names ---------------------------------------------------------
 * The one rule naming the outputs of a batch written into a folder (the
 * outputs of `imgstat normalize`): an input found in the walk of a directory
 * argument keeps its path below that argument, an input given as it is
 * keeps its last name, a member of an archive keeps its path in the
 * archive below a folder named by the archive's stem (its name without
 * ".tar", ".tar.gz", ".zip", ...; the archive refuses members whose names
 * lead out of it), and each gets the output format's extension in place of
 * its own:
 *   DIR/sub/x.jpg (walked from DIR) -> OUT/sub/x.png
 *   photos/y.ppm  (given as it is)  -> OUT/y.png
 *   shards/a.tar/k/z.jpg (a member) -> OUT/a/k/z.png
 * The extension replaced is the last '.' of the last name and what follows,
 * unless that '.' starts the name (".hidden" keeps its name). */

/* The output path of in in the folder dir with the extension ext (".png";
 * "" keeps no extension): a new string in *path (free it). Standard input
 * has no name: IMGSTAT_ERR_ARG. */
imgstat_status imgstat_output_name(const char *dir, const imgstat_input *in,
                                   const char *ext, char **path,
                                   imgstat_error *err);

/* Creates the folders that lead to path, with their parents (mkdir -p of
 * everything before its last '/'); folders that exist are fine, another
 * thread creating the same one at once too. */
imgstat_status imgstat_output_make_parents(const char *path,
                                           imgstat_error *err);

/* ---- an output never replaces an input ------------------------------------
 * The one home of that rule, for every writer (normalize's outputs, the
 * --histogram-png plots): the guard indexes the whole input list (after
 * walks and lists) once, by identity (device and inode, for each input that
 * exists now) and by name as listed; each output path is then looked up in
 * O(log n): the same file by any spelling, through symbolic or hard links,
 * or the same name as an input that does not exist (yet). Items of kind
 * ERROR are protected too. Immutable once made: any thread may look up. */

typedef struct imgstat_output_guard imgstat_output_guard;

imgstat_status imgstat_output_guard_create(const imgstat_input_list *inputs,
                                           imgstat_output_guard **out,
                                           imgstat_error *err);
void imgstat_output_guard_destroy(imgstat_output_guard *g);

/* The first input (its place in the list the guard was made of) that path
 * would replace, or -1 for none. */
long imgstat_output_guard_find(const imgstat_output_guard *g, const char *path);

/* IMGSTAT_OK when path replaces no input; else IMGSTAT_ERR_ARG with "the
 * output 'PATH' is the input 'INPUT': refusing to overwrite an input". */
imgstat_status imgstat_output_guard_check(const imgstat_output_guard *g,
                                          const char *path, imgstat_error *err);

/* Two of the n names that are equal (bytes), if any: returns 1 with *first
 * and *second their indices (*first < *second, and *second the smallest
 * index that repeats an earlier name), else 0. NULL names are left out.
 * O(n log n). IMGSTAT_ERR_NOMEM is returned as -1. */
int imgstat_output_find_collision(char *const *names, size_t n, size_t *first,
                                  size_t *second);

/* ---- the output plan --------------------------------------------------------
 * Where a batch that writes one file per input (normalize) writes each: one
 * file, or a folder of outputs named by imgstat_output_name; in one format,
 * or by the output's sample type. Checked on the whole input list before
 * any work. */

typedef struct imgstat_output_plan {
  const char *out; /* the file or folder (borrowed) */
  int folder;      /* out is a folder */
  /* the format; IMGSTAT_FILE_AUTO: by the output's sample type (float32:
   * .npy, else PNG) */
  imgstat_file_format format;
} imgstat_output_plan;

/* Whether out names a folder: when the run may have several inputs
 * (several: more than one source, a list, or a folder), or, for one file,
 * when out is a folder, ends in '/', or has no extension and format (the
 * format given, 0 none) does not say what file to write. */
int imgstat_output_plan_folder(const char *out, int several,
                               imgstat_file_format format);

/* The extension of a format (".png", ".npy", ".pfm"; "" for AUTO). */
const char *imgstat_file_format_ext(imgstat_file_format f);

/* The format of an output of samples s. */
imgstat_file_format imgstat_output_plan_format(const imgstat_output_plan *p,
                                               imgstat_sample s);

/* The output path of in in format f (AUTO: without an extension): a new
 * string in *path (free it). Standard input in a folder: IMGSTAT_ERR_ARG. */
imgstat_status imgstat_output_plan_path(const imgstat_output_plan *p,
                                        const imgstat_input *in,
                                        imgstat_file_format f, char **path,
                                        imgstat_error *err);

/* Whether the output of in is there already (a regular file), in input's
 * format or, when that depends on the sample type, in either (PNG, .npy). */
int imgstat_output_plan_present(const imgstat_output_plan *p,
                                const imgstat_input *in);

/* Makes the output folder (and its parents) when the plan has one. */
imgstat_status imgstat_output_plan_make_folder(const imgstat_output_plan *p,
                                               imgstat_error *err);

/* What is wrong with a plan (imgstat_output_plan_check). */
typedef enum imgstat_output_problem_kind {
  IMGSTAT_OUTPUT_FINE = 0,
  /* one output file whose name says no format the plan writes: ext its
   * extension upper-cased ("JPEG" for every JPEG spelling), or "" */
  IMGSTAT_OUTPUT_UNKNOWN_FORMAT,
  IMGSTAT_OUTPUT_FOLDER_LIKE_FILE, /* a folder named like a file */
  IMGSTAT_OUTPUT_NO_NAME,          /* an input has no output name: err */
  /* inputs first and second (paths) would both write output (its name
   * without the extension, which `format` adds: AUTO ".png (or .npy)") */
  IMGSTAT_OUTPUT_COLLISION,
  IMGSTAT_OUTPUT_IS_INPUT /* an output is an input: err (the guard's) */
} imgstat_output_problem_kind;

typedef struct imgstat_output_problem {
  imgstat_output_problem_kind kind;
  char ext[16];
  char *first, *second, *output; /* COLLISION: copies (free them) */
  imgstat_file_format format;
} imgstat_output_problem;

/* Checks the plan against the whole input list: out's format, no two
 * inputs with one output (by the name without its extension, so that x.png
 * and x.npy count as one), no output naming an input in any format it may
 * take (imgstat_output_guard). IMGSTAT_ERR_ARG with *why filled (err says
 * it in words), or IMGSTAT_ERR_NOMEM. */
imgstat_status imgstat_output_plan_check(const imgstat_output_plan *p,
                                         const imgstat_input_list *list,
                                         imgstat_output_problem *why,
                                         imgstat_error *err);

/* Frees a problem's names. */
void imgstat_output_problem_clear(imgstat_output_problem *why);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_OUTPUTS_H */
