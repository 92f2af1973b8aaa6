/*
 * Private to png.c and its tests: the PNG decoder that inflates the whole
 * image data at once with libdeflate (png_fast.c), taking only the files on
 * which it gives libpng's samples and declining the rest, which libpng then
 * decodes (png.c).
 */
#ifndef IST_PNG_FAST_H
#define IST_PNG_FAST_H

#include "io.h"

typedef struct ist_png_fast ist_png_fast;

/* Reads src from its first byte up to the first IDAT chunk's length: the
 * layout when this decoder takes the file, else NULL (src's position is
 * then anywhere). */
ist_png_fast *ist_png_fast_open(ist_source *src);

/* The IHDR fields and the bytes of one filtered row (without its filter
 * byte) that the open found, and whether a tRNS chunk adds an alpha
 * channel (gray, RGB) or one to the palette. */
void ist_png_fast_layout(const ist_png_fast *f, uint32_t *width,
                         uint32_t *height, int *depth, int *color_type,
                         int *has_trns, size_t *file_rowbytes);

/* The bytes ist_png_fast_read holds at once besides the planes. */
uint64_t ist_png_fast_peak(const ist_png_fast *f, const ist_source *src);

/* Decodes the image into img (allocated for the layout png.c derives from
 * the open's): 1 on success; 0 when this decoder declines the file (it
 * finds anything that libpng might judge otherwise, or cannot allocate),
 * img's samples then undefined. */
int ist_png_fast_read(const ist_png_fast *f, ist_source *src,
                      imgstat_image *img);

void ist_png_fast_free(ist_png_fast *f);

#endif
