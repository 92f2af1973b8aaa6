/*
 * imgstat: the batch pipeline's two generic pieces.
 *
 *  - Inputs: a list of command-line arguments (files, directories, "-" for
 *    standard input) and lists of paths (--files-from) expanded, lazily, into
 *    the ordered list of inputs: directories walked recursively, in the byte
 *    order of their paths.
 *  - The batch runner: an ordered pool of worker threads. Items are fed in
 * order on the caller's thread, worked on by any worker, and handed back on the
 *    caller's thread in the order they were fed, each as soon as it is next
 *    in line; the memory the items hold at once stays under a budget.
 *
 * Neither prints, exits or aborts: functions that can fail return an
 * imgstat_status and fill a caller-owned imgstat_error.
 */
#ifndef IMGSTAT_PIPELINE_H
#define IMGSTAT_PIPELINE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"
#include "imgstat/norm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inputs ---------------------------------------------------------------
 */

/*
 * The rules of the expansion:
 *  - A path argument (or a line of a list) that names a directory (a
 *    symbolic link to one included) is walked recursively, in place: the
 *    files under it come in the byte order of their whole paths (as
 *    `find DIR -type f | LC_ALL=C sort` lists them; "d/a.png" comes before
 *    "d/a/b.png" since '.' < '/'), each with its path as walked: the argument,
 *    a '/' unless it ends with one, and the names below it ("DIR/sub/x.png").
 *  - In a walk, only files whose name ends in the extension of a format
 *    imgstat reads (.png .jpg .jpeg .jpe .jfif .bmp .dib .gif .psd .hdr .pgm
 *    .ppm .pnm .tga, any case) are taken; every other entry is skipped
 *    silently. A symbolic link to a file is a file; a symbolic link to a
 *    directory is walked only with the option follow, and then a link back
 *    to a directory being walked (a loop) is an error item, never a second
 *    walk. Hidden files are not special.
 *  - Error items, in their place in the order: a directory in a walk that
 *    cannot be opened or read ("Permission denied"); an image-named entry
 *    that cannot be examined (a dangling symbolic link: "No such file or
 *    directory"; a loop of links: "Too many levels of symbolic links") or is
 *    no regular file (a FIFO, a socket, a device: "not a regular file", which
 *    a walk never opens); a path argument or list line that does not exist;
 *    a list that cannot be opened or read.
 *  - A path argument (or list line) that names anything but a directory is
 *    one input whatever its name (the decoder sniffs it), a FIFO or device
 *    included.
 *  - "-" as a path argument is one image from standard input (an item of
 *    kind IMGSTAT_INPUT_STDIN). In a list, "-" is a file named "-".
 *  - A list (--files-from) holds one path per line, or per NUL-terminated
 *    record (as `find -print0` writes); its name "-" is standard input.
 *    Empty records are skipped; bytes are taken as they are (no trimming).
 *    Lists are read as the iteration reaches them.
 */

typedef enum imgstat_input_kind {
  IMGSTAT_INPUT_FILE = 0, /* a file to open by its path */
  IMGSTAT_INPUT_STDIN,    /* one image from standard input (path "-") */
  IMGSTAT_INPUT_ERROR     /* an input that cannot be read: status, message */
} imgstat_input_kind;

/* One input. Allocated by imgstat_inputs_next; free it with
 * imgstat_input_free. */
typedef struct imgstat_input {
  imgstat_input_kind kind;
  uint64_t index;   /* its place in the list, from 0 (errors counted) */
  const char *path; /* as given or as walked */
  uint64_t size;    /* bytes, when size_known (a regular file) */
  int size_known;   /* 1 when size holds the file's size at the walk */
  /* 1 when it can be read only once: anything but a regular file or a block
   * device (a pipe: "-", /dev/stdin or /dev/fd/N fed by one; a FIFO; a
   * character device; a socket), from its type at the walk. A pass that
   * would read the inputs twice (the float range pass, a --dataset's
   * pooling pass) leaves such an input alone. */
  int read_once;
  imgstat_status status; /* IMGSTAT_ERR_*: kind ERROR; else IMGSTAT_OK */
  const char *message;   /* kind ERROR: the reason ("Permission denied"), no
                            file name; else NULL */
  /* Found in the walk of a directory argument (or list line): the length
   * of that argument's part of path, its '/' included, so that path +
   * root_len is the path below it ("sub/x.png" of "DIR/sub/x.png"); 0 for
   * a path given as it is (an argument, a list line, "-"). */
  size_t root_len;
} imgstat_input;

