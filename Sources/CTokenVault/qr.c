/* The glue between Swift and libqrencode (login --device draws the
 * verification URL): loaded on first use through the shared loader, so no
 * other command maps it. */
#include "tv_qr.h"
#include "loader.h"
#include <qrencode.h>
#include <stdlib.h>

#define TV_QR_FUNCS(X) X(QRcode_encodeString8bit) X(QRcode_free)

TV_DL_API(tv_qr_api, TV_QR_FUNCS, "libqrencode.so.4", tv_api)

int tv_qr_library_available(void) { return tv_api() != NULL; }

int tv_qr_encode(const char *text, unsigned char **modules, const char **message) {
    const tv_qr_api *qr = tv_api();
    if (qr == NULL) {
        *message = library.error;
        return 0;
    }
    QRcode *code = qr->QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M);
    if (code == NULL) {
        *message = "the text does not fit in a QR code";
        return 0;
    }
    int width = code->width;
    unsigned char *out = malloc((size_t)width * (size_t)width);
    if (out == NULL) {
        qr->QRcode_free(code);
        *message = "out of memory";
        return 0;
    }
    for (int i = 0; i < width * width; i++) out[i] = code->data[i] & 1;
    qr->QRcode_free(code);
    *modules = out;
    return width;
}

void tv_qr_free(unsigned char *modules) { free(modules); }
