/*
 * imgstat: the inputs of a run (src/engine/walk.c). A list of arguments
 * (files, directories, "-" for standard input) and lists of paths
 * (--files-from) expanded, lazily, into the ordered list of inputs:
 * directories walked recursively, in the byte order of their paths; the
 * whole list when a consumer needs all of it first.
 *
 * Nothing here prints, exits or aborts: functions that can fail return an
 * imgstat_status and fill a caller-owned imgstat_error.
 */
#ifndef IMGSTAT_INPUTS_H
#define IMGSTAT_INPUTS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"

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
 *  - A path argument (or list line) naming a regular file whose name is
 *    not an image's and whose first bytes are a tar's (plain or compressed)
 *    or a zip's is an archive, read like a folder through libarchive
 *    (docs/archives.md): its members with an image's name, in the
 *    archive's order, each an item of kind IMGSTAT_INPUT_MEMBER named
 *    "ARCHIVE/MEMBER" (a leading "./" left out) with its bytes read into
 *    memory (at most max_member); its other members (.cls, .json, folders)
 *    skipped silently. Error items, in their place: a member with an
 *    image's name that leads out of the archive (absolute, a ".." part), is
 *    a link or no regular file, or is larger than max_member; a damaged
 *    archive (after the members read before the damage; a zip goes on
 *    after a damaged member); an archive with no image member; any archive
 *    in a build without libarchive. Archives met in walks are not opened.
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
  IMGSTAT_INPUT_ERROR,    /* an input that cannot be read: status, message */
  IMGSTAT_INPUT_MEMBER    /* a member of an archive, read into memory */
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
  /* Kind MEMBER: path is the archive's path, a '/' and the member's name
   * ("shards/a.tar/key.jpg"), root_len the archive's part with its '/'
   * (path + root_len is the member's name); member is its place among the
   * archive's entries, from 0; data holds its size bytes once read
   * (imgstat_inputs_next reads them; NULL before, and in a list from
   * imgstat_inputs_collect). 0 and NULL for the other kinds. */
  uint64_t member;
  const unsigned char *data;
} imgstat_input;

void imgstat_input_free(imgstat_input *item);

/* The iterator over the inputs of a run. One thread at a time. */
typedef struct imgstat_inputs imgstat_inputs;

typedef struct imgstat_inputs_options {
  int follow; /* walk symbolic links to directories met in walks */
  /* the most bytes an archive's member is read into (a member that is
   * larger, or decompresses to more, is an error item); 0:
   * IMGSTAT_DEFAULT_MAX_MEMORY */
  uint64_t max_member;
  /* threads reading the directories a walk enters next, ahead of it (the
   * items and their order are the same whatever their number; they wait
   * on the filesystem more than they compute): 0: 8; 1: none, each
   * directory read as the walk enters it; at most 64 */
  int walkers;
} imgstat_inputs_options;

/* A new, empty list of sources; opts may be NULL (the defaults). */
imgstat_status imgstat_inputs_create(const imgstat_inputs_options *opts,
                                     imgstat_inputs **out, imgstat_error *err);
void imgstat_inputs_destroy(imgstat_inputs *in);

/* Appends a path argument: a file, a directory or "-" (standard input).
 * Sources are added before the iteration starts (else IMGSTAT_ERR_ARG). */
imgstat_status imgstat_inputs_add_path(imgstat_inputs *in, const char *path,
                                       imgstat_error *err);

/* Whether path names an archive that the inputs read like a folder: a
 * regular file whose name is not an image's and whose first bytes are a tar's
 * or a zip's (the rules above). */
int imgstat_inputs_is_archive(const char *path);

/* The archives this build reads, for --version: "tar, zip (libarchive
 * 3.6.2)", or "not built in (libarchive)". */
const char *imgstat_inputs_archives(void);

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

/* Drops the next count inputs without reading an archive's members (the
 * inputs before a rank's share); stops early at the end. */
imgstat_status imgstat_inputs_skip(imgstat_inputs *in, uint64_t count,
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
  /* the most bytes its iterators read an archive's member into: the
   * collecting iterator's max_member (0, the default, after unpacking: a
   * caller with another limit sets it) */
  uint64_t max_member;
} imgstat_input_list;

/* Takes every input that in has left (the walk to its end) into *list.
 * Fails only when out of memory (the list is then empty). */
imgstat_status imgstat_inputs_collect(imgstat_inputs *in,
                                      imgstat_input_list *list,
                                      imgstat_error *err);

/* The walk taken a part at a time (the ranks of --mpi work on the inputs
 * walked so far while rank 0 walks on): appends up to max more of in's
 * inputs to list, after its items, as collect takes them (members' bytes
 * not read). *cap: the room list->items has (0 for a new, empty list; the
 * caller keeps it between calls). *done: 1 once the walk has ended. Fails
 * only when out of memory (the items taken so far stay). */
imgstat_status imgstat_inputs_collect_more(imgstat_inputs *in,
                                           imgstat_input_list *list,
                                           size_t *cap, size_t max, int *done,
                                           imgstat_error *err);

/* Frees the items and empties the list; NULL is a no-op. */
void imgstat_input_list_free(imgstat_input_list *list);

/* The first input of list that can be read only once (read_once), or NULL
 * when every one can be read again. */
const imgstat_input *
imgstat_input_list_read_once(const imgstat_input_list *list);

/* A reproducible uniform sample of n of the list's inputs (--sample N
 * --seed S): take[k] is set to 1 for each item taken, 0 for the others.
 * Error items (kind IMGSTAT_INPUT_ERROR) are always taken (they are
 * reported, never sampled away); the others, m of them (*of), are
 * sampled in list order by selection sampling (Knuth's Algorithm S): a
 * splitmix64 generator seeded with seed gives, for the i-th of them
 * (from 0), the 64-bit z_i (state += 0x9E3779B97F4A7C15, then z =
 * state; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) *
 * 0x94D049BB133111EB; z ^= z >> 31) and u_i = (z_i >> 11) * 2^-53; it is
 * taken when (double)(m - i) * u_i < (double)(n - taken so far). Exactly
 * min(n, m) are taken, every subset of that size equally likely; n >= m
 * (or n 0) takes them all. The list alone decides: the same items for any
 * number of workers, devices or ranks. */
void imgstat_input_list_sample(const imgstat_input_list *list, uint64_t n,
                               uint64_t seed, unsigned char *take,
                               uint64_t *of);

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

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_INPUTS_H */