void imgstat_input_free(imgstat_input *item);

/* The iterator over the inputs of a run. One thread at a time. */
typedef struct imgstat_inputs imgstat_inputs;

typedef struct imgstat_inputs_options {
  int follow; /* walk symbolic links to directories met in walks */
} imgstat_inputs_options;

/* A new, empty list of sources; opts may be NULL (the defaults). */
imgstat_status imgstat_inputs_create(const imgstat_inputs_options *opts,
                                     imgstat_inputs **out, imgstat_error *err);
void imgstat_inputs_destroy(imgstat_inputs *in);

/* Appends a path argument: a file, a directory or "-" (standard input).
 * Sources are added before the iteration starts (else IMGSTAT_ERR_ARG). */
imgstat_status imgstat_inputs_add_path(imgstat_inputs *in, const char *path,
                                       imgstat_error *err);

/* Appends a list of paths (--files-from): a file's name, or "-" for standard
 * input; separator '\n' (one path per line) or '\0' (-0 / --null).
 * IMGSTAT_ERR_ARG: standard input would be read twice ("-" as a list and as
 * another list or an image), or another separator. */
imgstat_status imgstat_inputs_add_list(imgstat_inputs *in, const char *list,
                                       char separator, imgstat_error *err);

/* Leaves the directory at path (when it is one now; a link to one: its
 * target), known by its device and inode, out of every walk: a walk that
 * meets it, by any name, does not enter it (`imgstat normalize . -o out`
 * does not take out/'s files as inputs). A path argument or list line
 * naming it is still walked. */
imgstat_status imgstat_inputs_exclude_dir(imgstat_inputs *in, const char *path,
                                          imgstat_error *err);

/* The next input in order: *item is a new item, or NULL at the end. Fails
 * (IMGSTAT_ERR_NOMEM) only when out of memory; everything about the inputs
 * themselves is an item of kind IMGSTAT_INPUT_ERROR. */
imgstat_status imgstat_inputs_next(imgstat_inputs *in, imgstat_input **item,
                                   imgstat_error *err);

/* Walks ahead until max_queued items wait for imgstat_inputs_next or the
 * list ends, so that the total becomes known early (a progress line) while
 * memory stays bounded; call it again as items are taken. */
imgstat_status imgstat_inputs_prefetch(imgstat_inputs *in, size_t max_queued,
                                       imgstat_error *err);

/* How many inputs the list has: returns 1 when that is final (the whole list
 * has been walked), else 0 and *total is the number found so far (taken or
 * waiting). */
int imgstat_inputs_total(const imgstat_inputs *in, uint64_t *total);

/* ---- the whole list -------------------------------------------------------
 * The iterator walks lazily. A run in which something needs every input
 * before the first is worked on (the output checks: no output replaces any
 * input; the ranks of --mpi, which all take their shares of one list; a
 * second pass over the same inputs) walks the list once, to its end, and
 * hands that list around: lists are read and folders walked once, by one
 * owner, never again. */

typedef struct imgstat_input_list {
  imgstat_input **items; /* count items, in order (free with
                            imgstat_input_list_free) */
  size_t count;
} imgstat_input_list;

/* Takes every input that in has left (the walk to its end) into *list.
 * Fails only when out of memory (the list is then empty). */
imgstat_status imgstat_inputs_collect(imgstat_inputs *in,
                                      imgstat_input_list *list,
                                      imgstat_error *err);

/* Frees the items and empties the list; NULL is a no-op. */
void imgstat_input_list_free(imgstat_input_list *list);

/* The first input of list that can be read only once (read_once), or NULL
 * when every one can be read again. */
const imgstat_input *
imgstat_input_list_read_once(const imgstat_input_list *list);

/* A new iterator that hands out copies of list's items (their indices kept),
 * with its total known from the start. */
imgstat_status imgstat_inputs_from_list(const imgstat_input_list *list,
                                        imgstat_inputs **out,
                                        imgstat_error *err);

/* The list as bytes (*bytes malloc'ed, *size bytes), for another process
 * of the same build (the ranks of --mpi), and back. Unpacking checks every
 * length against size (IMGSTAT_ERR_ARG for damaged bytes). */
