/*
 * The libraries loaded only when a run needs them (dlopen): the decoders of
 * the optional formats (libtiff, libwebp, cfitsio, giflib), libarchive and
 * MPI, so that a run over PNG or JPEG files never maps them
 * (docs/benchmarks.md, "Start-up"). One row (ist_dlib) per library; the file
 * that calls it lists the symbols it calls once, as an X-macro, and names each
 * of them through the loaded table, after every #include:
 *
 *   #define TIFF_SYMBOLS(X) X(TIFFClose) X(TIFFGetField)
 *   IST_DLIB_TABLE(tiff, TIFF_SYMBOLS);
 *   #define TIFFClose IST_DLIB_FN(tiff, TIFFClose)
 *   static ist_dlib tiff_dlib = IST_DLIB_ROW(tiff, "TIFF", "libtiff", ...);
 *
 * and calls ist_dlib_need(&tiff_dlib, err) before the first call (the
 * decoders' rows in load.c name theirs). A function of a header that is a
 * static inline wrapper (libwebp's WebPGetFeatures) is defined as the call
 * it makes.
 */
#ifndef IMGSTAT_DLIB_H
#define IMGSTAT_DLIB_H

#include "imgstat/imgstat.h"

#include <pthread.h>
#include <stddef.h>

typedef struct ist_dlib {
  const char *needs;   /* what needs it, for the message: "FITS", "MPI" */
  const char *library; /* its project's name: "cfitsio" */
  /* the files tried in order, NULL-terminated: the soname the build linked
   * against, then its path on the build machine */
  const char *const *files;
  const char *const *symbols; /* the symbols' names, in slots' order */
  void **slots;               /* filled by a successful load */
  size_t count;
  int global; /* RTLD_GLOBAL (MPI's plugins resolve against it) */
  /* the one load: 0 not tried, 1 loaded, -1 failed (error says why) */
  pthread_mutex_t lock;
  int state;
  char error[IMGSTAT_ERROR_MAX];
} ist_dlib;

/* The slots' indices, the slots and the names of a table of symbols
 * (LIST(X) calls X(name) for each). */
#define IST_DLIB_INDEX(name) ist_dlib_i_##name,
#define IST_DLIB_NAME(name) #name,
#define IST_DLIB_TABLE(tab, LIST)                                              \
  enum { LIST(IST_DLIB_INDEX) tab##_dlib_count };                              \
  static void *tab##_dlib_slots[tab##_dlib_count];                             \
  static const char *const tab##_dlib_names[] = {LIST(IST_DLIB_NAME)}
/* The loaded function `name` of table tab (an object: *IST_DLIB_FN), with
 * the type its header declares. */
#define IST_DLIB_FN(tab, name)                                                 \
  ((__typeof__(&name))tab##_dlib_slots[ist_dlib_i_##name])
/* A row over table tab; files is a NULL-terminated list. */
#define IST_DLIB_ROW(tab, needs, library, files, global)                       \
  {                                                                            \
    needs, library, files, tab##_dlib_names, tab##_dlib_slots,                 \
        tab##_dlib_count, global, PTHREAD_MUTEX_INITIALIZER, 0, ""             \
  }

/* Loads lib once (every later call answers as the first did): IMGSTAT_OK,
 * or IMGSTAT_ERR_UNSUPPORTED with "<needs> needs <soname>, which could not
 * be loaded: <why>" (the caller's error names the input). The environment
 * variable IMGSTAT_DLOPEN_DISABLE, a comma-separated list of library names
 * ("cfitsio,libtiff"), makes those loads fail: the tests of a missing
 * library. */
imgstat_status ist_dlib_need(ist_dlib *lib, imgstat_error *err);

/* NULL when lib is loaded (loading it when not tried yet), else why it
 * could not be (ist_dlib_need's message, living as long as lib). */
const char *ist_dlib_why(ist_dlib *lib);

/* Appends to text[*at..size) lib's entry for --version, after sep when
 * *at > 0: "libtiff.so.6 (TIFF)", with ": NOT LOADABLE: <why>" when it
 * cannot be loaded (it is loaded now). Returns 0 when the text is full. */
int ist_dlib_describe(ist_dlib *lib, char *text, size_t size, size_t *at);

#endif
