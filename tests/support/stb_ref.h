/*
 * stb_image compiled into one test program as its reference decoder: a
 * private, static copy. Define the STBI_ONLY_* of the formats the test
 * needs before including this; most of stb's functions then go unused,
 * which is not reported (reported at the end of the file otherwise).
 */
#ifndef IMGSTAT_TEST_STB_REF_H
#define IMGSTAT_TEST_STB_REF_H

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