imgstat_status imgstat_input_list_pack(const imgstat_input_list *list,
                                       unsigned char **bytes, size_t *size,
                                       imgstat_error *err);
imgstat_status imgstat_input_list_unpack(const void *bytes, size_t size,
                                         imgstat_input_list *list,
                                         imgstat_error *err);

/* ---- output names ---------------------------------------------------------
 * The one rule naming the outputs of a batch written into a folder (the
 * outputs of `imgstat normalize`): an input found in the walk of a directory
 * argument keeps its path below that argument, an input given as it is
 * keeps its last name, and either gets the output format's extension in
 * place of its own:
 *   DIR/sub/x.jpg (walked from DIR) -> OUT/sub/x.png
 *   photos/y.ppm  (given as it is)  -> OUT/y.png
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

/* ---- the batch runner -----------------------------------------------------
 */

/* The budget when the configuration gives none: bytes reserved by the items
 * in flight at once (decoded images, mostly): IMGSTAT_ENGINE_BUDGET_PER_WORKER
 * for each worker, at least IMGSTAT_ENGINE_DEFAULT_BUDGET, and no more than a
 * quarter of the physical memory unless that is below the floor. */
#define IMGSTAT_ENGINE_DEFAULT_BUDGET (UINT64_C(1) << 30)
#define IMGSTAT_ENGINE_BUDGET_PER_WORKER (UINT64_C(256) << 20)
/* That default for a run of `workers` workers (0: one per core). */
uint64_t imgstat_batch_default_budget(int workers);

/* extra_per_sample of imgstat_task_decode: as many bytes as the input's
 * samples have (an output of the input's depth). */
#define IMGSTAT_TASK_EXTRA_AS_INPUT UINT32_MAX

/* The item a worker is working on, for the work callback. */
typedef struct imgstat_task imgstat_task;

/* The item's place in the order, from 0. */
uint64_t imgstat_task_index(const imgstat_task *task);

/*
 * Reserves bytes of the budget for the item, before its big allocation (a
 * decoded image, whose size its header gives); they are released when the
 * item has been delivered, or earlier by imgstat_task_release. Blocks until
 *  - every earlier item has reserved its share or finished its work
 *    (admission is in input order, so that an item holding the budget never
 *    waits for a later one: no deadlock), and
 *  - the bytes fit under the budget with everything in flight, or nothing
 *    is in flight: an item larger than the whole budget runs alone.
 * Returns 1 when granted; 0 when the run is cancelled (nothing reserved:
 * the work should give up) or when the item has reserved before (one
 * reservation per item).
 * Until an item reserves or its work returns, later items wait for their
 * turn: work that will hold nothing (e.g. an input that failed to open) may
 * reserve 0 bytes at once to let them through early. With no bound
 * (UINT64_MAX) there is no turn to wait for.
 */
int imgstat_task_reserve(imgstat_task *task, uint64_t bytes);

/*
 * Deferred results: work that hands its item to another stage (the GPU
 * stage, imgstat_stage.h) calls imgstat_task_defer before it returns; the
 * worker is then free for the next item, and the item is delivered (in its
 * place in the order) once imgstat_task_complete has been called, from any
 * thread, after the result has been written. The item keeps its slot of
 * the window and its reservation until its delivery, so both bound the
 * items waiting in the other stage. The handle is valid until
 * imgstat_task_complete, which must be called exactly once per defer, also
 * when the run is cancelled (the run waits for it). Completing before the
 * work returns is allowed. NULL task: NULL; complete(NULL): no-op.
 */
typedef struct imgstat_task_pending imgstat_task_pending;
imgstat_task_pending *imgstat_task_defer(imgstat_task *task);
void imgstat_task_complete(imgstat_task_pending *pending);

/* Gives back up to bytes of the item's reservation before its delivery
 * (e.g. when the work has freed the image and the result holds figures
 * only). */
void imgstat_task_release(imgstat_task *task, uint64_t bytes);

/* Whether the run is being cancelled: long work may poll it and give up. */
int imgstat_task_cancelled(const imgstat_task *task);

/*
 * Opens a decoder on one input for the task's work (its header read; nothing
 * reserved): standard input by /dev/stdin, a file by its path. Waiting for
 * the bytes of an input that can be read only once (a FIFO with no writer
 * yet, a pipe) ends when the run is cancelled: IMGSTAT_ERR_ARG with
 * *cancelled set to 1. An error item fails with its own status and message.
 */
