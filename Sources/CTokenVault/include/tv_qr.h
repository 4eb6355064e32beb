/* QR codes through libqrencode, loaded on first use (login --device only). */
#ifndef TV_QR_H
#define TV_QR_H

/* 1 when libqrencode.so.4 can be loaded. */
int tv_qr_library_available(void);
/* Encodes `text` (8-bit mode, error correction M, the smallest version that
   fits). Returns the width in modules and sets *modules to width*width bytes,
   row by row, 1 for a dark module (free with tv_qr_free); 0 on failure, with
   *message saying why (a static string). */
int tv_qr_encode(const char *text, unsigned char **modules, const char **message);
void tv_qr_free(unsigned char *modules);

#endif