imgstat_status imgstat_task_open(imgstat_task *task, const imgstat_input *in,
                                 const imgstat_load_options *load,
                                 imgstat_decoder **d, int *cancelled,
                                 imgstat_error *err);

/*
 * Decodes one input for the task's work, within the budget: reads its header
 * (imgstat_task_open), reserves the decoded size plus extra_per_sample bytes
 * for each of its samples (pixels x channels: what the work will allocate
 * beside the image, e.g. an output image) with imgstat_task_reserve, and
 * decodes
 * the pixels into *img (allocated here; free it with imgstat_image_free).
 * An input that fails before the reservation reserves 0 bytes, so that
 * later items go on. Returns IMGSTAT_OK, a failure of the input (err says
 * why), or IMGSTAT_ERR_ARG with *cancelled set to 1 when the run was
 * cancelled before the reservation (nothing decoded). *reserved receives
 * the bytes reserved (give them back with imgstat_task_release when done).
 */
imgstat_status imgstat_task_decode(imgstat_task *task, const imgstat_input *in,
                                   const imgstat_load_options *load,
                                   uint32_t extra_per_sample,
                                   imgstat_image *img, uint64_t *reserved,
                                   int *cancelled, imgstat_error *err);

typedef struct imgstat_batch_config {
  /* Worker threads: 0 is one per online core; 1 runs everything in the
   * calling thread (no thread is started). */
  int workers;
  /* Bytes that the items' reservations may hold at once; 0 is
   * the default above (IMGSTAT_ENGINE_DEFAULT_BUDGET), UINT64_MAX no bound. */
  uint64_t budget;
  /* Items fed and not yet delivered, at most (results waiting for an
   * earlier one included); 0 is 4 per worker. */
  size_t window;
  /* Bytes of one result; every result starts zeroed. */
  size_t result_size;
  /* Cancels the run when it becomes nonzero (a SIGINT handler may set it);
   * NULL: none. The runner looks at it at least every 20 ms while it
   * waits. */
  const volatile sig_atomic_t *cancel;
  /* Given to every callback. */
  void *ctx;
  /* Caller's thread: the next item in order, *item NULL at the end. A
   * failure stops the feeding; the run then returns it after the items fed
   * so far have been delivered. */
  imgstat_status (*next)(void *ctx, void **item, imgstat_error *err);
  /* Any worker: the work on one item, writing its result. */
  void (*work)(void *ctx, imgstat_task *task, void *item, void *result);
  /* Caller's thread, in input order, exactly once per item fed: ran is 1
   * when the work ran, 0 when a cancel came before it started (result is
   * then all zero). The callback owns item and what result holds; after it
   * returns, the result's memory is reused and the item's reservation
   * released. A nonzero return cancels the run (e.g. output failed). */
  int (*deliver)(void *ctx, uint64_t index, void *item, void *result, int ran);
  /* May be NULL. Called once, on whichever thread sees it first (not
   * under the runner's lock), when no work will run any more: next gave its
   * last item (or failed, or the run was cancelled) and every work started
   * has returned. Items deferred (imgstat_task_defer) may still be pending:
   * e.g. the moment to tell what completes them that no more will come. */
  void (*drained)(void *ctx);
} imgstat_batch_config;

typedef struct imgstat_batch_report {
  int workers;         /* threads that worked (1: the calling thread) */
  uint64_t fed;        /* items fed = items delivered */
  uint64_t ran;        /* items whose work ran */
  uint64_t peak_bytes; /* largest total of reservations held at once */
  int cancelled;       /* 1 when the run was cancelled (flag or deliver) */
} imgstat_batch_report;

/*
 * Runs the items that next feeds through work and hands them to deliver,
 * as the configuration says. Returns when every item fed has been delivered:
 * IMGSTAT_OK (a cancelled run too: see report->cancelled), next's failure,
 * or IMGSTAT_ERR_ARG / IMGSTAT_ERR_NOMEM before anything is fed. report may
 * be NULL. Delivery order and results never depend on the number of workers
 * (when the work's results do not).
 */
imgstat_status imgstat_batch_run(const imgstat_batch_config *cfg,
                                 imgstat_batch_report *report,
                                 imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif
